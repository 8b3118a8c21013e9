package scenario

import "github.com/oarbank/svcrun/engine"

// parseRelease reads `release LEASE`: the holder gives its lease back.
func (p *parser) parseRelease(in *Input, args []string) error {
	if err := p.nargs(in, args, 1, "release LEASE"); err != nil {
		return err
	}
	in.ev = engine.Release{Lease: engine.LeaseID(args[0])}
	return nil
}
