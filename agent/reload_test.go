package agent

import (
	"errors"
	"strings"
	"testing"

	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/nodeconfig"
)

// A reload to a file without modules is refused while a module is enabled,
// naming them and how to stop them on purpose; once they are all disabled
// it goes through, as does any file that keeps a module.
func TestRefuseRemovingAll(t *testing.T) {
	demo, other := &manifest.Module{Name: "demo"}, &manifest.Module{Name: "other"}
	cfg := func(enabled ...bool) *nodeconfig.Config {
		c := &nodeconfig.Config{File: "/etc/svcrun/svcrun.toml"}
		for _, e := range enabled {
			c.Modules = append(c.Modules, nodeconfig.Module{Enabled: e})
		}
		return c
	}
	for _, tc := range []struct {
		name    string
		old     *nodeconfig.Config
		oldMods []*manifest.Module
		cur     *nodeconfig.Config
		mods    []*manifest.Module
		refused string // the module list the refusal names; "" when allowed
	}{
		{name: "every enabled module dropped", old: cfg(true, false), oldMods: []*manifest.Module{demo, other}, cur: cfg(), refused: "(demo)"},
		{name: "all disabled already", old: cfg(false, false), oldMods: []*manifest.Module{demo, other}, cur: cfg()},
		{name: "one module kept", old: cfg(true, true), oldMods: []*manifest.Module{demo, other}, cur: cfg(true), mods: []*manifest.Module{other}},
		{name: "a kept module disabled", old: cfg(true), oldMods: []*manifest.Module{demo}, cur: cfg(false), mods: []*manifest.Module{demo}},
		{name: "nothing before", old: cfg(), cur: cfg()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := refuseRemovingAll(tc.old, tc.oldMods, tc.cur, tc.mods)
			if tc.refused == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrRemovesEveryModule) {
				t.Fatalf("got %v, want ErrRemovesEveryModule", err)
			}
			for _, part := range []string{"/etc/svcrun/svcrun.toml lists no modules", tc.refused, "enabled = false"} {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("%q does not say %q", err, part)
				}
			}
		})
	}
}
