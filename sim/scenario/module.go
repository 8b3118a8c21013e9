package scenario

import (
	"errors"
	"fmt"
	"strings"

	"github.com/oarbank/svcrun/manifest"
)

// module parses an embedded manifest from the lines after `module` up to
// `end`, and returns the index of the `end` line within rest.
func (p *parser) module(line int, args []string, rest []string) (int, error) {
	enabled, later := true, false
	for _, a := range args {
		switch a {
		case "disabled":
			enabled = false
		case "enabled":
		case "later":
			later = true
		default:
			return 0, lineError(p.file, line, "module: unknown flag %q; use `module`, `module disabled` or `module later`", a)
		}
	}
	end := -1
	for j, l := range rest {
		if strings.TrimSpace(strings.TrimRight(l, "\r\n")) == "end" {
			end = j
			break
		}
	}
	if end < 0 {
		return 0, lineError(p.file, line, "`module` without its `end` line")
	}
	// Blank lines in front keep the manifest's line numbers those of the
	// scenario file, so its errors point into the file.
	toml := strings.Repeat("\n", line) + strings.Join(rest[:end], "")
	m, err := manifest.Parse(p.file, []byte(toml))
	if err != nil {
		// Errors without a position (about the whole manifest) stand at
		// the `module` line.
		lines := strings.Split(err.Error(), "\n")
		for i, l := range lines {
			if rest, ok := strings.CutPrefix(l, p.file+": "); ok {
				lines[i] = fmt.Sprintf("%s:%d: %s", p.file, line, rest)
			}
		}
		return 0, errors.New(strings.Join(lines, "\n"))
	}
	i, dup := p.sc.modNames[m.Name]
	switch {
	case later && !dup:
		return 0, lineError(p.file, line,
			"`module later`: no module %q embedded before it; embed the version loaded at boot first", m.Name)
	case later:
		// A new manifest for a `reload` input: the set is checked with
		// the boot versions only, as the engine checks none of it.
		p.sc.Modules[i].Later = append(p.sc.Modules[i].Later, m)
	case dup:
		return 0, lineError(p.file, line,
			"module %q is embedded twice (a new version for `reload` is `module later`)", m.Name)
	default:
		p.sc.modNames[m.Name] = len(p.sc.Modules)
		p.sc.Modules = append(p.sc.Modules, Module{Module: m, Enabled: enabled, Line: line})
	}
	for _, s := range m.Services {
		p.sc.names[s.FullName()] = true
		p.sc.services[s.FullName()] = true
	}
	for _, pr := range m.Probes {
		p.sc.names[m.Name+"/"+pr.Name] = true
	}
	return end, nil
}

// checkSet checks the modules enabled at boot together, as the node
// configuration checks its enabled modules: a disabled module may declare
// a capability or pool of an enabled one, and offer it once enabled in its
// place.
func (p *parser) checkSet() error {
	var mods []*manifest.Module
	for _, m := range p.sc.Modules {
		if m.Enabled {
			mods = append(mods, m.Module)
		}
	}
	return manifest.CheckSet(mods)
}
