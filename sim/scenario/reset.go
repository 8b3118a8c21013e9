package scenario

import "github.com/oarbank/svcrun/engine"

// parseReset reads `reset MODULE/SERVICE [unknown]`: svcrun reset of an
// unhealthy service. `unknown` says that no manifest of the scenario
// holds the name (svcrun reset of a typo, or of a service only a manifest
// never loaded declares), so that a journal's reset of it replays: the
// engine only notes it.
func (p *parser) parseReset(in *Input, args []string) error {
	args = p.unknownFlag(in, args)
	if err := p.nargs(in, args, 1, "reset MODULE/SERVICE [unknown]"); err != nil {
		return err
	}
	in.target = args[0]
	// A name that is no service's gives the zero target, which
	// checkInput refuses.
	t, _ := engine.ServiceTarget(args[0])
	in.ev = engine.Reset{Service: t}
	return nil
}
