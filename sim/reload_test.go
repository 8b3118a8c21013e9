// Regression tests from a review of the engine: reloads that change
// manifests, providers that are disabled or removed, memory accounting,
// FIFO blocking and determinism. Each once failed on the bug it names.
package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/fakes"
	"github.com/oarbank/svcrun/protocol"
)

func traceOf(w *World) *[]string {
	var tr []string
	w.Observe = func(now time.Time, ev engine.Event, effects []engine.Effect) {
		tr = append(tr, now.Sub(Epoch).String()+" > "+ev.EventName())
		for _, f := range effects {
			tr = append(tr, now.Sub(Epoch).String()+"    "+engine.FormatEffect(f))
		}
	}
	return &tr
}

func svc(w *World, name string) *engine.ServiceStatus {
	for _, s := range w.Engine.Status().Services {
		if s.Name == name {
			return &s
		}
	}
	return nil
}

const modAB = `
[module]
name = "m"
version = "1"
[[services]]
name = "a"
exec = ["bin/a"]
capabilities = ["ca"]
[[services]]
name = "b"
exec = ["bin/b"]
capabilities = ["cb"]
`
const modA = `
[module]
name = "m"
version = "1"
[[services]]
name = "a"
exec = ["bin/a"]
capabilities = ["ca"]
`

// 1. A service removed from the manifest, then re-added, stays "removed" forever.
func TestRemovedThenReadded(t *testing.T) {
	cfg := engine.Config{NodeID: "n1", Platform: "linux", MemoryBudgetGB: 4}
	w := New(cfg, []engine.ModuleSpec{{Module: mustModule(t, modAB), Enabled: true}}, map[string]*fakes.Behaviour{})
	tr := traceOf(w)
	w.RunFor(time.Second)
	w.Do(engine.Reload{Modules: []engine.ModuleSpec{{Module: mustModule(t, modA), Enabled: true}}})
	w.RunFor(time.Second)
	w.Do(engine.Reload{Modules: []engine.ModuleSpec{{Module: mustModule(t, modAB), Enabled: true}}})
	w.RunFor(time.Second)
	w.Do(engine.Acquire{Lease: "l1", Attempt: "a1",
		Requirements: engine.Requirements{Capabilities: []string{"cb"}}, Wait: time.Minute})
	w.RunFor(10 * time.Second)
	t.Logf("answer=%#v enabled=%v", w.LastAnswer("l1"), svc(w, "m/b").Enabled)
	if _, ok := w.LastAnswer("l1").(engine.Admitted); !ok {
		t.Errorf("BUG: re-added service unusable\n%s", strings.Join(*tr, "\n"))
	}
}

const modRenamedOld = `
[module]
name = "m"
version = "1"
[[services]]
name = "z"
exec = ["bin/z"]
capabilities = ["docker"]
`
const modRenamedNew = `
[module]
name = "m"
version = "1"
[[services]]
name = "a"
exec = ["bin/a"]
capabilities = ["docker"]
`

// 2. Renamed service: the stopped, removed one is never forgotten and shadows the capability.
func TestRenamedServiceShadowsCapability(t *testing.T) {
	cfg := engine.Config{NodeID: "n1", Platform: "linux", MemoryBudgetGB: 4}
	w := New(cfg, []engine.ModuleSpec{{Module: mustModule(t, modRenamedOld), Enabled: true}},
		map[string]*fakes.Behaviour{})
	w.RunFor(time.Second)
	w.Do(engine.Reload{Modules: []engine.ModuleSpec{{Module: mustModule(t, modRenamedNew), Enabled: true}}})
	w.RunFor(time.Second)
	w.Do(engine.Acquire{Lease: "l1", Attempt: "a1",
		Requirements: engine.Requirements{Capabilities: []string{"docker"}}, Wait: time.Minute})
	w.RunFor(10 * time.Second)
	t.Logf("answer=%#v", w.LastAnswer("l1"))
	if _, ok := w.LastAnswer("l1").(engine.Admitted); !ok {
		t.Errorf("BUG: capability shadowed by removed service")
	}
}

const modOther = `
[module]
name = "zz"
version = "1"
[[services]]
name = "x"
exec = ["bin/x"]
capabilities = ["ca"]
`

// 3. A disabled module declaring the same capability shadows the enabled provider.
func TestDisabledModuleShadows(t *testing.T) {
	cfg := engine.Config{NodeID: "n1", Platform: "linux", MemoryBudgetGB: 4}
	w := New(cfg, []engine.ModuleSpec{{Module: mustModule(t, modA), Enabled: true},
		{Module: mustModule(t, modOther), Enabled: false}}, map[string]*fakes.Behaviour{})
	w.RunFor(time.Second)
	w.Do(engine.Acquire{Lease: "l1", Attempt: "a1",
		Requirements: engine.Requirements{Capabilities: []string{"ca"}}, Wait: time.Minute})
	w.RunFor(10 * time.Second)
	t.Logf("answer=%#v", w.LastAnswer("l1"))
	if _, ok := w.LastAnswer("l1").(engine.Admitted); !ok {
		t.Errorf("BUG: disabled module shadows capability")
	}
}

const modAlwaysAB = `
[module]
name = "m"
version = "1"
[[services]]
name = "a"
exec = ["bin/a"]
lifecycle = "always"
[[services]]
name = "b"
exec = ["bin/b"]
`
const modAlwaysA = `
[module]
name = "m"
version = "1"
[[services]]
name = "a"
exec = ["bin/a"]
lifecycle = "always"
`

// 4. A service removed while its boot fingerprint waits for a global op slot stays
// sUnknown forever: e.unknown never reaches 0 and nothing on the node ever starts.
func TestRemovedWhileUnknownBlocksAllStarts(t *testing.T) {
	cfg := engine.Config{NodeID: "n1", Platform: "linux", MemoryBudgetGB: 4, MaxConcurrentOps: 1}
	w := New(cfg, []engine.ModuleSpec{{Module: mustModule(t, modAlwaysAB), Enabled: true}},
		map[string]*fakes.Behaviour{})
	tr := traceOf(w)
	w.Do(engine.Reload{Modules: []engine.ModuleSpec{{Module: mustModule(t, modAlwaysA), Enabled: true}}})
	w.RunFor(5 * time.Minute)
	t.Logf("a=%+v running=%v", svc(w, "m/a").State, w.Exec.Running("m/a"))
	if !w.Exec.Running("m/a") {
		t.Errorf("BUG: always service never started\n%s", strings.Join(*tr, "\n"))
	}
}

const memOn = `
[module]
name = "m"
version = "1"
[[services]]
name = "a"
exec = ["bin/a"]
lifecycle = "always"
reserves_host_memory = true
`
const memOff = `
[module]
name = "m"
version = "1"
[[services]]
name = "a"
exec = ["bin/a"]
lifecycle = "always"
reserves_host_memory = false
`

// 5. reserves_host_memory flipped by a reload while running: the charge is never undone.
func TestMemoryDriftOnReload(t *testing.T) {
	cfg := engine.Config{NodeID: "n1", Platform: "linux", MemoryBudgetGB: 4}
	w := New(cfg, []engine.ModuleSpec{{Module: mustModule(t, memOn), Enabled: true}},
		map[string]*fakes.Behaviour{"m/a": {MemGB: 3}})
	w.RunFor(5 * time.Second)
	t.Logf("running: used=%v", w.Engine.Status().MemoryUsedGB)
	w.Do(engine.Reload{Modules: []engine.ModuleSpec{{Module: mustModule(t, memOff), Enabled: true}}})
	w.RunFor(5 * time.Second)
	w.Do(engine.Reload{Modules: []engine.ModuleSpec{{Module: mustModule(t, memOff), Enabled: false}}})
	w.RunFor(5 * time.Second)
	st := w.Engine.Status()
	t.Logf("after disable: used=%v state=%s", st.MemoryUsedGB, svc(w, "m/a").State)
	if st.MemoryUsedGB != 0 {
		t.Errorf("BUG: memory drift %v GB with nothing running", st.MemoryUsedGB)
	}
}

const probeMod = `
[module]
name = "m"
version = "1"
[[probes]]
name = "jdk"
exec = ["bin/p"]
period_s = 10
`
const noProbeMod = `
[module]
name = "m"
version = "1"
[[probes]]
name = "other"
exec = ["bin/o"]
`

// 6. A probe removed from the manifest keeps running and keeps offering its
// capability. The rule (docs/decisions.md, Modules at run time): a probe that
// disappears from its manifest is dropped: it runs no more op and its
// capability is withdrawn at once, so an acquire for it is rejected
// without waiting, naming what is offered instead.
func TestRemovedProbeKeepsRunning(t *testing.T) {
	cfg := engine.Config{NodeID: "n1", Platform: "linux", MemoryBudgetGB: 4}
	w := New(cfg, []engine.ModuleSpec{{Module: mustModule(t, probeMod), Enabled: true}}, map[string]*fakes.Behaviour{})
	tr := traceOf(w)
	w.RunFor(5 * time.Second)
	reloadAt := len(*tr)
	w.Do(engine.Reload{Modules: []engine.ModuleSpec{{Module: mustModule(t, noProbeMod), Enabled: true}}})
	w.RunFor(30 * time.Second) // three of the removed probe's 10s periods
	w.Do(engine.Acquire{Lease: "l1", Attempt: "a1", Wait: time.Minute,
		Requirements: engine.Requirements{Capabilities: []string{"jdk"}}})
	if err := w.Err(); err != nil {
		t.Fatal(err)
	}
	for _, l := range (*tr)[reloadAt:] {
		if strings.Contains(l, "run m/jdk ") {
			t.Errorf("the removed probe ran: %s", l)
		}
	}
	for _, p := range w.Engine.Status().Probes {
		if p.Name == "m/jdk" {
			t.Errorf("the removed probe is still in the status: %+v", p)
		}
	}
	want := `no module on this node offers capability "jdk" (capabilities: other)`
	if r, ok := w.LastAnswer("l1").(engine.Rejected); !ok || r.Reason != want {
		t.Errorf("acquire for the removed probe's capability: %#v, want rejected at once: %s\n%s",
			w.LastAnswer("l1"), want, strings.Join(*tr, "\n"))
	}
}

const alwaysOne = `
[module]
name = "m"
version = "1"
[[services]]
name = "a"
exec = ["bin/a"]
lifecycle = "always"
reserves_host_memory = true
`

// 7. Module disabled while the boot fingerprint is in flight: a running service is
// left running, unmanaged and uncharged.
func TestDisableDuringFingerprint(t *testing.T) {
	cfg := engine.Config{NodeID: "n1", Platform: "linux", MemoryBudgetGB: 4}
	w := New(cfg, []engine.ModuleSpec{{Module: mustModule(t, alwaysOne), Enabled: true}},
		map[string]*fakes.Behaviour{"m/a": {Running: true, MemGB: 3,
			Ops: map[protocol.Op]fakes.OpScript{protocol.OpFingerprint: {Duration: 2 * time.Second}}}})
	w.Do(engine.Reload{Modules: []engine.ModuleSpec{{Module: mustModule(t, alwaysOne), Enabled: false}}})
	w.RunFor(5 * time.Minute)
	t.Logf("running=%v state=%s mem=%v", w.Exec.Running("m/a"), svc(w, "m/a").State, w.Engine.Status().MemoryUsedGB)
	if w.Exec.Running("m/a") {
		t.Errorf("BUG: disabled module's service left running")
	}
}

const poolProbeMod = `
[module]
name = "m"
version = "1"
[[services]]
name = "a"
exec = ["bin/a"]
pools = ["p"]
lifecycle = "always"
[[probes]]
name = "jdk"
exec = ["bin/jdk"]
`

// 8. A waiting lease blocked on an unhealthy probe still blocks the pool for later leases.
func TestProbeWaitBlocksPool(t *testing.T) {
	unhealthy := false
	cfg := engine.Config{NodeID: "n1", Platform: "linux", MemoryBudgetGB: 4}
	w := New(cfg, []engine.ModuleSpec{{Module: mustModule(t, poolProbeMod), Enabled: true}},
		map[string]*fakes.Behaviour{"m/a": {Pools: map[string]int64{"p": 2}}, "m/jdk": {Healthy: &unhealthy}})
	w.RunFor(10 * time.Second)
	w.Do(engine.Acquire{Lease: "l1", Attempt: "a1",
		Requirements: engine.Requirements{Pools: map[string]int64{"p": 1}, Capabilities: []string{"jdk"}}, Wait: time.Hour})
	w.Do(engine.Acquire{Lease: "l2", Attempt: "a2",
		Requirements: engine.Requirements{Pools: map[string]int64{"p": 1}}, Wait: time.Minute})
	w.RunFor(2 * time.Minute)
	t.Logf("l2: %#v", w.LastAnswer("l2"))
	if _, ok := w.LastAnswer("l2").(engine.Admitted); !ok {
		t.Errorf("BUG: l2 starved by l1 waiting for a probe while 2 tokens are free")
	}
}

const freezeMod = `
[module]
name = "m"
version = "1"
[[services]]
name = "a"
exec = ["bin/a"]
capabilities = ["ca"]
freeze_ok = true
idle_timeout_s = 600
`

// 9. Container emptied while frozen: s.frozen cleared without a Thaw effect.
func TestEmptiedWhileFrozenNoThaw(t *testing.T) {
	cfg := engine.Config{NodeID: "n1", Platform: "linux", MemoryBudgetGB: 4}
	w := New(cfg, []engine.ModuleSpec{{Module: mustModule(t, freezeMod), Enabled: true}}, map[string]*fakes.Behaviour{})
	w.RunFor(time.Second)
	w.Do(engine.Acquire{Lease: "l1", Attempt: "a1",
		Requirements: engine.Requirements{Capabilities: []string{"ca"}}, Wait: time.Minute})
	w.RunFor(5 * time.Second)
	w.Do(engine.Release{Lease: "l1"})
	w.RunFor(time.Second)
	t.Logf("frozen=%v", w.Exec.Frozen("m/a"))
	tr := traceOf(w)
	w.Do(engine.ContainerEmptied{Service: engine.Target{Module: "m", Name: "a"}})
	w.RunFor(5 * time.Second)
	t.Logf("after emptied+stop: fake frozen=%v engine frozen=%v\n%s", w.Exec.Frozen("m/a"), svc(w, "m/a").Frozen,
		strings.Join(*tr, "\n"))
	if w.Exec.Frozen("m/a") {
		t.Errorf("BUG: container left frozen; the cleanup stop runs in a frozen cgroup")
	}
}

// 10. The rejection text does not depend on map iteration order.
func TestRejectNondeterministic(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 50; i++ {
		cfg := engine.Config{NodeID: "n1", Platform: "linux", MemoryBudgetGB: 4}
		w := New(cfg, []engine.ModuleSpec{{Module: mustModule(t, poolProbeMod), Enabled: true}},
			map[string]*fakes.Behaviour{})
		w.Do(engine.Acquire{Lease: "l1", Attempt: "a1",
			Requirements: engine.Requirements{Pools: map[string]int64{"p": 0, "q": 0, "r": -1}}})
		seen[engine.FormatEffect(w.LastAnswer("l1"))] = true
	}
	if len(seen) != 1 {
		t.Fatalf("%d distinct answers for one input: %v", len(seen), seen)
	}
}

const modManualM = `
[module]
name = "m"
version = "1"
[[services]]
name = "a"
exec = ["bin/a"]
capabilities = ["ca"]
lifecycle = "manual"
`

// A module removed from the configuration is disabled: its services get
// their stop op, a kill follows only a failed stop, and once stopped they
// and the module leave the engine; a module back before that is usable.
func TestModuleRemoved(t *testing.T) {
	acquireCA := engine.Acquire{Lease: "l1", Attempt: "a1",
		Requirements: engine.Requirements{Capabilities: []string{"ca"}}, Wait: time.Minute}
	cases := []struct {
		name     string
		mod      string
		enabled  bool
		stop     fakes.OpScript
		running  bool // the service runs before the agent starts
		readd    bool // the module is back 1 s after its removal
		wantStop bool // a stop op runs
		wantKill bool
		wantGone bool // the service has left the status at the end
	}{
		{name: "stop ok", mod: modA, enabled: true, stop: fakes.OpScript{Duration: 5 * time.Second}, wantStop: true,
			wantGone: true},
		{name: "stop fails: killed", mod: modA, enabled: true,
			stop: fakes.OpScript{Outcomes: []fakes.Outcome{fakes.Fail}}, wantStop: true, wantKill: true, wantGone: true},
		{name: "back before the stop ended", mod: modA, enabled: true,
			stop: fakes.OpScript{Duration: 5 * time.Second}, readd: true, wantStop: true},
		{name: "manual: never stopped", mod: modManualM, enabled: true, running: true, wantGone: true},
		{name: "disabled already", mod: modA, enabled: false, wantGone: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := engine.Config{NodeID: "n1", Platform: "linux", MemoryBudgetGB: 4}
			b := &fakes.Behaviour{Ops: map[protocol.Op]fakes.OpScript{protocol.OpStop: tc.stop}, Running: tc.running}
			spec := engine.ModuleSpec{Module: mustModule(t, tc.mod), Enabled: tc.enabled}
			w := New(cfg, []engine.ModuleSpec{spec}, map[string]*fakes.Behaviour{"m/a": b})
			tr := traceOf(w)
			w.RunFor(time.Second)
			if tc.enabled {
				w.Do(acquireCA)
				w.RunFor(time.Second)
				if _, ok := w.LastAnswer("l1").(engine.Admitted); !ok {
					t.Fatalf("l1 not admitted: %v\n%s", w.LastAnswer("l1"), strings.Join(*tr, "\n"))
				}
			}
			w.Do(engine.Reload{})
			if tc.enabled {
				if ex, ok := w.LastAnswer("l1").(engine.Expired); !ok ||
					!strings.Contains(ex.Reason, "module m was removed from the configuration") {
					t.Errorf("l1: got %v, want it expired, saying the module was removed", w.LastAnswer("l1"))
				}
			}
			if tc.readd {
				w.RunFor(time.Second)
				w.Do(engine.Reload{Modules: []engine.ModuleSpec{spec}})
			}
			w.RunFor(time.Minute)
			joined := strings.Join(*tr, "\n")
			if got := strings.Contains(joined, "run m/a stop"); got != tc.wantStop {
				t.Errorf("stop op run: %v, want %v\n%s", got, tc.wantStop, joined)
			}
			if got := strings.Contains(joined, "kill m/a"); got != tc.wantKill {
				t.Errorf("kill: %v, want %v\n%s", got, tc.wantKill, joined)
			}
			if got := svc(w, "m/a") == nil; got != tc.wantGone {
				t.Errorf("m/a gone from the status: %v, want %v\n%s", got, tc.wantGone, joined)
			}
			if tc.readd {
				w.Do(engine.Acquire{Lease: "l2", Attempt: "a2", Requirements: acquireCA.Requirements, Wait: time.Minute})
				w.RunFor(10 * time.Second)
				if _, ok := w.LastAnswer("l2").(engine.Admitted); !ok {
					t.Errorf("l2 after the module came back: %v, want admitted\n%s", w.LastAnswer("l2"), strings.Join(*tr, "\n"))
				}
			}
		})
	}
}

// A service removed from its module's manifest ends the admitted leases
// that need it, saying so, and is forgotten once stopped.
func TestServiceRemovedEndsItsLeases(t *testing.T) {
	cfg := engine.Config{NodeID: "n1", Platform: "linux", MemoryBudgetGB: 4}
	w := New(cfg, []engine.ModuleSpec{{Module: mustModule(t, modAB), Enabled: true}}, map[string]*fakes.Behaviour{})
	tr := traceOf(w)
	w.RunFor(time.Second)
	w.Do(engine.Acquire{Lease: "l1", Attempt: "a1",
		Requirements: engine.Requirements{Capabilities: []string{"cb"}}, Wait: time.Minute})
	w.RunFor(time.Second)
	w.Do(engine.Reload{Modules: []engine.ModuleSpec{{Module: mustModule(t, modA), Enabled: true}}})
	if ex, ok := w.LastAnswer("l1").(engine.Expired); !ok ||
		ex.Reason != "service m/b was removed from its module's manifest" {
		t.Errorf("l1: got %v, want it expired, saying m/b was removed", w.LastAnswer("l1"))
	}
	w.RunFor(time.Minute)
	if s := svc(w, "m/b"); s != nil {
		t.Errorf("m/b still in the status: %+v\n%s", *s, strings.Join(*tr, "\n"))
	}
	w.Do(engine.Release{Lease: "l1"})
	if u, ok := w.LastAnswer("l1").(engine.LeaseUnknown); !ok || !strings.Contains(u.Reason, "m/b was removed") {
		t.Errorf("release of l1: got %v, want an unknown lease saying why it ended", w.LastAnswer("l1"))
	}
}
