package engine

import (
	"testing"
	"time"
)

const probeModule = `
[module]
name = "p"
version = "1"
[[probes]]
name = "jdk"
exec = ["bin/jdk"]
period_s = 60
`

// TestReloads holds the module rules of docs/decisions.md (Modules at run time;
// Removing a module is disabling it): a reload adds a module, enabled or
// not; a module set changed for a reason (enabled or disabled by hand,
// svcrun stopping its services) says the reason in its notes and stops,
// and does not run the probes again, while a new configuration does; a
// removed module's admitted leases end with why, also leases that need
// only one of its probes.
func TestReloads(t *testing.T) {
	tests := []struct {
		name   string
		reload func(r *rig) Reload
		notes  []string // lines that must appear after the reload
		not    []string // and must not
		answer string   // the last answer about l1
	}{
		{name: "module added enabled",
			reload: func(r *rig) Reload {
				return Reload{Modules: r.modules(twoServices, probeModule, alwaysModule)}
			},
			notes: []string{"module q: added and enabled", "run q/w fingerprint", "q/w: starting (lifecycle always)",
				"doctor: configuration reloaded: probes run again"}},
		{name: "module added disabled",
			reload: func(r *rig) Reload {
				specs := r.modules(twoServices, probeModule, alwaysModule)
				specs[2].Enabled = false
				return Reload{Modules: specs}
			},
			// Fingerprinted (a daemon left running would be stopped), never started.
			notes: []string{"run q/w fingerprint"},
			not:   []string{"module q: added and enabled", "run q/w start", "q/w: starting"}},
		{name: "module disabled for a reason",
			reload: func(r *rig) Reload {
				specs := r.modules(twoServices, probeModule)
				specs[0].Enabled = false
				return Reload{Modules: specs, Reason: "svcrun stops its services at exit"}
			},
			notes: []string{"module m: disabled: svcrun stops its services at exit",
				"m/a: stopping: svcrun stops its services at exit", "m/a: stopped (svcrun stops its services at exit)"},
			not: []string{"doctor: "}, answer: "released l1"},
		{name: "module disabled by a new configuration",
			reload: func(r *rig) Reload {
				specs := r.modules(twoServices, probeModule)
				specs[0].Enabled = false
				return Reload{Modules: specs}
			},
			notes: []string{"module m: disabled", "m/a: stopping: module disabled",
				"doctor: configuration reloaded: probes run again"}},
		{name: "module of a probe removed",
			reload: func(r *rig) Reload { return Reload{Modules: r.modules(twoServices)} },
			notes: []string{"lease l1: ended: module p was removed from the configuration",
				"module p: forgotten: its services have stopped"},
			answer: "expired l1: module p was removed from the configuration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			world := newAnswering()
			r := rigSetup{world: world.carry}.boot(t, twoServices, probeModule)
			r.advance(time.Second)
			r.step(Acquire{Lease: "l1", Attempt: "a1", Requirements: caps("jdk")})
			if _, ok := r.answers["l1"].(Admitted); !ok {
				t.Fatalf("l1 on the probe's capability: %v\n%s", r.answers["l1"], r.history(0))
			}
			from := len(r.lines)
			r.step(tt.reload(r))
			r.advance(time.Minute)
			if tt.answer == "released l1" {
				r.step(Release{Lease: "l1"})
			}
			for _, n := range tt.notes {
				if r.count(from, n) == 0 {
					t.Errorf("no %q after the reload\n%s", n, r.history(from))
				}
			}
			for _, n := range tt.not {
				if r.count(from, n) > 0 {
					t.Errorf("%q after the reload\n%s", n, r.history(from))
				}
			}
			want := tt.answer
			if want == "" {
				want = "admitted l1 ()"
			}
			if got := FormatEffect(r.answers["l1"]); got != want {
				t.Errorf("last answer about l1: %s, want %s", got, want)
			}
		})
	}
}

const alwaysModule = `
[module]
name = "q"
version = "1"
[[services]]
name = "w"
exec = ["bin/w"]
lifecycle = "always"
`
