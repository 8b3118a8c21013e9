package scenario

import "github.com/oarbank/svcrun/engine"

// parseReload reads `reload MODULE [enable|disable]`: a configuration
// reload with the module's next manifest (its next `module later` block),
// and with `enable` or `disable` the module so in the same reload (a
// removed module comes back with it).
func (p *parser) parseReload(in *Input, args []string) error {
	if len(args) == 2 && (args[1] == "enable" || args[1] == "disable") {
		in.switchTo, args = args[1], args[:1]
	}
	if err := p.nargs(in, args, 1, "reload MODULE [enable|disable]"); err != nil {
		return err
	}
	in.target = args[0]
	return nil
}

// checkReload checks that a reload has a manifest left to load.
func (p *parser) checkReload(in Input, m *Module) error {
	p.reloads[in.target]++
	if n := p.reloads[in.target]; n > len(m.Later) {
		return lineError(p.file, in.Line, "reload %s: reload #%d of it, but only %d `module later` block(s) for it",
			in.target, n, len(m.Later))
	}
	return nil
}

// playReload reloads the configuration with the module's next manifest;
// whether it is enabled or removed stays as it was, unless the input says
// enable or disable.
func (pl *player) playReload(in *Input) error {
	i := pl.sc.modNames[in.target]
	pl.mods[i] = pl.sc.Modules[i].Later[pl.reloads[i]]
	pl.reloads[i]++
	if in.switchTo != "" {
		pl.enabled[i], pl.removed[i] = in.switchTo == "enable", false
	}
	return pl.edit(in, engine.Reload{Modules: specs(pl.mods, pl.enabled, pl.removed)})
}
