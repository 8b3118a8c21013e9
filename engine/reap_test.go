package engine

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/oarbank/svcrun/protocol"
)

// reapModule is the module of the reap tests: a service m/kv and a
// manual service m/man.
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

// newReapRig boots reapModule and brings m/kv up for lease l1 (attempt
// a1); m/man stays stopped.
func newReapRig(t *testing.T) *rig {
	t.Helper()
	w := newRig(t, reapModule)
	kv, man := w.op("m/kv", protocol.OpFingerprint), w.op("m/man", protocol.OpFingerprint)
	w.done(kv, fingerprinted(false))
	w.done(man, fingerprinted(false))
	w.step(Acquire{Lease: "l1", Attempt: "a1", Requirements: Requirements{Capabilities: []string{"kv"}},
		Wait: time.Minute})
	w.done(w.op("m/kv", protocol.OpStart),
		protocol.Result{Op: protocol.OpStart, OpResult: &protocol.OpResult{OK: true, Changed: true}})
	w.done(w.op("m/kv", protocol.OpReady),
		protocol.Result{Op: protocol.OpReady, Status: &protocol.Status{Running: true, Ready: true}})
	w.effect(Admitted{})
	fingerprintedRunning(w, "m/kv")
	return w
}

// fingerprintedRunning answers the fingerprint that follows a start: it
// runs. w.out keeps the effects of the step that made it ready too, its
// watch timers among them.
func fingerprintedRunning(w *rig, name string) {
	w.t.Helper()
	ready := w.out
	w.done(w.op(name, protocol.OpFingerprint), fingerprinted(true))
	w.out = append(ready, w.out...)
}

// noReapDone fails the test if the last step ended a reap round.
func noReapDone(w *rig) {
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
	w := newReapRig(t)
	w.step(ReapNow{Ticket: "t1"})
	list := w.op("m/kv", protocol.OpListOwned)
	w.step(ReapNow{Ticket: "t2"})
	for _, f := range w.out {
		if r, ok := f.(*RunOp); ok {
			t.Fatalf("a request during a round started ops: %v", r)
		}
	}
	w.done(list, listed(labelled("o-live", "a1"), labelled("o-dead", "a9"),
		protocol.Object{ID: "o-hand", Kind: "volume", Labels: map[string]string{}}, labelled("o-sticky", "a8")))
	noReapDone(w)
	w.done(w.op("m/kv", protocol.OpDestroy),
		protocol.Result{Op: protocol.OpDestroy, OpResult: &protocol.OpResult{OK: true, Changed: true}})
	noReapDone(w)
	w.fail(w.op("m/kv", protocol.OpDestroy), "exit status 1: busy")
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
	list = w.op("m/kv", protocol.OpListOwned)
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
			w := newReapRig(t)
			w.step(ReapNow{Ticket: "t1"})
			list := w.op("m/kv", protocol.OpListOwned)
			if tt.stopAfterListing {
				// Two objects, so that the second destroy is still queued
				// when the first one's crash stops the service.
				w.done(list, listed(labelled("o-first", "a9"), labelled("o-dead", "a9")))
				destroy := w.op("m/kv", protocol.OpDestroy)
				w.step(ContainerEmptied{Service: Target{Module: "m", Name: "kv"}})
				noReapDone(w)
				w.done(destroy, protocol.Result{Op: protocol.OpDestroy, OpResult: &protocol.OpResult{OK: true, Changed: true}})
				tt.want.Objects = append([]ReapObject{{ID: "o-first", Kind: "volume", Attempt: "a9",
					Outcome: ReapDestroyed}}, tt.want.Objects...)
			} else {
				w.step(&OpDone{ID: list, Outcome: Outcome{Failure: FailOp, Message: "exit status 3"}})
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
	w := newReapRig(t)
	w.step(ReapNow{Ticket: "t1"})
	list := w.op("m/kv", protocol.OpListOwned)
	// o-first's destroy runs while the other two queue behind it.
	w.done(list, listed(labelled("o-first", "a9"), labelled("o-back", "a8"), labelled("o-dead", "a7")))
	destroy := w.op("m/kv", protocol.OpDestroy)
	w.step(Acquire{Lease: "l2", Attempt: "a8", Requirements: Requirements{Capabilities: []string{"kv"}},
		Wait: time.Minute})
	w.effect(Admitted{})
	w.done(destroy, protocol.Result{Op: protocol.OpDestroy, OpResult: &protocol.OpResult{OK: true, Changed: true}})
	noReapDone(w)
	// o-back is skipped: the next destroy is o-dead's.
	destroy = w.op("m/kv", protocol.OpDestroy)
	for _, f := range w.out {
		if r, ok := f.(*RunOp); ok && r.Op == protocol.OpDestroy && !reflect.DeepEqual(r.Args, []string{"o-dead"}) {
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
	w := newReapRig(t)
	w.fire(w.timer(TimerStatus))
	status := w.op("m/kv", protocol.OpStatus)
	w.step(ReapNow{Ticket: "t1"})
	off := w.modules(reapModule)
	off[0].Enabled = false
	w.step(Reload{Modules: off, Reason: "disabled by hand"})
	noReapDone(w)
	w.done(status, protocol.Result{Op: protocol.OpStatus, Status: &protocol.Status{Running: true, Ready: true}})
	d := w.effect(ReapDone{}).(ReapDone)
	if want := (ReapService{Service: "m/kv",
		Failed: "not listed: it is stopping"}); !reflect.DeepEqual(d.Services[0], want) {
		t.Fatalf("\n got %+v\nwant %+v", d.Services[0], want)
	}
}

// reapTick fires the periodic reap round a reap period after the last
// step and reports whether it listed m/kv, and the round's note.
func reapTick(w *rig) (OpID, bool, string) {
	w.t.Helper()
	w.now = w.now.Add(time.Minute - time.Millisecond) // step adds it back
	w.step(Fire{Timer: TimerKey{Kind: TimerReap, Slot: uint32(TimerReap)}})
	note := ""
	for _, f := range w.out {
		if n, ok := f.(Note); ok && n.Subject == "reap" {
			note = n.Text
		}
	}
	for _, f := range w.out {
		if r, ok := f.(*RunOp); ok && r.Target.String() == "m/kv" && r.Op == protocol.OpListOwned {
			return r.ID, true, note
		}
	}
	return 0, false, note
}

// destroyOK ends the last step's destroy of m/kv.
func destroyOK(w *rig) {
	w.t.Helper()
	w.done(w.op("m/kv", protocol.OpDestroy),
		protocol.Result{Op: protocol.OpDestroy, OpResult: &protocol.OpResult{OK: true, Changed: true}})
}

// A periodic round lists a running service only when it may hold an
// object to reap: a lease that used it ended, or its last listing left
// something to look at again. Every case lists m/kv in the first round
// (every running service, as after a restart); the second round lists it
// or skips it as clean, and says so.
func TestReapRoundListsOnlyWhatMayLeak(t *testing.T) {
	acquire := func(w *rig, lease LeaseID, attempt string) {
		w.step(Acquire{Lease: lease, Attempt: attempt, Requirements: Requirements{Capabilities: []string{"kv"}},
			Wait: time.Minute})
		w.effect(Admitted{})
	}
	tests := []struct {
		name   string
		before func(w *rig) // before the first round
		// first answers the first round's listing; then comes what
		// happens between the two rounds.
		first   func(w *rig, list OpID)
		between func(w *rig)
		// listedFor is why the second round lists m/kv, "" for a clean
		// one: its note says it skipped m/kv, or, when it lists every
		// running service, nothing.
		listedFor string
	}{{
		name:  "clean",
		first: func(w *rig, list OpID) { w.done(list, listed()) },
	}, {
		name: "only foreign and unlabelled objects",
		first: func(w *rig, list OpID) {
			foreign := labelled("o-foreign", "a9")
			foreign.Labels[protocol.LabelNode] = "n2"
			w.done(list, listed(foreign, protocol.Object{ID: "o-hand", Kind: "volume", Labels: map[string]string{}}))
		},
	}, {
		name:  "a lease that used it ended",
		first: func(w *rig, list OpID) { w.done(list, listed()) },
		between: func(w *rig) {
			acquire(w, "l2", "a2")
			w.step(Release{Lease: "l2"})
		},
		listedFor: "a lease that used it ended",
	}, {
		name:  "a lease that used it expired",
		first: func(w *rig, list OpID) { w.done(list, listed()) },
		between: func(w *rig) {
			w.step(Acquire{Lease: "l2", Attempt: "a2", Requirements: Requirements{Capabilities: []string{"kv"}},
				Wait: time.Minute, TTL: time.Second})
			w.fire(w.timer(TimerLeaseTTL))
			w.effect(Expired{})
		},
		listedFor: "a lease that used it ended",
	}, {
		name: "an orphan destroyed, to see it gone",
		first: func(w *rig, list OpID) {
			w.done(list, listed(labelled("o-dead", "a9")))
			destroyOK(w)
		},
		listedFor: "recheck: orphan o-dead",
	}, {
		name: "a destroy failed",
		first: func(w *rig, list OpID) {
			w.done(list, listed(labelled("o-dead", "a9")))
			w.fail(w.op("m/kv", protocol.OpDestroy), "exit status 1: busy")
		},
		listedFor: "recheck: orphan o-dead",
	}, {
		name:      "its listing failed",
		first:     func(w *rig, list OpID) { w.fail(list, "exit status 3") },
		listedFor: "recheck: its listing failed",
	}, {
		name:      "its listing gave no list (a protocol failure)",
		first:     func(w *rig, list OpID) { w.done(list, protocol.Result{Op: protocol.OpListOwned}) },
		listedFor: "recheck: its listing failed",
	}, {
		name:      "an object of a live attempt",
		before:    func(w *rig) { acquire(w, "l2", "a2") },
		first:     func(w *rig, list OpID) { w.done(list, listed(labelled("o-live", "a2"))) },
		listedFor: "recheck: o-live, attempt live",
	}, {
		name: "an object newer than the snapshot",
		first: func(w *rig, list OpID) {
			o := labelled("o-new", "a9")
			o.CreatedAt = w.now.Add(time.Millisecond) // after the round began
			w.done(list, listed(o))
		},
		listedFor: "recheck: o-new, created after the snapshot",
	}, {
		name: "a destroy dropped: its attempt live again",
		first: func(w *rig, list OpID) {
			w.done(list, listed(labelled("o-first", "a9"), labelled("o-back", "a8")))
			destroy := w.op("m/kv", protocol.OpDestroy)
			acquire(w, "l2", "a8")
			w.done(destroy, protocol.Result{Op: protocol.OpDestroy, OpResult: &protocol.OpResult{OK: true, Changed: true}})
		},
		listedFor: "recheck: orphan o-first",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newReapRig(t)
			w.step(Release{Lease: "l1"})
			if tt.before != nil {
				tt.before(w)
			}
			list, ok, note := reapTick(w)
			if !ok || note != "" {
				t.Fatalf("round 1: listed %v, note %q; want m/kv listed, no note", ok, note)
			}
			tt.first(w, list)
			if tt.between != nil {
				tt.between(w)
			}
			kv := w.e.services["m/kv"]
			if kv.reapWhy != tt.listedFor {
				t.Errorf("m/kv is listed next for %q, want %q", kv.reapWhy, tt.listedFor)
			}
			_, ok, note = reapTick(w)
			wantNote := ""
			if tt.listedFor == "" {
				wantNote = "round 2: nothing to list, 1 running service(s) skipped as clean"
			}
			if ok != (tt.listedFor != "") || note != wantNote {
				t.Errorf("round 2: listed m/kv %v, note %q; want listed %v, note %q", ok, note, tt.listedFor != "", wantNote)
			}
		})
	}
}

// Every ReapSweepPeriod a periodic round lists every running service, clean
// or not (an object may carry the label of a service that no lease of its
// attempt used); svcrun reap lists them all whenever it is asked.
func TestReapSweepAndReapNowListEverything(t *testing.T) {
	w := newReapRig(t)
	w.step(Release{Lease: "l1"})
	list, _, _ := reapTick(w)
	first := w.now
	w.done(list, listed())
	for n := 2; ; n++ {
		list, ok, note := reapTick(w)
		sweepDue := !w.now.Before(first.Add(10 * time.Minute))
		if ok != sweepDue {
			t.Fatalf("round %d, %v after the first: listed %v (note %q)", n, w.now.Sub(first), ok, note)
		}
		if !ok {
			continue
		}
		if want := fmt.Sprintf("round %d: sweep (every 10m0s): every running service listed (1)", n); note != want {
			t.Errorf("sweep note %q, want %q", note, want)
		}
		w.done(list, listed())
		break
	}
	if _, ok, _ := reapTick(w); ok {
		t.Fatal("the round after the sweep listed a clean service")
	}
	w.step(ReapNow{Ticket: "t1"})
	w.done(w.op("m/kv", protocol.OpListOwned), listed())
	if d := w.effect(ReapDone{}).(ReapDone); !reflect.DeepEqual(d.Services[0], ReapService{Service: "m/kv"}) {
		t.Errorf("svcrun reap: %+v, want m/kv listed", d.Services[0])
	}
}

// A round's note names at most reapNoteNames of the services it lists, and
// counts the others.
func TestReapNoteNamesTheFirstListed(t *testing.T) {
	var mod strings.Builder
	mod.WriteString("[module]\nname = \"m\"\nversion = \"1\"\n")
	var caps []string
	for i := range 25 {
		fmt.Fprintf(&mod, "[[services]]\nname = \"s%02d\"\nexec = [\"bin/s\"]\nlifecycle = "+
			"\"always\"\ncapabilities = [\"c%02d\"]\n", i, i)
		if i < 22 {
			caps = append(caps, fmt.Sprintf("c%02d", i))
		}
	}
	// Every op is answered within its instant, a start leaving its
	// service running.
	started := map[string]bool{}
	w := rigSetup{world: func(f Effect) Event {
		r, ok := f.(*RunOp)
		if !ok {
			return nil
		}
		res := protocol.Result{Op: r.Op}
		switch r.Op {
		case protocol.OpFingerprint:
			running := started[r.Target.String()]
			res.Fingerprint = &protocol.Fingerprint{Healthy: true, Running: &running}
		case protocol.OpStart:
			started[r.Target.String()] = true
			res.OpResult = &protocol.OpResult{OK: true, Changed: true}
		case protocol.OpReady:
			res.Status = &protocol.Status{Running: true, Ready: true}
		case protocol.OpListOwned:
			res.OwnedList = &protocol.OwnedList{}
		}
		return &OpDone{ID: r.ID, Outcome: Outcome{Result: res}}
	}}.boot(t, mod.String())
	reapTick(w)
	w.step(Acquire{Lease: "l1", Attempt: "a1", Requirements: Requirements{Capabilities: caps}, Wait: time.Minute})
	w.effect(Admitted{})
	w.step(Release{Lease: "l1"})
	_, _, note := reapTick(w)
	var names []string
	for i := range 20 {
		names = append(names, fmt.Sprintf("m/s%02d (a lease that used it ended)", i))
	}
	if want := "round 2: listing " + strings.Join(names,
		", ") + " and 2 more; 3 running service(s) skipped as clean"; note != want {
		t.Errorf("note\n got %q\nwant %q", note, want)
	}
}

// With no service running, periodic rounds, the sweep among them, have
// nothing to say.
func TestReapRoundsWithNothingRunningGoWithoutNotes(t *testing.T) {
	w := newRig(t, "[module]\nname = \"m\"\nversion = \"1\"\n[[services]]\nname = \"man\"\nexec = "+
		"[\"bin/man\"]\nlifecycle = \"manual\"\n")
	w.done(w.op("m/man", protocol.OpFingerprint), fingerprinted(false))
	for n := 1; n <= 12; n++ { // past the sweep at 10 min
		if _, _, note := reapTick(w); note != "" {
			t.Fatalf("round %d: note %q", n, note)
		}
	}
}

// --force comes once an orphan has been one for ForceAfter reap periods of
// time, from the snapshot of the round that first found it: rounds asked
// for in a burst are not periods.
func TestReapForceCountsPeriodsOfTime(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name   string
		rounds []time.Duration // snapshot times, from the first
		forced []bool
	}{
		{"four rounds asked in four seconds", []time.Duration{0, s, 2 * s, 3 * s}, []bool{false, false, false, false}},
		{"one round a period", []time.Duration{0, 60 * s, 120 * s, 180 * s}, []bool{false, false, false, true}},
		{"asked rounds between the periods", []time.Duration{0, 30 * s, 60 * s, 90 * s, 120 * s, 179 * s, 180 * s},
			[]bool{false, false, false, false, false, false, true}},
		{"rounds late", []time.Duration{0, 170 * s, 200 * s}, []bool{false, false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newReapRig(t)
			t0 := w.now.Add(time.Hour)
			for i, at := range tc.rounds {
				w.now = t0.Add(at - time.Millisecond) // step adds 1ms
				w.step(ReapNow{Ticket: fmt.Sprint("t", i)})
				w.done(w.op("m/kv", protocol.OpListOwned), listed(labelled("o-1", "a9")))
				var destroy *RunOp
				for _, f := range w.out {
					if r, ok := f.(*RunOp); ok && r.Op == protocol.OpDestroy {
						destroy = r
					}
				}
				if destroy == nil {
					t.Fatalf("round %d at %v: no destroy in %v", i, at, w.out)
				}
				if forced := len(destroy.Args) == 2 && destroy.Args[1] == "--force"; forced != tc.forced[i] {
					t.Fatalf("round %d at %v: destroy %v, want forced=%v", i, at, destroy.Args, tc.forced[i])
				}
				w.done(destroy.ID, protocol.Result{Op: protocol.OpDestroy, OpResult: &protocol.OpResult{OK: true}})
				w.effect(ReapDone{})
			}
		})
	}
}
