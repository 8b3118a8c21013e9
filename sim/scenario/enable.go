package scenario

import "github.com/oarbank/svcrun/engine"

// parseModuleSwitch reads `enable`, `disable` and `remove MODULE`: a
// configuration reload that changes one module.
func (p *parser) parseModuleSwitch(in *Input, args []string) error {
	if err := p.nargs(in, args, 1, in.Name+" MODULE"); err != nil {
		return err
	}
	in.target = args[0]
	return nil
}

// playModuleSwitch reloads the module set with the module enabled,
// disabled or removed; a removed module comes back with either of the
// first two.
func (pl *player) playModuleSwitch(in *Input) error {
	i := pl.sc.modNames[in.target]
	if in.Name == "remove" {
		pl.removed[i] = true
	} else {
		pl.enabled[i], pl.removed[i] = in.Name == "enable", false
	}
	return pl.input(in, in.Text, engine.Reload{Modules: specs(pl.mods, pl.enabled, pl.removed)})
}
