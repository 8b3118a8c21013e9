package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/oarbank/svcrun/protocol"
)

// The rules of a running service's timers and of its state's record, one
// test each, stepped on the rig.

// A service's StateSince is when it took its state: kept while the state
// stays (a lease released), moved when it changes (the idle stop).
func TestStatusStateSinceIsWhenTheStateChanged(t *testing.T) {
	w := newReapRig(t)
	readyAt := w.now.Add(-time.Millisecond) // the step before the fingerprint that follows the start
	if got := w.service("m/kv").StateSince; !got.Equal(readyAt) {
		t.Fatalf("ready since %v, want %v", got, readyAt)
	}
	w.step(Release{Lease: "l1"})
	idle := w.timer(TimerIdle)
	if got := w.service("m/kv"); got.State != "ready" || !got.StateSince.Equal(readyAt) {
		t.Fatalf("released: %s since %v, want ready since %v", got.State, got.StateSince, readyAt)
	}
	w.fire(idle)
	if got := w.service("m/kv"); got.State != "stopping" || !got.StateSince.Equal(w.now) {
		t.Fatalf("idle: %s since %v, want stopping since %v", got.State, got.StateSince, w.now)
	}
}

// The idle timer of an on_demand service nobody uses runs while it waits
// for ready too: an adopted daemon that is never ready, with no lease, is
// stopped at idle_timeout_s.
func TestIdleTimerStopsAServiceWaitingForReady(t *testing.T) {
	w := newRig(t, `
[module]
name = "m"
version = "1"
[[services]]
name = "kv"
exec = ["bin/kv"]
capabilities = ["kv"]
idle_timeout_s = 30
start_timeout_s = 600
`)
	w.done(w.op("m/kv", protocol.OpFingerprint), fingerprinted(true))
	idle := w.timer(TimerIdle)
	w.done(w.op("m/kv", protocol.OpReady),
		protocol.Result{Op: protocol.OpReady, Status: &protocol.Status{Running: true}})
	if got := w.service("m/kv").State; got != "waiting-ready" {
		t.Fatalf("adopted and not ready: %s", got)
	}
	w.fire(idle)
	if !w.ran("m/kv", protocol.OpStop) || len(w.noted("stopping: idle for 30s")) != 1 {
		t.Fatalf("idle timer while waiting for ready: no idle stop in %v", w.out)
	}
}

// A fingerprint period that passes while a ready service waits to be
// ready again (a status said not ready) is not lost: the fingerprint runs
// as soon as it is ready again.
func TestFingerprintDueWhileWaitingForReadyAgain(t *testing.T) {
	w := newReapRig(t)
	status, fp := w.timer(TimerStatus), w.timer(TimerFingerprint)
	w.fire(status)
	w.done(w.op("m/kv", protocol.OpStatus), notReady)
	poll := w.timer(TimerReadyPoll)
	w.fire(fp) // the poll's Fire comes after it, late

	if w.ran("m/kv", protocol.OpFingerprint) {
		t.Fatalf("fingerprinted while waiting for ready: %v", w.out)
	}
	w.fire(poll)
	w.done(w.op("m/kv", protocol.OpReady), readyNow)
	if got := w.service("m/kv").State; got != "ready" {
		t.Fatalf("ready again: %s", got)
	}
	if !w.ran("m/kv", protocol.OpFingerprint) {
		t.Fatalf("ready again: the fingerprint due meanwhile did not run: %v", w.out)
	}
}

// reset_after_s: a readiness with no failure to forget sets no timer, nor
// does a reload changing reset_after_s then; a readiness after a failure
// does, and when it fires after a Reset already cleared the failures,
// nothing more is forgotten or stored.
func TestResetAfterTimer(t *testing.T) {
	w0 := newReapRig(t)
	if w0.setsTimer(TimerResetAfter) {
		t.Fatalf("ready with no failures set a reset_after timer: %v", w0.out)
	}
	w0.step(Reload{Modules: w0.modules(strings.Replace(reapModule, `capabilities = ["kv"]`,
		"capabilities = [\"kv\"]\nrestart = { reset_after_s = 3600 }", 1))})
	if w0.setsTimer(TimerResetAfter) {
		t.Fatalf("a reload lengthening reset_after_s of a ready service with no failures set a reset_after timer: %v", w0.out)
	}
	w := newRig(t, `
[module]
name = "m"
version = "1"
[[services]]
name = "kv"
exec = ["bin/kv"]
capabilities = ["kv"]
[services.restart]
max_failures = 5
backoff_initial_s = 10
reset_after_s = 20
`)
	w.done(w.op("m/kv", protocol.OpFingerprint), fpHealthy)
	w.step(Acquire{Lease: "l1", Attempt: "a1", Requirements: Requirements{Capabilities: []string{"kv"}}, Wait: time.Hour})
	w.fail(w.op("m/kv", protocol.OpStart), "exit status 1")
	backoff := w.timer(TimerBackoff)
	w.done(w.op("m/kv", protocol.OpStop), protocol.Result{Op: protocol.OpStop, OpResult: opOK})
	w.fire(backoff)
	w.done(w.op("m/kv", protocol.OpStart), protocol.Result{Op: protocol.OpStart, OpResult: opOK})
	w.done(w.op("m/kv", protocol.OpReady), readyNow)
	w.effect(Admitted{})
	resetAfter := w.timer(TimerResetAfter)
	w.step(Reset{Service: Target{Module: "m", Name: "kv"}})
	if got := w.service("m/kv").Failures; got != 0 {
		t.Fatalf("reset: %d failures", got)
	}
	w.fire(resetAfter)
	for _, f := range w.out {
		if _, ok := f.(PutService); ok {
			t.Fatalf("reset_after after a reset stored the service again: %v", w.out)
		}
	}
	if n := w.noted("forgotten"); len(n) > 0 {
		t.Fatalf("reset_after after a reset: %v", n)
	}
}

// A manual service whose fingerprint fails is fingerprinted again: its
// first since load after the backoff of a failure (whether it runs is
// unknown until one answers), a later one a period later, as when it
// answers: it may be started by its owner any time.
func TestManualFingerprintFailedIsRetried(t *testing.T) {
	tests := []struct {
		name      string
		answered  bool // a fingerprint answered before the one that fails
		wantState string
		wantIn    time.Duration
	}{
		{"first since load", false, "unknown", time.Second},
		{"after one answered", true, "stopped", 5 * time.Minute}, // the default period
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newRig(t, `
[module]
name = "m"
version = "1"
[[services]]
name = "man"
exec = ["bin/man"]
lifecycle = "manual"
`)
			if tc.answered {
				w.done(w.op("m/man", protocol.OpFingerprint), fingerprinted(false))
				w.fire(w.timer(TimerFingerprint))
			}
			w.fail(w.op("m/man", protocol.OpFingerprint), "exit status 2")
			if got := w.service("m/man").State; got != tc.wantState {
				t.Fatalf("after a failed fingerprint: %s, want %s", got, tc.wantState)
			}
			next := w.timer(TimerFingerprint)
			if got := next.At.Sub(w.now); got != tc.wantIn {
				t.Fatalf("fingerprinted again in %v, want %v", got, tc.wantIn)
			}
			w.fire(next)
			if !w.ran("m/man", protocol.OpFingerprint) {
				t.Fatalf("not fingerprinted again: %v", w.out)
			}
		})
	}
}

// A fingerprint that fails after its service crashed (the container
// emptied while it ran) arms no fingerprint timer: a crashed service is no
// longer watched.
func TestFailedFingerprintOfACrashedServiceIsNotRearmed(t *testing.T) {
	w := newReapRig(t)
	w.fire(w.timer(TimerFingerprint))
	fp := w.op("m/kv", protocol.OpFingerprint)
	w.step(ContainerEmptied{Service: Target{Module: "m", Name: "kv"}})
	w.fail(fp, "exit status 2")
	if w.setsTimer(TimerFingerprint) {
		t.Fatalf("a crashed service's failed fingerprint set a fingerprint timer: %v", w.out)
	}
}

// The process container of a manual service that is not running emptying
// changes nothing: it was unusable already, and svcrun never starts it.
func TestManualStoppedContainerEmptiedChangesNothing(t *testing.T) {
	w := newReapRig(t)
	w.step(ContainerEmptied{Service: Target{Module: "m", Name: "man"}})
	if len(w.out) != 0 {
		t.Fatalf("emptied container of a stopped manual service: %v", w.out)
	}
}

// An idle stop's op runs in the step that decides it, before the other
// services that step woke: with one op slot, the idle service's stop takes
// it, and a start that the same step let through (here, a fingerprint
// lowering the idle service's memory) queues behind it.
func TestIdleStopTakesTheFreeSlotFirst(t *testing.T) {
	cfg := rigConfig()
	cfg.MaxConcurrentOps = 1
	w := rigSetup{cfg: cfg}.boot(t, `
[module]
name = "m"
version = "1"
[[services]]
name = "a"
exec = ["bin/a"]
capabilities = ["a"]
reserves_host_memory = true
idle_timeout_s = 30
[[services]]
name = "b"
exec = ["bin/b"]
capabilities = ["b"]
reserves_host_memory = true
`)
	mem := func(running bool, gb float64) protocol.Result {
		return protocol.Result{Op: protocol.OpFingerprint,
			Fingerprint: &protocol.Fingerprint{Healthy: true, Running: &running, Reserve: &protocol.Reserve{MemGB: gb}}}
	}
	w.done(w.op("m/a", protocol.OpFingerprint), mem(false, 3))
	w.done(w.op("m/b", protocol.OpFingerprint), mem(false, 2))
	w.step(Acquire{Lease: "la", Attempt: "a1", Requirements: Requirements{Capabilities: []string{"a"}}, Wait: time.Hour})
	w.done(w.op("m/a", protocol.OpStart), protocol.Result{Op: protocol.OpStart, OpResult: opOK})
	w.done(w.op("m/a", protocol.OpReady), readyNow)
	w.effect(Admitted{})
	w.done(w.op("m/a", protocol.OpFingerprint), mem(true, 3)) // the one after the start
	fp := w.timer(TimerFingerprint)
	w.step(Release{Lease: "la"})
	idle := w.timer(TimerIdle)
	w.step(Acquire{Lease: "lb", Attempt: "a2", Requirements: Requirements{Capabilities: []string{"b"}}, Wait: time.Hour})
	if len(w.noted("waits for memory")) != 1 {
		t.Fatalf("3 + 2 GB of 4: b does not wait for memory: %v", w.out)
	}
	// a's fingerprint runs when its idle time ends: the stop waits for it.
	w.fire(fp)
	fpOp := w.op("m/a", protocol.OpFingerprint)
	w.fire(idle)
	if w.ran("m/a", protocol.OpStop) {
		t.Fatalf("stop while the fingerprint runs: %v", w.out)
	}
	w.done(fpOp, mem(true, 1))
	if !w.ran("m/a", protocol.OpStop) || w.ran("m/b", protocol.OpStart) {
		t.Fatalf("the idle stop did not take the free slot first: %v", w.out)
	}
	w.done(w.op("m/a", protocol.OpStop), protocol.Result{Op: protocol.OpStop, OpResult: opOK})
	if !w.ran("m/b", protocol.OpStart) {
		t.Fatalf("b's start queued behind the stop did not run: %v", w.out)
	}
}
