package scenario

// parseCrash reads `crash MODULE/SERVICE`: the service's process dies.
func (p *parser) parseCrash(in *Input, args []string) error {
	if err := p.nargs(in, args, 1, "crash MODULE/SERVICE"); err != nil {
		return err
	}
	in.target = args[0]
	return nil
}

// playCrash kills the service's fake process, if it runs, and lets the
// engine see the exit.
func (pl *player) playCrash(in *Input) error {
	text := in.Text
	if !pl.w.Exec.Running(in.target) {
		text += " (not running: nothing happens)"
	}
	pl.record(in, text, nil)
	pl.w.Exec.Crash(in.target)
	pl.w.RunFor(0)
	return nil
}
