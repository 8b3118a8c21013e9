package scenario

// parseOwner reads `owner-start` and `owner-stop MODULE/SERVICE`.
func (p *parser) parseOwner(in *Input, args []string) error {
	// The owner starts or stops a service by hand (a manual one): no
	// op and no event; the engine finds out by fingerprint.
	if err := p.nargs(in, args, 1, in.Name+" MODULE/SERVICE"); err != nil {
		return err
	}
	in.target = args[0]
	return nil
}

// playOwner sets the fake process running or not, behind the engine's back.
func (pl *player) playOwner(in *Input) error {
	pl.record(in, in.Text, nil)
	pl.w.Exec.SetRunning(in.target, in.Name == "owner-start")
	return nil
}
