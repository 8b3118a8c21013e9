package scenario

import "github.com/oarbank/svcrun/engine"

// parseReset reads `reset MODULE/SERVICE`: svcrun reset of an unhealthy
// service.
func (p *parser) parseReset(in *Input, args []string) error {
	if err := p.nargs(in, args, 1, "reset MODULE/SERVICE"); err != nil {
		return err
	}
	in.target = args[0]
	// A name that is no service's gives the zero target, which
	// checkInput refuses.
	t, _ := engine.ServiceTarget(args[0])
	in.ev = engine.Reset{Service: t}
	return nil
}
