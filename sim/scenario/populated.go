package scenario

import "github.com/oarbank/svcrun/engine"

// parsePopulated reads `populated MODULE/SERVICE [unknown]`: the service's
// process container holds its daemon (svcrun's container-populated event).
// A `contained` fake posts it by itself; the input is for a replayed
// journal, which gives each recorded event to the engine.
func (p *parser) parsePopulated(in *Input, args []string) error {
	args = p.unknownFlag(in, args)
	if err := p.nargs(in, args, 1, "populated MODULE/SERVICE [unknown]"); err != nil {
		return err
	}
	in.target = args[0]
	// A name that is no service's gives the zero target, which
	// checkInput refuses.
	t, _ := engine.ServiceTarget(args[0])
	in.ev = engine.ContainerPopulated{Service: t}
	return nil
}
