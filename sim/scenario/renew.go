package scenario

import "github.com/oarbank/svcrun/engine"

// parseRenew reads `renew LEASE`: the holder extends its lease's ttl.
func (p *parser) parseRenew(in *Input, args []string) error {
	if err := p.nargs(in, args, 1, "renew LEASE"); err != nil {
		return err
	}
	in.ev = engine.Renew{Lease: engine.LeaseID(args[0])}
	return nil
}
