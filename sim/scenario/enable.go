package scenario

import (
	"slices"
	"strings"

	"github.com/oarbank/svcrun/engine"
)

// parseModuleSwitch reads `enable`, `disable` and `remove MODULE`: a
// configuration reload that changes one module; and `disable-all`, every
// module disabled in one reload, as svcrun stopping with
// --stop-services-on-exit does. `why: TEXT` at the end (not for remove)
// gives the reload a reason of its own: `svcrun enable` and `svcrun
// disable` say theirs, and the engine then neither says "configuration
// reload" nor runs the probes again.
func (p *parser) parseModuleSwitch(in *Input, args []string) error {
	if i := slices.Index(args, "why:"); i >= 0 && in.Name != "remove" {
		in.why = strings.Join(args[i+1:], " ")
		args = args[:i]
		if in.why == "" {
			return lineError(p.file, in.Line, "%s: why: needs the reason after it", in.Name)
		}
	}
	if in.Name == "disable-all" {
		return p.nargs(in, args, 0, "disable-all [why: TEXT]")
	}
	usage := in.Name + " MODULE"
	if in.Name != "remove" {
		usage += " [why: TEXT]"
	}
	if err := p.nargs(in, args, 1, usage); err != nil {
		return err
	}
	in.target = args[0]
	return nil
}

// playModuleSwitch reloads the module set with the module enabled,
// disabled or removed; a removed module comes back with either of the
// first two.
func (pl *player) playModuleSwitch(in *Input) error {
	switch in.Name {
	case "disable-all":
		for i := range pl.enabled {
			pl.enabled[i] = false
		}
	case "remove":
		pl.removed[pl.sc.modNames[in.target]] = true
	default:
		i := pl.sc.modNames[in.target]
		pl.enabled[i], pl.removed[i] = in.Name == "enable", false
	}
	return pl.edit(in, engine.Reload{Modules: specs(pl.mods, pl.enabled, pl.removed), Reason: in.why})
}

// edit sends a module edit's reload, or, while svcrun is down, makes it
// what svcrun reads at its restart.
func (pl *player) edit(in *Input, r engine.Reload) error {
	if pl.down {
		pl.w.Configure(r.Modules)
		return pl.input(in, in.Text+" (while down: read at the restart)", nil)
	}
	return pl.input(in, in.Text, r)
}
