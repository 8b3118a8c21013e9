package sim

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/fakes"
	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/protocol"
)

// invariantWorld is a small node for the invariants' own tests: db/kv
// (on_demand, reserving 3 GB, freeze_ok), db/cache (on_demand, reserving
// 2 GB, yieldable), web/a (always) and the disabled module pm with pm/x and
// probe pm/chk, on a budget of 4 GB; db/cache's probe db/ok reports
// unhealthy.
func invariantWorld(t *testing.T) (*World, *invariants) {
	t.Helper()
	restart := manifest.Restart{BackoffInitial: time.Second, BackoffMax: time.Second, MaxFailures: 5,
		ResetAfter: time.Minute}
	svc := func(mod, name string, lc manifest.Lifecycle) manifest.Service {
		return manifest.Service{Module: mod, Name: name, Exec: []string{"bin/" + name}, Lifecycle: lc,
			IdleTimeout:  10 * time.Minute,
			StartTimeout: time.Minute, Capabilities: []string{name}, Restart: restart}
	}
	kv := svc("db", "kv", manifest.OnDemand)
	kv.ReservesHostMemory, kv.FreezeOK = true, true
	cache := svc("db", "cache", manifest.OnDemand)
	cache.ReservesHostMemory, cache.Yieldable = true, true
	probe := func(mod, name string) manifest.Probe {
		return manifest.Probe{Module: mod, Name: name, Exec: []string{"bin/p"}, Period: time.Minute}
	}
	mods := []engine.ModuleSpec{
		{Module: &manifest.Module{Name: "db", Version: "1", Services: []manifest.Service{kv, cache},
			Probes: []manifest.Probe{probe("db", "ok")}}, Enabled: true},
		{Module: &manifest.Module{Name: "web", Version: "1",
			Services: []manifest.Service{svc("web", "a", manifest.Always)}}, Enabled: true},
		{Module: &manifest.Module{Name: "pm", Version: "1",
			Services: []manifest.Service{svc("pm", "x", manifest.OnDemand)}, Probes: []manifest.Probe{probe("pm", "chk")}}},
	}
	unhealthy := false
	behaviours := map[string]*fakes.Behaviour{"db/kv": {MemGB: 3}, "db/cache": {MemGB: 2}, "db/ok": {Healthy: &unhealthy}}
	w := Build(engine.Config{NodeID: "n1", Platform: "linux", MemoryBudgetGB: 4}, mods, behaviours)
	c := watchInvariants(w, mods, "n1")
	w.Boot()
	w.RunFor(0)
	if err := w.Err(); err != nil {
		t.Fatalf("the good world breaks an invariant: %v", err)
	}
	return w, c
}

var (
	kvTarget  = engine.Target{Module: "db", Name: "kv"}
	chkTarget = engine.Target{Module: "pm", Name: "chk", Probe: true}
)

// TestInvariantsFire shows each invariant firing on a hand-made bad
// state: a view of the engine, an effect, or a world changed behind the
// engine's back. The cases whose want is empty must not fire.
func TestInvariantsFire(t *testing.T) {
	ready := func(name string, refs int) engine.ServiceStatus {
		return engine.ServiceStatus{Name: name, Enabled: true, Lifecycle: manifest.OnDemand, State: "ready",
			Ready: true, Refs: refs}
	}
	for _, tc := range []struct {
		name string
		bad  func(w *World, c *invariants)
		want string
	}{
		{"frozen while referenced", func(w *World, c *invariants) {
			s := ready("db/kv", 1)
			s.Frozen = true
			c.checkState(engine.Status{Services: []engine.ServiceStatus{s}})
		}, "db/kv frozen while 1 lease(s) hold it"},
		{"frozen while an op runs", func(w *World, c *invariants) {
			s := ready("db/kv", 0)
			s.Frozen, s.OpInFlight = true, "list_owned"
			c.checkState(engine.Status{Services: []engine.ServiceStatus{s}})
		}, "db/kv frozen while its list_owned runs"},
		{"the engine and the container disagree", func(w *World, c *invariants) {
			w.Exec.Freeze(kvTarget)
			c.checkState(engine.Status{Services: []engine.ServiceStatus{ready("db/kv", 0)}})
		}, "db/kv: the engine says frozen=false, its container frozen=true"},
		{"an op on a frozen service", func(w *World, c *invariants) {
			w.Exec.Freeze(kvTarget)
			c.observe(w.Now(), engine.Fire{}, []engine.Effect{&engine.RunOp{ID: 99, Target: kvTarget, Op: protocol.OpStatus}})
		}, "status of db/kv while it is frozen"},
		{"an op after the thaw", func(w *World, c *invariants) {
			w.Exec.Freeze(kvTarget)
			c.observe(w.Now(), engine.Fire{},
				[]engine.Effect{engine.Thaw{Service: kvTarget}, &engine.RunOp{ID: 99, Target: kvTarget, Op: protocol.OpStatus}})
		}, ""},
		{"an admission on a frozen service", func(w *World, c *invariants) {
			w.Exec.Freeze(kvTarget)
			c.observe(w.Now(), engine.Fire{}, []engine.Effect{engine.Admitted{Lease: "l1", Services: []string{"db/kv"}}})
		}, "lease l1 admitted while db/kv is frozen"},
		{"a thawed daemon that died frozen handed to a lease", func(w *World, c *invariants) {
			w.Do(engine.Acquire{Lease: "l1", Attempt: "a1",
				Requirements: engine.Requirements{Capabilities: []string{"kv"}}, Wait: time.Minute})
			w.Exec.Freeze(kvTarget)
			w.Exec.SetRunning("db/kv", false)
			c.changedUnseen("db/kv")
			c.observe(w.Now(), engine.Fire{},
				[]engine.Effect{engine.Thaw{Service: kvTarget}, engine.Admitted{Lease: "l2", Services: []string{"db/kv"}}})
		}, "lease l2 admitted while the daemon of db/kv is down"},
		{"a silent death nobody could see yet", func(w *World, c *invariants) {
			w.Do(engine.Acquire{Lease: "l1", Attempt: "a1",
				Requirements: engine.Requirements{Capabilities: []string{"kv"}}, Wait: time.Minute})
			w.Exec.SetRunning("db/kv", false)
			c.changedUnseen("db/kv")
			c.observe(w.Now(), engine.Fire{}, []engine.Effect{engine.Admitted{Lease: "l2", Services: []string{"db/kv"}}})
		}, ""},
		{"a poll takes a slot before a start that waited", func(w *World, c *invariants) {
			starting := ready("db/cache", 0)
			starting.State, starting.Ready = "starting", false
			st := engine.Status{OpsInFlight: 8, Services: []engine.ServiceStatus{starting}}
			c.checkState(st)
			c.observe(w.Now(), engine.Fire{}, []engine.Effect{&engine.RunOp{ID: 99, Target: kvTarget, Op: protocol.OpStatus}})
			c.checkState(st)
		}, "status of db/kv took an op slot while db/cache, starting, waited for one since an earlier step"},
		{"a poll takes a slot as a start begins to wait", func(w *World, c *invariants) {
			starting := ready("db/cache", 0)
			starting.State, starting.Ready = "starting", false
			c.observe(w.Now(), engine.Fire{}, []engine.Effect{&engine.RunOp{ID: 99, Target: kvTarget, Op: protocol.OpStatus}})
			c.checkState(engine.Status{OpsInFlight: 8, Services: []engine.ServiceStatus{starting}})
		}, ""},
		{"a probe of a disabled module runs", func(w *World, c *invariants) {
			c.observe(w.Now(), engine.Fire{},
				[]engine.Effect{&engine.RunOp{ID: 99, Target: chkTarget, Op: protocol.OpFingerprint}})
		}, "probe pm/chk run while its module is disabled"},
		{"an admission on an unhealthy probe", func(w *World, c *invariants) {
			w.Do(engine.Acquire{Lease: "l1", Attempt: "a1",
				Requirements: engine.Requirements{Capabilities: []string{"ok"}}, Wait: time.Minute})
			c.observe(w.Now(), engine.Fire{}, []engine.Effect{engine.Admitted{Lease: "l1"}})
		}, "lease l1 admitted while probe db/ok (capability ok) is enabled=true reported=true healthy=false"},
		{"a start beyond the budget", func(w *World, c *invariants) {
			s := ready("db/kv", 0)
			s.State, s.Charged = "starting", true
			c.checkState(engine.Status{MemoryBudgetGB: 4, MemoryUsedGB: 5, Services: []engine.ServiceStatus{s}})
		}, "db/kv started with 5 GB reserved of a budget of 4 GB"},
		{"a daemon of a disabled module runs", func(w *World, c *invariants) {
			w.Exec.SetRunning("pm/x", true)
			c.checkSettled()
		}, "settled, and the daemon of pm/x runs while it is not enabled"},
		{"a service of a disabled module is charged", func(w *World, c *invariants) {
			c.checkSettledState(engine.Status{Services: []engine.ServiceStatus{{Name: "pm/x",
				Lifecycle: manifest.OnDemand, State: "ready", Charged: true}}})
		}, "settled, and pm/x, not enabled, is ready (charged=true)"},
		{"a manual service of a disabled module runs on, charged", func(w *World, c *invariants) {
			c.checkSettledState(engine.Status{Services: []engine.ServiceStatus{{Name: "pm/x",
				Lifecycle: manifest.Manual, State: "ready", Charged: true}}})
		}, ""},
		{"a lease expired through a pause of svcrun", func(w *World, c *invariants) {
			c.held["l1"] = heldLease{ttl: 30 * time.Second, renewed: w.Now()}
			c.checkTTL(w.Now().Add(10*time.Second), engine.Paused{Length: 60 * time.Second}, nil)
			c.checkTTL(w.Now().Add(70*time.Second), engine.Fire{}, []engine.Effect{engine.Expired{Lease: "l1"}})
		}, "lease l1 expired 1m10s after its last renewal, 1m0s of it a pause of svcrun: its TTL is 30s"},
		{"a lease expired its TTL after a pause", func(w *World, c *invariants) {
			c.held["l1"] = heldLease{ttl: 30 * time.Second, renewed: w.Now()}
			c.checkTTL(w.Now().Add(10*time.Second), engine.Paused{Length: 60 * time.Second}, nil)
			c.checkTTL(w.Now().Add(90*time.Second), engine.Fire{}, []engine.Effect{engine.Expired{Lease: "l1"}})
		}, ""},
		{"a lease on a service that offers nothing it asked for", func(w *World, c *invariants) {
			c.checkState(engine.Status{Leases: []engine.LeaseStatus{{ID: "l1", Admitted: true, Services: []string{"db/cache"},
				Requirements: engine.Requirements{Capabilities: []string{"kv"}}}}})
		}, "lease l1 asked for capability kv, which none of its services [db/cache] offers"},
		{"a lease on a service more than it asked for", func(w *World, c *invariants) {
			c.checkState(engine.Status{Leases: []engine.LeaseStatus{{ID: "l1", Admitted: true,
				Services:     []string{"db/cache", "db/kv"},
				Requirements: engine.Requirements{Capabilities: []string{"kv"}}}}})
		}, "lease l1 needs db/cache, which offers nothing it asked for"},
		{"a lease on a probe's capability", func(w *World, c *invariants) {
			c.checkState(engine.Status{Probes: []engine.ProbeStatus{{Name: "db/ok", Capability: "ok"}},
				Leases: []engine.LeaseStatus{{ID: "l1", Requirements: engine.Requirements{Capabilities: []string{"ok"}}}}})
		}, ""},
		{"a running daemon taken as stopped", func(w *World, c *invariants) {
			w.Exec.SetRunning("db/kv", true)
			c.checkState(engine.Status{Services: []engine.ServiceStatus{{Name: "db/kv", Enabled: true,
				Lifecycle: manifest.OnDemand, State: "stopped"}}})
		}, "the daemon of db/kv runs, but svcrun has it stopped: unwatched and not charged"},
		{"a daemon its owner started, not seen yet", func(w *World, c *invariants) {
			w.Exec.SetRunning("db/kv", true)
			c.changedUnseen("db/kv")
			c.checkState(engine.Status{Services: []engine.ServiceStatus{{Name: "db/kv", Enabled: true,
				Lifecycle: manifest.OnDemand, State: "stopped"}}})
		}, ""},
		{"an unknown service with no fingerprint coming", func(w *World, c *invariants) {
			c.checkState(engine.Status{Services: []engine.ServiceStatus{{Name: "db/kv", Enabled: true,
				Lifecycle: manifest.OnDemand, State: "unknown"}}})
		}, "db/kv is unknown, and no fingerprint of it runs, queues or is pending"},
		{"an unknown service whose fingerprint is retried", func(w *World, c *invariants) {
			c.timers[timerOf{engine.TimerFingerprint, "db/kv"}] = w.Now()
			c.checkState(engine.Status{Services: []engine.ServiceStatus{{Name: "db/kv", Enabled: true,
				Lifecycle: manifest.OnDemand, State: "unknown"}}})
		}, ""},
		{"a stopped manual service never fingerprinted again", func(w *World, c *invariants) {
			c.checkState(engine.Status{Services: []engine.ServiceStatus{{Name: "db/cache", Enabled: true,
				Lifecycle: manifest.Manual, State: "stopped"}}})
		}, "db/cache is stopped (manual), and no fingerprint of it runs, queues or is pending"},
		{"a start with no op", func(w *World, c *invariants) {
			c.checkState(engine.Status{Services: []engine.ServiceStatus{{Name: "web/a", Enabled: true,
				Lifecycle: manifest.Always, State: "starting"}}})
		}, "web/a is starting, and no op of it runs or queues"},
		{"a start queued for an op slot", func(w *World, c *invariants) {
			c.checkState(engine.Status{OpsInFlight: 8,
				Services: []engine.ServiceStatus{{Name: "web/a", Enabled: true, Lifecycle: manifest.Always, State: "starting"}}})
		}, ""},
		{"a ready service no poll watches", func(w *World, c *invariants) {
			c.timers[timerOf{engine.TimerFingerprint, "db/kv"}] = w.Now()
			c.checkState(engine.Status{Services: []engine.ServiceStatus{ready("db/kv", 0)}})
		}, "db/kv is ready, and no status of it is pending"},
		{"a frozen service that may not be frozen", func(w *World, c *invariants) {
			w.Exec.Freeze(engine.Target{Module: "web", Name: "a"})
			s := ready("web/a", 0)
			s.Lifecycle, s.Frozen = manifest.Always, true
			c.checkState(engine.Status{Services: []engine.ServiceStatus{s}})
		}, "web/a is frozen, though its manifest (always, freeze_ok=false) lets nothing thaw it when idle"},
		{"a start held back by another service's op", func(w *World, c *invariants) {
			c.checkState(engine.Status{MemoryBudgetGB: 4, OpsInFlight: 1, Services: []engine.ServiceStatus{
				{Name: "db/kv", Enabled: true, Lifecycle: manifest.OnDemand, State: "stopping", OpInFlight: "stop"},
				{Name: "web/a", Enabled: true, Lifecycle: manifest.Always, State: "stopped"}}})
		}, "web/a is wanted (0 lease(s), always) and stopped, though nothing holds its start back (ops in " +
			"flight: [db/kv:stop])"},
		{"a start that reserves memory waits for another's first fingerprint", func(w *World, c *invariants) {
			c.memAtUnknown["db/cache"] = true
			c.timers[timerOf{engine.TimerFingerprint, "db/cache"}] = w.Now()
			c.checkState(engine.Status{MemoryBudgetGB: 4, Services: []engine.ServiceStatus{
				{Name: "db/cache", Enabled: true, Lifecycle: manifest.OnDemand, State: "unknown"},
				{Name: "db/kv", Enabled: true, Lifecycle: manifest.Always, State: "stopped"}}})
		}, ""},
		{"a start that reserves memory held back by a failed fingerprint", func(w *World, c *invariants) {
			c.state["db/cache"], c.memAtUnknown["db/cache"], c.fpFailed["db/cache"] = "unknown", true, true
			c.timers[timerOf{engine.TimerFingerprint, "db/cache"}] = w.Now()
			c.checkState(engine.Status{MemoryBudgetGB: 4, Services: []engine.ServiceStatus{
				{Name: "db/cache", Enabled: true, Lifecycle: manifest.OnDemand, State: "unknown"},
				{Name: "db/kv", Enabled: true, Lifecycle: manifest.Always, State: "stopped"}}})
		}, "db/kv is wanted (0 lease(s), always) and stopped, though nothing holds its start back"},
		{"tokens counted against the pool's name, not its service", func(w *World, c *invariants) {
			c.checkState(engine.Status{Pools: []engine.PoolStatus{{Name: "kv", Service: "db/kv", Capacity: 2, Reserved: 2}},
				Leases: []engine.LeaseStatus{{ID: "l1", Admitted: true, Services: []string{"pm/x"},
					Requirements: engine.Requirements{Pools: map[string]int64{"kv": 2}}}}})
		}, "pool kv of db/kv: 2 token(s) reserved, but its admitted leases hold 0"},
		{"an idle timer beyond the idle timeout", func(w *World, c *invariants) {
			c.timers[timerOf{engine.TimerIdle, "db/kv"}] = w.Now().Add(time.Hour)
			c.checkState(engine.Status{Now: w.Now(),
				Services: []engine.ServiceStatus{{Name: "db/kv", Enabled: true, Lifecycle: manifest.OnDemand, State: "stopped"}}})
		}, "the idle timer of db/kv is due in 1h0m0s, beyond its idle_timeout_s of 10m0s"},
		{"an orphan forced at once", func(w *World, c *invariants) {
			w.Exec.AddObject("db/kv", fakes.Object{ID: "o1", CreatedAt: w.Now(), Labels: map[string]string{
				protocol.LabelAttemptID: "a9", protocol.LabelNode: "n1", protocol.LabelService: "db/kv"}})
			c.observe(w.Now(), engine.Fire{},
				[]engine.Effect{&engine.RunOp{ID: 99, Target: kvTarget, Op: protocol.OpDestroy, Args: []string{"o1", "--force"}}})
		}, "destroy --force of db/kv/o1 0s after it was made: an orphan is forced only after force_after reap " +
			"periods (3m0s)"},
		{"an old orphan forced", func(w *World, c *invariants) {
			w.Exec.AddObject("db/kv", fakes.Object{ID: "o1", CreatedAt: w.Now().Add(-time.Hour), Labels: map[string]string{
				protocol.LabelAttemptID: "a9", protocol.LabelNode: "n1", protocol.LabelService: "db/kv"}})
			c.observe(w.Now(), engine.Fire{},
				[]engine.Effect{&engine.RunOp{ID: 99, Target: kvTarget, Op: protocol.OpDestroy, Args: []string{"o1", "--force"}}})
		}, ""},
		{"failures kept after a clean run", func(w *World, c *invariants) {
			c.checkCleanRun(engine.ServiceStatus{Name: "db/kv", Failures: 2})
		}, "db/kv stopped gracefully after a clean run, and keeps 2 failure(s)"},
		{"an unhealthy mark kept after a clean run", func(w *World, c *invariants) {
			c.checkCleanRun(engine.ServiceStatus{Name: "db/kv", Failures: 2, Unhealthy: true})
		}, ""},
		{"a probe of an enabled module never reported", func(w *World, c *invariants) {
			c.checkSettledState(engine.Status{Probes: []engine.ProbeStatus{{Name: "db/ok", Enabled: true}}})
		}, "settled, and probe db/ok of an enabled module has never reported"},
		{"an enabled service never fingerprinted", func(w *World, c *invariants) {
			c.checkSettledState(engine.Status{Services: []engine.ServiceStatus{{Name: "web/a", Enabled: true,
				Lifecycle: manifest.Always, State: "unknown"}}})
		}, "settled, and web/a has never been fingerprinted"},
		{"a stuck start that fits", func(w *World, c *invariants) {
			c.checkSettledState(engine.Status{MemoryBudgetGB: 4,
				Services: []engine.ServiceStatus{{Name: "web/a", Enabled: true, Lifecycle: manifest.Always, State: "stopped"}}})
		}, "settled, and web/a is wanted (0 lease(s), always) but stopped, though its 0 GB fit (0 of 4 GB in use)"},
		{"a stopped service backing off", func(w *World, c *invariants) {
			c.checkSettledState(engine.Status{Now: Epoch, MemoryBudgetGB: 4, Services: []engine.ServiceStatus{
				{Name: "web/a", Enabled: true, Lifecycle: manifest.Always, State: "stopped",
					BackoffUntil: Epoch.Add(time.Second)}}})
		}, ""},
		{"a stopped service whose fingerprint says unhealthy", func(w *World, c *invariants) {
			c.fpUnhealthy["web/a"] = true
			c.checkSettledState(engine.Status{MemoryBudgetGB: 4,
				Services: []engine.ServiceStatus{{Name: "web/a", Enabled: true, Lifecycle: manifest.Always, State: "stopped"}}})
		}, ""},
		{"a stopped unhealthy service", func(w *World, c *invariants) {
			c.checkSettledState(engine.Status{MemoryBudgetGB: 4,
				Services: []engine.ServiceStatus{{Name: "web/a", Enabled: true, Lifecycle: manifest.Always,
					State: "stopped", Unhealthy: true}}})
		}, ""},
		{"a stuck start an idle yieldable service could make room for", func(w *World, c *invariants) {
			c.checkSettledState(engine.Status{MemoryBudgetGB: 4, MemoryUsedGB: 2, Services: []engine.ServiceStatus{
				{Name: "db/cache", Enabled: true, Lifecycle: manifest.OnDemand, State: "ready", Ready: true, MemGB: 2,
					Charged: true},
				{Name: "db/kv", Enabled: true, Lifecycle: manifest.OnDemand, State: "stopped", Waiting: 1, MemGB: 3},
			}})
		}, "settled, and db/kv is wanted but waits for memory (1 GB more needed), though idle yieldable " +
			"[db/cache] hold 2 GB"},
		{"a start waiting for memory held by a service in use", func(w *World, c *invariants) {
			c.checkSettledState(engine.Status{MemoryBudgetGB: 4, MemoryUsedGB: 2, Services: []engine.ServiceStatus{
				{Name: "db/cache", Enabled: true, Lifecycle: manifest.OnDemand, State: "ready", Ready: true, Refs: 1,
					MemGB: 2, Charged: true},
				{Name: "db/kv", Enabled: true, Lifecycle: manifest.OnDemand, State: "stopped", Waiting: 1, MemGB: 3},
			}})
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, c := invariantWorld(t)
			c.failures = nil
			tc.bad(w, c)
			got := strings.Join(c.failures, "\n")
			switch {
			case tc.want == "" && got != "":
				t.Errorf("fired on a good state: %s", got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Errorf("want a failure %q, got:\n%s", tc.want, got)
			}
		})
	}
}

// TestSettledWaitsForOps: the settled checks wait until no op is in
// flight and nothing is due now.
func TestSettledWaitsForOps(t *testing.T) {
	w, c := invariantWorld(t)
	if !c.settled() {
		t.Fatal("the booted world is not settled")
	}
	w.Exec.Behaviour("db/kv").Ops = map[protocol.Op]fakes.OpScript{protocol.OpStart: {Duration: 5 * time.Second}}
	w.Do(engine.Acquire{Lease: "l1", Attempt: "a1",
		Requirements: engine.Requirements{Capabilities: []string{"kv"}}, Wait: time.Minute})
	if c.settled() {
		t.Fatal("settled while db/kv's start runs")
	}
	w.RunFor(10 * time.Second)
	if !c.settled() {
		t.Fatal("not settled once db/kv is ready")
	}
}

// TestRestartThawsFrozen: an agent restart finds the containers the old
// agent froze thawed, as svcrun's container manager leaves them, so the
// new engine, which knows of no freeze, agrees with the world and its ops
// do not run in a frozen container.
func TestRestartThawsFrozen(t *testing.T) {
	w, c := invariantWorld(t)
	w.Do(engine.Acquire{Lease: "l1", Attempt: "a1",
		Requirements: engine.Requirements{Capabilities: []string{"kv"}}, Wait: time.Minute})
	w.Do(engine.Release{Lease: "l1"})
	if !w.Exec.Frozen("db/kv") {
		t.Fatal("idle db/kv (freeze_ok) is not frozen")
	}
	w.Restart()
	w.RunFor(time.Minute)
	if err := w.Err(); err != nil {
		t.Fatal(err)
	}
	if len(c.failures) > 0 {
		t.Fatal(c.failures)
	}
}

// TestRecentIsEachStepsOwn: the trace a failure shows is each step as it
// was, though the engine writes its ops and timers over at the next step
// and the fake executor its completions.
func TestRecentIsEachStepsOwn(t *testing.T) {
	w, c := invariantWorld(t)
	var want []string
	observe := w.Observe
	w.Observe = func(now time.Time, ev engine.Event, effects []engine.Effect) {
		observe(now, ev, effects)
		want = (&tracedStep{now: now, ev: ev, effects: slices.DeleteFunc(slices.Clone(effects), func(f engine.Effect) bool {
			_, isTimer := f.(*engine.SetTimer)
			return isTimer
		})}).lines(want)
	}
	w.Do(engine.Acquire{Lease: "l1", Attempt: "a1",
		Requirements: engine.Requirements{Capabilities: []string{"kv"}}, Wait: time.Minute})
	w.RunFor(3 * time.Minute)
	w.Do(engine.Release{Lease: "l1"})
	w.RunFor(15 * time.Minute)
	got := c.Recent(60)
	if len(got) != 60 || !strings.Contains(strings.Join(got, "\n"), "run ") {
		t.Fatalf("recent trace of %d lines, want 60 with ops:\n%s", len(got), strings.Join(got, "\n"))
	}
	if !slices.Equal(got, want[len(want)-60:]) {
		t.Errorf("recent trace:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want[len(want)-60:], "\n"))
	}
}
