package engine

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/protocol"
)

// TestEffectNames: every effect has its own name, one lower-case word or
// words joined by dashes, which logs and the event stream show as its kind.
func TestEffectNames(t *testing.T) {
	word := regexp.MustCompile(`^[a-z]+(-[a-z]+)*$`)
	tests := []struct {
		effect Effect
		name   string
	}{
		{&RunOp{}, "run"},
		{&SetTimer{}, "set-timer"},
		{&CancelTimer{}, "cancel-timer"},
		{Kill{}, "kill"},
		{Freeze{}, "freeze"},
		{Thaw{}, "thaw"},
		{Admitted{}, "admitted"},
		{AlreadyHeld{}, "already-held"},
		{Rejected{}, "rejected"},
		{Expired{}, "expired"},
		{Renewed{}, "renewed"},
		{Released{}, "released"},
		{LeaseUnknown{}, "lease-unknown"},
		{PutLease{}, "put-lease"},
		{DeleteLease{}, "delete-lease"},
		{PutService{}, "put-service"},
		{Note{}, "note"},
		{ReapDone{}, "reap-done"},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		got := tt.effect.EffectName()
		if got != tt.name || !word.MatchString(got) {
			t.Errorf("%T: EffectName %q, want %q", tt.effect, got, tt.name)
		}
		if seen[got] {
			t.Errorf("%T: EffectName %q is another effect's too", tt.effect, got)
		}
		seen[got] = true
	}
}

// TestSlabKeepsEveryEffectOfAStep: what a step is handed stays put and its
// own while the step hands out more, across chunks; reset hands the same
// storage out again rather than growing.
func TestSlabKeepsEveryEffectOfAStep(t *testing.T) {
	var s slab[int]
	n := 2*slabChunk + 3
	got := make([]*int, n)
	for i := range got {
		got[i] = s.next()
		*got[i] = i
	}
	for i, p := range got {
		if *p != i {
			t.Fatalf("slot %d holds %d: a later one was handed the same storage", i, *p)
		}
	}
	chunks := len(s.chunks)
	s.reset()
	for i := range n {
		if p := s.next(); p != got[i] {
			t.Fatalf("after reset, slot %d is new storage", i)
		}
	}
	if len(s.chunks) != chunks {
		t.Errorf("%d chunks after reset and as many slots, want %d", len(s.chunks), chunks)
	}
}

// TestStepHandsEachEffectItsOwnStorage: a step with more effects of a kind
// than a chunk of storage holds (a boot fingerprinting every service) gets
// each its own, and the next step reuses them.
// It calls Step itself, not through the rig, which copies what it keeps.
func TestStepHandsEachEffectItsOwnStorage(t *testing.T) {
	n := 2*slabChunk + 3
	var b strings.Builder
	b.WriteString("[module]\nname = \"m\"\nversion = \"1\"\n")
	for i := range n {
		fmt.Fprintf(&b, "[[services]]\nname = \"s%03d\"\nexec = [\"bin/s\"]\n", i)
	}
	m, err := manifest.Parse("module.toml", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	e := New()
	now := time.Unix(1_000_000, 0)
	out := e.Step(now, Boot{Config: Config{NodeID: "n1", Platform: "linux", MemoryBudgetGB: 4,
		MaxConcurrentOps: n, ReapPeriod: time.Hour}, Modules: []ModuleSpec{{Module: m, Enabled: true}}})
	ids := map[OpID]bool{}
	names := map[string]bool{}
	var first *SetTimer
	for _, f := range out {
		switch f := f.(type) {
		case *RunOp:
			if f.Op != protocol.OpFingerprint {
				t.Fatalf("boot ran %s of %s, want fingerprints only", f.Op, f.Target)
			}
			ids[f.ID], names[f.Target.Name] = true, true
		case *SetTimer:
			if first == nil {
				first = f
			}
		}
	}
	if len(ids) != n || len(names) != n {
		t.Fatalf("boot of %d services: %d distinct op ids, %d distinct targets", n, len(ids), len(names))
	}
	if first == nil {
		t.Fatal("boot set no timer")
	}
	for _, f := range e.Step(now, Doctor{Reason: "test"}) {
		if s, ok := f.(*SetTimer); ok {
			if s != first {
				t.Errorf("the next step's timer is new storage: a step's effects are not reused")
			}
			if s.Key.Kind != TimerDoctor {
				t.Errorf("doctor step set %s, want the doctor timer", s.Key.Kind)
			}
			return
		}
	}
	t.Fatal("doctor set no timer")
}

// TestStatusPollAllocatesNothing: the most frequent steps of a node, a
// ready service's status poll and its answer, allocate nothing (the op
// and the next timer included).
func TestStatusPollAllocatesNothing(t *testing.T) {
	world := newAnswering()
	r := rigSetup{world: world.carry}.boot(t, `
[module]
name = "m"
version = "1"
[[services]]
name = "db"
exec = ["bin/db"]
lifecycle = "always"
`)
	if st := r.e.Status().Services[0]; !st.Ready {
		t.Fatalf("db is %s, want ready", st.State)
	}
	db := r.e.services["m/db"]
	// The events are boxed before the measure, as the driver's are.
	fire := Event(Fire{Timer: TimerKey{Kind: TimerStatus, Subject: db.name, Slot: db.slot + uint32(TimerStatus)}})
	status := world.result("m/db", protocol.OpStatus)
	const polls = 50
	dones := make([]Event, polls+1)
	for i := range dones {
		dones[i] = &OpDone{ID: r.e.nextOp + OpID(i) + 1, Outcome: Outcome{Result: status}}
	}
	n := 0
	allocs := testing.AllocsPerRun(polls, func() {
		runs, sets := 0, 0
		for _, ev := range []Event{fire, dones[n]} {
			for _, f := range r.e.Step(r.now, ev) {
				switch f := f.(type) {
				case *RunOp:
					runs++
				case *SetTimer:
					if f.Key.Kind == TimerStatus {
						sets++
						r.now = f.At
					}
				}
			}
		}
		n++
		if runs != 1 || sets != 1 {
			t.Fatalf("poll %d ran %d op(s) and set %d status timer(s), want 1 and 1", n, runs, sets)
		}
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per status poll, want none", allocs)
	}
}

// TestRunOpIndexNamesItsTarget: every op of a target carries the same
// Index, and no two targets the engine holds share one, services and
// probes alike, leases' timer slots handed out between them included; the
// numbers are small, one for each owner of timers the engine made, so
// that a slice by them stays short.
func TestRunOpIndexNamesItsTarget(t *testing.T) {
	world := newAnswering()
	r := rigSetup{world: world.carry}.boot(t, `
[module]
name = "m"
version = "1"
[[services]]
name = "a"
exec = ["bin/a"]
capabilities = ["a"]
[[services]]
name = "b"
exec = ["bin/b"]
lifecycle = "always"
[[probes]]
name = "p"
exec = ["bin/p"]
`)
	byTarget := map[Target]uint32{}
	byIndex := map[uint32]Target{}
	see := func(effects []Effect) {
		for _, f := range effects {
			op, ok := f.(*RunOp)
			if !ok {
				continue
			}
			if i, ok := byTarget[op.Target]; ok && i != op.Index {
				t.Errorf("%s of %s has index %d, its earlier ops %d", op.Op, op.Target, op.Index, i)
			}
			if o, ok := byIndex[op.Index]; ok && o != op.Target {
				t.Errorf("%s and %s share index %d", o, op.Target, op.Index)
			}
			if op.Index == 0 || op.Index > 5 { // 0 is the node's; three targets and two leases
				t.Errorf("%s of %s has index %d, want one of 1-5", op.Op, op.Target, op.Index)
			}
			byTarget[op.Target], byIndex[op.Index] = op.Index, op.Target
		}
	}
	see(r.step(Acquire{Lease: "l1", Attempt: "x1", Requirements: Requirements{Capabilities: []string{"a"}},
		Wait: time.Minute}))
	see(r.step(Release{Lease: "l1"}))
	see(r.step(Doctor{Reason: "test"}))
	see(r.step(Fire{Timer: TimerKey{Kind: TimerDoctor}}))
	see(r.step(Acquire{Lease: "l2", Attempt: "x2", Requirements: Requirements{Capabilities: []string{"a"}},
		Wait: time.Minute}))
	for _, name := range []string{"m/a", "m/b"} {
		s := r.e.services[name]
		see(r.step(Fire{Timer: TimerKey{Kind: TimerStatus, Subject: name, Slot: s.slot + uint32(TimerStatus)}}))
	}
	if len(byTarget) != 3 {
		t.Errorf("ops ran on %v, want m/a, m/b and the probe m/p", byTarget)
	}
}
