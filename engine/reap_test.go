package engine

import (
	"reflect"
	"testing"
	"time"

	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/protocol"
)

// reapWorld is an engine with a running service m/kv (leased by attempt
// a1) and a manual service m/man, stepped by hand.
type reapWorld struct {
	t   *testing.T
	e   *Engine
	now time.Time
	out []Effect
}

// reapModule is the module of the reap world.
const reapModule = `
[module]
name = "m"
version = "1"
[[services]]
name = "kv"
exec = ["bin/kv"]
capabilities = ["kv"]
[[services]]
name = "man"
exec = ["bin/man"]
lifecycle = "manual"
`

func newReapWorld(t *testing.T) *reapWorld {
	t.Helper()
	m, err := manifest.Parse("module.toml", []byte(reapModule))
	if err != nil {
		t.Fatal(err)
	}
	w := &reapWorld{t: t, e: New(), now: time.Unix(1_000_000, 0)}
	w.step(Boot{Config: Config{NodeID: "n1", Platform: "linux", MemoryBudgetGB: 4, MaxConcurrentOps: 4}, Modules: []ModuleSpec{{Module: m, Enabled: true}}})
	no := false
	boot := w.out
	w.done(opOf(t, boot, "m/kv", protocol.OpFingerprint), protocol.Result{Op: protocol.OpFingerprint, Fingerprint: &protocol.Fingerprint{Healthy: true, Running: &no}})
	w.done(opOf(t, boot, "m/man", protocol.OpFingerprint), protocol.Result{Op: protocol.OpFingerprint, Fingerprint: &protocol.Fingerprint{Healthy: true, Running: &no}})
	w.step(Acquire{Lease: "l1", Attempt: "a1", Requirements: Requirements{Capabilities: []string{"kv"}}, Wait: time.Minute})
	w.done(opOf(t, w.out, "m/kv", protocol.OpStart), protocol.Result{Op: protocol.OpStart, OpResult: &protocol.OpResult{OK: true, Changed: true}})
	w.done(opOf(t, w.out, "m/kv", protocol.OpReady), protocol.Result{Op: protocol.OpReady, Status: &protocol.Status{Running: true, Ready: true}})
	w.effect(Admitted{})
	return w
}

func (w *reapWorld) step(ev Event) {
	w.now = w.now.Add(time.Millisecond)
	w.out = append([]Effect(nil), w.e.Step(w.now, ev)...)
}

func (w *reapWorld) done(id OpID, r protocol.Result) {
	w.step(OpDone{ID: id, Outcome: Outcome{Result: r}})
}

func (w *reapWorld) fail(id OpID, msg string) {
	w.step(OpDone{ID: id, Outcome: Outcome{Failure: FailOp, Message: msg}})
}

// effect returns the last step's effect of like's type, failing without one.
func (w *reapWorld) effect(like Effect) Effect {
	w.t.Helper()
	for _, f := range w.out {
		if reflect.TypeOf(f) == reflect.TypeOf(like) {
			return f
		}
	}
	w.t.Fatalf("no %T in %v", like, w.out)
	return nil
}

func (w *reapWorld) noReapDone() {
	w.t.Helper()
	for _, f := range w.out {
		if d, ok := f.(ReapDone); ok {
			w.t.Fatalf("round %d ended early: %+v", d.Round, d)
		}
	}
}

func labelled(id, attempt string) protocol.Object {
	return protocol.Object{ID: id, Kind: "volume", Labels: map[string]string{
		protocol.LabelAttemptID: attempt, protocol.LabelNode: "n1", protocol.LabelService: "m/kv"}}
}

func listed(objs ...protocol.Object) protocol.Result {
	return protocol.Result{Op: protocol.OpListOwned, OwnedList: &protocol.OwnedList{Objects: objs}}
}

// A reap round asked for ends with a ReapDone, once every listing and
// destroy is done: what was destroyed, kept and why, and what failed. A
// second request while the round runs waits for the next round.
func TestReapDoneReportsTheRound(t *testing.T) {
	w := newReapWorld(t)
	w.step(ReapNow{Ticket: "t1"})
	list := opOf(t, w.out, "m/kv", protocol.OpListOwned)
	w.step(ReapNow{Ticket: "t2"})
	for _, f := range w.out {
		if r, ok := f.(RunOp); ok {
			t.Fatalf("a request during a round started ops: %v", r)
		}
	}
	w.done(list, listed(labelled("o-live", "a1"), labelled("o-dead", "a9"), protocol.Object{ID: "o-hand", Kind: "volume", Labels: map[string]string{}}, labelled("o-sticky", "a8")))
	w.noReapDone()
	w.done(opOf(t, w.out, "m/kv", protocol.OpDestroy), protocol.Result{Op: protocol.OpDestroy, OpResult: &protocol.OpResult{OK: true, Changed: true}})
	w.noReapDone()
	w.fail(opOf(t, w.out, "m/kv", protocol.OpDestroy), "exit status 1: busy")
	d := w.effect(ReapDone{}).(ReapDone)
	want := ReapDone{Round: 1, Tickets: []string{"t1"}, Snapshot: d.Snapshot, Services: []ReapService{
		{Service: "m/kv", Objects: []ReapObject{
			{ID: "o-live", Kind: "volume", Attempt: "a1", Outcome: ReapKept, Reason: "attempt live"},
			{ID: "o-dead", Kind: "volume", Attempt: "a9", Outcome: ReapDestroyed},
			{ID: "o-hand", Kind: "volume", Outcome: ReapKept, Reason: "missing labels"},
			{ID: "o-sticky", Kind: "volume", Attempt: "a8", Outcome: ReapFailed, Reason: "destroy failed: exit status 1: busy"},
		}},
		{Service: "m/man", Skipped: "manual: svcrun only fingerprints it"},
	}}
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("round 1:\n got %+v\nwant %+v", d, want)
	}
	if got := FormatEffect(d); got != "reap round 1 done (t1): 1 destroyed, 2 kept, 1 failed" {
		t.Errorf("journal line %q", got)
	}
	// t2's round starts as t1's ends, with its own snapshot.
	list = opOf(t, w.out, "m/kv", protocol.OpListOwned)
	w.done(list, listed())
	d = w.effect(ReapDone{}).(ReapDone)
	if d.Round != 2 || !reflect.DeepEqual(d.Tickets, []string{"t2"}) || !d.Snapshot.After(want.Snapshot) {
		t.Fatalf("round 2: %+v", d)
	}
}

// A service whose listing fails, or that stops while its round runs,
// leaves it: the round ends and says what was not listed or not destroyed.
func TestReapRoundEndsWhenItsServiceStops(t *testing.T) {
	tests := []struct {
		name string
		// stopAfterListing: the service crashes after its listing, with a
		// destroy queued; else its listing fails.
		stopAfterListing bool
		want             ReapService
	}{{
		name: "its listing fails",
		want: ReapService{Service: "m/kv", Failed: "list_owned failed: exit status 3"},
	}, {
		name:             "with a destroy queued",
		stopAfterListing: true,
		want: ReapService{Service: "m/kv", Objects: []ReapObject{
			{ID: "o-dead", Kind: "volume", Attempt: "a9", Outcome: ReapFailed, Reason: "not destroyed: it is stopped"},
		}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newReapWorld(t)
			w.step(ReapNow{Ticket: "t1"})
			list := opOf(t, w.out, "m/kv", protocol.OpListOwned)
			if tt.stopAfterListing {
				// Two objects, so that the second destroy is still queued
				// when the first one's crash stops the service.
				w.done(list, listed(labelled("o-first", "a9"), labelled("o-dead", "a9")))
				destroy := opOf(t, w.out, "m/kv", protocol.OpDestroy)
				w.step(ContainerEmptied{Service: Target{Module: "m", Name: "kv"}})
				w.noReapDone()
				w.done(destroy, protocol.Result{Op: protocol.OpDestroy, OpResult: &protocol.OpResult{OK: true, Changed: true}})
				tt.want.Objects = append([]ReapObject{{ID: "o-first", Kind: "volume", Attempt: "a9", Outcome: ReapDestroyed}}, tt.want.Objects...)
			} else {
				w.step(OpDone{ID: list, Outcome: Outcome{Failure: FailOp, Message: "exit status 3"}})
			}
			d := w.effect(ReapDone{}).(ReapDone)
			if !reflect.DeepEqual(d.Services[0], tt.want) {
				t.Fatalf("\n got %+v\nwant %+v", d.Services[0], tt.want)
			}
		})
	}
}

// A destroy queued by a round asked for is dropped when its attempt is live
// again before it runs (a lease of that attempt came meanwhile): the round
// reports the object kept, not failed, and the destroys of other attempts
// still run.
func TestReapKeepsAnObjectWhoseAttemptIsLiveAgain(t *testing.T) {
	w := newReapWorld(t)
	w.step(ReapNow{Ticket: "t1"})
	list := opOf(t, w.out, "m/kv", protocol.OpListOwned)
	// o-first's destroy runs while the other two queue behind it.
	w.done(list, listed(labelled("o-first", "a9"), labelled("o-back", "a8"), labelled("o-dead", "a7")))
	destroy := opOf(t, w.out, "m/kv", protocol.OpDestroy)
	w.step(Acquire{Lease: "l2", Attempt: "a8", Requirements: Requirements{Capabilities: []string{"kv"}}, Wait: time.Minute})
	w.effect(Admitted{})
	w.done(destroy, protocol.Result{Op: protocol.OpDestroy, OpResult: &protocol.OpResult{OK: true, Changed: true}})
	w.noReapDone()
	// o-back is skipped: the next destroy is o-dead's.
	destroy = opOf(t, w.out, "m/kv", protocol.OpDestroy)
	for _, f := range w.out {
		if r, ok := f.(RunOp); ok && r.Op == protocol.OpDestroy && !reflect.DeepEqual(r.Args, []string{"o-dead"}) {
			t.Fatalf("destroy of %v, want o-dead's", r.Args)
		}
	}
	w.done(destroy, protocol.Result{Op: protocol.OpDestroy, OpResult: &protocol.OpResult{OK: true, Changed: true}})
	d := w.effect(ReapDone{}).(ReapDone)
	want := ReapService{Service: "m/kv", Objects: []ReapObject{
		{ID: "o-first", Kind: "volume", Attempt: "a9", Outcome: ReapDestroyed},
		{ID: "o-back", Kind: "volume", Attempt: "a8", Outcome: ReapKept, Reason: "attempt live again"},
		{ID: "o-dead", Kind: "volume", Attempt: "a7", Outcome: ReapDestroyed},
	}}
	if !reflect.DeepEqual(d.Services[0], want) {
		t.Fatalf("\n got %+v\nwant %+v", d.Services[0], want)
	}
}

// A service that leaves a round before it is listed (disabled while
// another op of it ran) ends the round as not listed, saying why.
func TestReapRoundEndsWhenItsServiceLeavesUnlisted(t *testing.T) {
	w := newReapWorld(t)
	w.fire(w.timer(TimerStatus))
	status := opOf(t, w.out, "m/kv", protocol.OpStatus)
	w.step(ReapNow{Ticket: "t1"})
	m, err := manifest.Parse("module.toml", []byte(reapModule))
	if err != nil {
		t.Fatal(err)
	}
	w.step(Reload{Modules: []ModuleSpec{{Module: m, Enabled: false}}, Reason: "disabled by hand"})
	w.noReapDone()
	w.done(status, protocol.Result{Op: protocol.OpStatus, Status: &protocol.Status{Running: true, Ready: true}})
	d := w.effect(ReapDone{}).(ReapDone)
	if want := (ReapService{Service: "m/kv", Failed: "not listed: it is stopping"}); !reflect.DeepEqual(d.Services[0], want) {
		t.Fatalf("\n got %+v\nwant %+v", d.Services[0], want)
	}
}
