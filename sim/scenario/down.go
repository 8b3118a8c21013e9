package scenario

// checkWhileDown reads `down` (svcrun stops: until the `restart` that
// starts it again, at the same instant, the inputs are what happens while
// it is down: its configuration edited, by enable, disable, remove and
// reload, which its restart reads and which are never sent as a reload,
// and its daemons changed, by owner-start, owner-stop and behaviour;
// nothing it would have to answer), and checks an input that comes while
// svcrun is down.
func (p *parser) checkWhileDown(in *Input) error {
	if in.Name == "down" && p.down != nil {
		return lineError(p.file, in.Line, "down: svcrun is down already (line %d)", p.down.Line)
	}
	if in.Name == "down" {
		down := *in
		p.down = &down
		return nil
	}
	if p.down == nil {
		return nil
	}
	switch in.Name {
	case "enable", "disable", "remove", "reload", "owner-start", "owner-stop", "behaviour", "restart":
	default:
		return lineError(p.file, in.Line,
			"%s while svcrun is down (line %d): only enable, disable, remove, reload, owner-start, owner-stop and "+
				"behaviour, until restart", in.Name, p.down.Line)
	}
	if in.At != p.down.At {
		return lineError(p.file, in.Line,
			"%s: svcrun went down at %s; its restart and what happens meanwhile are at that instant", in.Name, fmtDur(p.down.At))
	}
	if in.Name == "restart" {
		p.down = nil
	}
	return nil
}

// playDown stops the world's svcrun: the module edits that follow only
// change what its restart reads.
func (pl *player) playDown(in *Input) error {
	pl.down = true
	return pl.input(in, in.Text, nil)
}
