package scenario

// parseMemberExited reads `member-exited MODULE/SERVICE [killed]`: the
// daemon's master dies while its workers live on, so its container never
// empties; svcrun's watch of the container's long-lived processes tells
// (member-exited event), with killed when the master was svcrun's child
// and a signal killed it. Its ops see no daemon from then on.
func (p *parser) parseMemberExited(in *Input, args []string) error {
	const usage = "member-exited MODULE/SERVICE [killed]"
	if len(args) == 2 && args[1] == "killed" {
		in.killed = true
		args = args[:1]
	}
	if err := p.nargs(in, args, 1, usage); err != nil {
		return err
	}
	in.target = args[0]
	return nil
}

// playMemberExited ends the fake daemon's master, which posts the event.
func (pl *player) playMemberExited(in *Input) error {
	text := in.Text
	if !pl.w.Exec.Running(in.target) {
		text += " (not running: nothing happens)"
	}
	pl.record(in, text, nil)
	pl.w.Exec.MemberExit(in.target, in.killed)
	pl.w.RunFor(0)
	return pl.stopped(in)
}
