package scenario

import "github.com/oarbank/svcrun/engine"

// parseReap reads `reap`: a reap of orphaned objects now.
func (p *parser) parseReap(in *Input, args []string) error {
	if err := p.nargs(in, args, 0, "reap"); err != nil {
		return err
	}
	in.ev = engine.ReapNow{}
	return nil
}
