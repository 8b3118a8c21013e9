package agent

import (
	"errors"
	"slices"
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
	mod := func(m *manifest.Module, enabled bool) nodeconfig.LoadedModule {
		return nodeconfig.LoadedModule{Config: nodeconfig.Module{Enabled: enabled}, Manifest: m}
	}
	cur := &nodeconfig.Config{File: "/etc/svcrun/svcrun.toml"}
	for _, tc := range []struct {
		name          string
		oldMods, mods []nodeconfig.LoadedModule
		refused       string // the module list the refusal names; "" when allowed
	}{
		{name: "every enabled module dropped", oldMods: []nodeconfig.LoadedModule{mod(demo, true),
			mod(other, false)}, refused: "(demo)"},
		{name: "all disabled already", oldMods: []nodeconfig.LoadedModule{mod(demo, false), mod(other, false)}},
		{name: "one module kept", oldMods: []nodeconfig.LoadedModule{mod(demo, true), mod(other, true)},
			mods: []nodeconfig.LoadedModule{mod(other, true)}},
		{name: "a kept module disabled", oldMods: []nodeconfig.LoadedModule{mod(demo, true)},
			mods: []nodeconfig.LoadedModule{mod(demo, false)}},
		{name: "nothing before"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := refuseRemovingAll(tc.oldMods, cur, tc.mods)
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

// The pressure thresholds take effect at the next start: a reload that
// changes them says so.
func TestRestartOnlySignals(t *testing.T) {
	base := nodeconfig.Config{MemoryPressure: nodeconfig.MemoryPressure{Enabled: true, SomeAvg10: 20, FullAvg10: 5}}
	for _, tc := range []struct {
		name   string
		change func(*nodeconfig.Config)
		want   []string
	}{
		{"nothing", func(*nodeconfig.Config) {}, nil},
		{"a threshold", func(c *nodeconfig.Config) { c.MemoryPressure.FullAvg10 = 10 }, []string{"memory_pressure"}},
		{"pressure off", func(c *nodeconfig.Config) { c.MemoryPressure.Enabled = false }, []string{"memory_pressure"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur := base
			tc.change(&cur)
			if got := restartOnly(&base, &cur); !slices.Equal(got, tc.want) {
				t.Errorf("restart needed for %v, want %v", got, tc.want)
			}
		})
	}
}

// run_as, socket_group and metrics_listen cannot be half-applied: a reload
// that changes one is refused, naming the key, its values and that it
// needs a restart; the settings that keep their running values until the
// next start are not refused.
func TestNeedsRestart(t *testing.T) {
	base := nodeconfig.Config{File: "/etc/svcrun/svcrun.toml", RunAs: "svcrun-ops", Sandbox: nodeconfig.SandboxRequire}
	for _, tc := range []struct {
		name   string
		change func(*nodeconfig.Config)
		want   []string // in the refusal; none: not refused
	}{
		{"nothing", func(*nodeconfig.Config) {}, nil},
		{"run_as", func(c *nodeconfig.Config) { c.RunAs = "other" }, []string{`run_as ("other", was "svcrun-ops")`}},
		{"run_as unset", func(c *nodeconfig.Config) { c.RunAs = "" }, []string{`run_as (unset, was "svcrun-ops")`}},
		{"socket_group", func(c *nodeconfig.Config) { c.SocketGroup = "svcrun-jobs" },
			[]string{`socket_group ("svcrun-jobs", was unset)`}},
		{"metrics_listen", func(c *nodeconfig.Config) { c.MetricsListen = "127.0.0.1:9464" }, []string{"metrics_listen"}},
		{"two", func(c *nodeconfig.Config) { c.RunAs, c.MetricsListen = "other", ":1" },
			[]string{"run_as", "metrics_listen"}},
		{"sandbox waits for the restart", func(c *nodeconfig.Config) { c.Sandbox = nodeconfig.SandboxBestEffort }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur := base
			tc.change(&cur)
			err := needsRestart(&base, &cur)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrNeedsRestart) {
				t.Fatalf("got %v, want ErrNeedsRestart", err)
			}
			for _, part := range append(tc.want, "/etc/svcrun/svcrun.toml changes",
				"needs a restart of svcrun", "changed nothing") {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("%q does not say %q", err, part)
				}
			}
		})
	}
}
