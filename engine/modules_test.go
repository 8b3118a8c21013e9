package engine_test

import (
	"testing"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/fakes"
	"github.com/oarbank/svcrun/protocol"
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
		reload func(t *testing.T) engine.Reload
		notes  []string // lines that must appear after the reload
		not    []string // and must not
		answer string   // the last answer about l1
	}{
		{name: "module added enabled",
			reload: func(t *testing.T) engine.Reload {
				return engine.Reload{Modules: modules(t, twoServices, probeModule, alwaysModule)}
			},
			notes: []string{"module q: added and enabled", "run q/w fingerprint", "q/w: starting (lifecycle always)",
				"doctor: configuration reloaded: probes run again"}},
		{name: "module added disabled",
			reload: func(t *testing.T) engine.Reload {
				specs := modules(t, twoServices, probeModule, alwaysModule)
				specs[2].Enabled = false
				return engine.Reload{Modules: specs}
			},
			// Fingerprinted (a daemon left running would be stopped), never started.
			notes: []string{"run q/w fingerprint"},
			not:   []string{"module q: added and enabled", "run q/w start", "q/w: starting"}},
		{name: "module disabled for a reason",
			reload: func(t *testing.T) engine.Reload {
				specs := modules(t, twoServices, probeModule)
				specs[0].Enabled = false
				return engine.Reload{Modules: specs, Reason: "svcrun stops its services at exit"}
			},
			notes: []string{"module m: disabled: svcrun stops its services at exit",
				"m/a: stopping: svcrun stops its services at exit", "m/a: stopped (svcrun stops its services at exit)"},
			not: []string{"doctor: "}, answer: "released l1"},
		{name: "module disabled by a new configuration",
			reload: func(t *testing.T) engine.Reload {
				specs := modules(t, twoServices, probeModule)
				specs[0].Enabled = false
				return engine.Reload{Modules: specs}
			},
			notes: []string{"module m: disabled", "m/a: stopping: module disabled",
				"doctor: configuration reloaded: probes run again"}},
		{name: "module of a probe removed",
			reload: func(t *testing.T) engine.Reload { return engine.Reload{Modules: modules(t, twoServices)} },
			notes: []string{"lease l1: ended: module p was removed from the configuration",
				"module p: forgotten: its services have stopped"},
			answer: "expired l1: module p was removed from the configuration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, rec := newWorld(t, testConfig(), modules(t, twoServices, probeModule), nil)
			w.RunFor(time.Second)
			w.Do(engine.Acquire{Lease: "l1", Attempt: "a1", Requirements: caps("jdk")})
			if _, ok := answer(t, w, "l1").(engine.Admitted); !ok {
				t.Fatalf("l1 on the probe's capability: %v\n%s", answer(t, w, "l1"), rec)
			}
			from := len(rec.lines)
			w.Do(tt.reload(t))
			w.RunFor(time.Minute)
			if tt.answer == "released l1" {
				w.Do(engine.Release{Lease: "l1"})
			}
			after := &recorded{lines: rec.lines[from:]}
			for _, n := range tt.notes {
				if !after.has(n) {
					t.Errorf("no %q after the reload\n%s", n, after)
				}
			}
			for _, n := range tt.not {
				if after.has(n) {
					t.Errorf("%q after the reload\n%s", n, after)
				}
			}
			want := tt.answer
			if want == "" {
				want = "admitted l1 ()"
			}
			if got := engine.FormatEffect(answer(t, w, "l1")); got != want {
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

// TestReenableForgetsFailures: re-enabling a module is a fresh start for
// its services' failure records (docs/decisions.md, Failures and backoff): a
// service with failures has them forgotten, with a note and a store
// write; one without has nothing to forget, and gets neither. m/a's stop
// at the disable escalates, so it is no clean run that would forget them
// first.
func TestReenableForgetsFailures(t *testing.T) {
	w, rec := newWorld(t, testConfig(), modules(t, twoServices), map[string]*fakes.Behaviour{
		"m/a": {Ops: map[protocol.Op]fakes.OpScript{
			protocol.OpStart: {Outcomes: []fakes.Outcome{fakes.Fail, fakes.OK}},
			protocol.OpStop:  {Outcomes: []fakes.Outcome{fakes.OK, fakes.Escalated}},
		}}})
	w.RunFor(time.Minute)
	if f := status(w, "m/a").Failures; f != 1 {
		t.Fatalf("m/a has %d failures, want 1 (its first start fails)\n%s", f, rec)
	}
	off := modules(t, twoServices)
	off[0].Enabled = false
	w.Do(engine.Reload{Modules: off})
	w.RunFor(time.Minute)
	from := len(rec.lines)
	w.Do(engine.Reload{Modules: modules(t, twoServices)})
	w.RunFor(time.Minute)
	after := &recorded{lines: rec.lines[from:]}
	for _, tt := range []struct {
		line string
		want int
	}{
		{"m/a: module re-enabled: 1 failure(s) forgotten", 1},
		{"persist m/a failures=0 unhealthy=false", 1},
		{"m/b: module re-enabled", 0},
		{"persist m/b", 0},
	} {
		if n := after.count(tt.line); n != tt.want {
			t.Errorf("%d lines %q after the re-enable, want %d\n%s", n, tt.line, tt.want, after)
		}
	}
	if f := status(w, "m/a").Failures; f != 0 {
		t.Errorf("m/a has %d failures after the re-enable, want 0", f)
	}
}

// TestRemovedProbeFailsWaiting: a request waiting for a probe's
// capability is rejected at once, saying why, when a reload removes the
// probe (docs/decisions.md, Modules at run time): nothing will serve it.
func TestRemovedProbeFailsWaiting(t *testing.T) {
	unhealthy := false
	w, rec := newWorld(t, testConfig(), modules(t, twoServices, probeModule),
		map[string]*fakes.Behaviour{"p/jdk": {Healthy: &unhealthy}})
	w.RunFor(time.Second)
	w.Do(engine.Acquire{Lease: "l1", Attempt: "a1", Wait: time.Hour, Requirements: caps("jdk")})
	gone := modules(t, twoServices, probeModule)
	gone[1].Module.Probes = nil
	w.Do(engine.Reload{Modules: gone})
	want := "rejected l1: probe p/jdk was removed from its module"
	if got := engine.FormatEffect(answer(t, w, "l1")); got != want {
		t.Errorf("%s, want %s\n%s", got, want, rec)
	}
}
