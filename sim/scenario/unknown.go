package scenario

import "github.com/oarbank/svcrun/engine"

// unknownFlag takes the `unknown` after the name of a `reset` or
// `emptied`: a service no manifest of the scenario holds. svcrun's journal
// records such events (svcrun reset of a typo, the container of a service
// only a manifest never loaded declares), and a replayed journal gives each
// one to the engine, which only notes or ignores it.
func (p *parser) unknownFlag(in *Input, args []string) []string {
	if len(args) == 2 && args[1] == "unknown" {
		in.unknown = true
		return args[:1]
	}
	return args
}

// checkService checks the service an input names once every module is
// known: one of theirs, or with `unknown` a well-formed name that is none
// of theirs (so that the flag never hides a service the file has).
func (p *parser) checkService(in Input) error {
	if !in.unknown {
		return p.knownService(in.Line, in.target)
	}
	if p.sc.services[in.target] {
		return lineError(p.file, in.Line, "%s %s unknown: the modules have that service; drop `unknown`", in.Name, in.target)
	}
	if _, err := engine.ServiceTarget(in.target); err != nil {
		return lineError(p.file, in.Line, "%s %s unknown: %v", in.Name, in.target, err)
	}
	return nil
}
