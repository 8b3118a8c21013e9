package scenario

import "github.com/oarbank/svcrun/engine"

// parseEmptied reads `emptied MODULE/SERVICE`: the service's process
// container emptied, whether its daemon crashed or was stopped. Unlike
// `crash`, the engine hears of it even when the fake daemon was not
// running: svcrun's journal records every container-emptied event, and a
// replayed journal must give each one to the engine (`unknown`: of a
// service no manifest of the scenario holds).
func (p *parser) parseEmptied(in *Input, args []string) error {
	args = p.unknownFlag(in, args)
	if err := p.nargs(in, args, 1, "emptied MODULE/SERVICE [unknown]"); err != nil {
		return err
	}
	in.target = args[0]
	return nil
}

// playEmptied ends the fake daemon, if it runs, and sends the event.
func (pl *player) playEmptied(in *Input) error {
	t, err := engine.ServiceTarget(in.target)
	if err != nil {
		return lineError(pl.sc.File, in.Line, "emptied %s: %v", in.target, err)
	}
	pl.w.Exec.SetRunning(in.target, false)
	return pl.input(in, in.Text, engine.ContainerEmptied{Service: t})
}
