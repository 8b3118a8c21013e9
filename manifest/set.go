package manifest

import (
	"fmt"
	"sort"
	"strings"

	"github.com/oarbank/svcrun/internal/tomldoc"
)

// CheckSet checks the rules that span the enabled modules of a node: module
// names are unique, and so are pool and capability names, since jobs name
// them without a module. Each error stands at the later declaration and names
// both modules.
func CheckSet(mods []*Module) error {
	var errs tomldoc.ErrorList
	type owner struct {
		mod  *Module
		site declSite
	}
	names := map[string]*Module{}
	decls := map[string]owner{}
	for _, m := range mods {
		if prev, dup := names[m.Name]; dup {
			errs = append(errs, &tomldoc.FieldError{File: m.File, Field: "module.name",
				Reason: fmt.Sprintf("module %q is also the name of the bundle %s; module names are unique on a node",
					m.Name, prev.File)})
			continue
		}
		names[m.Name] = m
		keys := make([]string, 0, len(m.decl))
		for k := range m.decl {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			site := m.decl[k]
			if prev, dup := decls[k]; dup {
				kind, name, _ := strings.Cut(k, " ")
				errs = append(errs, &tomldoc.FieldError{File: m.File, Pos: site.pos, Field: site.field,
					Reason: fmt.Sprintf(
						"%s %q is declared by both module %q (%s:%d:%d) and module %q; %s names are node-wide: rename one or "+
							"disable one of the modules",
						kind, name, prev.mod.Name, prev.mod.File, prev.site.pos.Line, prev.site.pos.Col, m.Name, kind)})
				continue
			}
			decls[k] = owner{m, site}
		}
	}
	return errs.Err()
}
