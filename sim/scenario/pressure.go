package scenario

import "github.com/oarbank/svcrun/engine"

// parsePressure reads `pressure`: the host reports memory pressure.
func (p *parser) parsePressure(in *Input, args []string) error {
	if err := p.nargs(in, args, 0, "pressure"); err != nil {
		return err
	}
	in.ev = engine.MemoryPressure{}
	return nil
}
