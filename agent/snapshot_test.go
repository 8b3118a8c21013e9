package agent

import (
	"context"
	"log/slog"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
)

// startWith runs an agent on the test configuration with opts (their
// ConfigPath, Logger and NoContainers are set here) and stops it at the
// end of the test.
func startWith(t *testing.T, opts Options, setup func(*Agent)) *Agent {
	t.Helper()
	opts.ConfigPath = testConfig(t)
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(testWriter{t}, nil))
	}
	opts.NoContainers = true
	opts.PressureFile = noPressure
	a, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(a)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return a
}

// unanswered steps n events that answer no caller (doctor: the probes
// run again) and returns once the loop has taken them.
func unanswered(t *testing.T, ctx context.Context, a *Agent, n int) {
	t.Helper()
	for range n {
		if err := a.Doctor("snapshot test"); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.onLoop(ctx, func() {}); err != nil { // after the n, in order
		t.Fatal(err)
	}
}

// TestSnapshotsOnlyWhenRead: steps that answer nobody and that nobody
// reads build no status snapshot beyond one a publishEvery; here the clock
// never moves, so hundreds of stored steps build none at all, and the next
// reader gets one, with every one of them.
func TestSnapshotsOnlyWhenRead(t *testing.T) {
	a := startWith(t, Options{Clock: clock.NewMock()}, nil)
	guard, stop := context.WithTimeout(context.Background(), 60*time.Second) // only a guard against a hang
	defer stop()
	st, err := a.Status(guard)
	if err != nil {
		t.Fatal(err)
	}
	built := a.snaps.built.Load()
	unanswered(t, guard, a, 400)
	steps := a.snaps.stored.Load()
	if steps < st.Steps+400 {
		t.Fatalf("%d steps stored, want at least 400 more than %d", steps, st.Steps)
	}
	if n := a.snaps.built.Load() - built; n > 0 {
		t.Errorf("%d snapshots built for %d steps without a reader and without time passing, want 0", n, steps-st.Steps)
	}
	after, err := a.Status(guard)
	if err != nil {
		t.Fatal(err)
	}
	if after.Steps < steps {
		t.Errorf("status after the steps shows step %d, want at least %d", after.Steps, steps)
	}
	if n := a.snaps.built.Load() - built; n != 1 {
		t.Errorf("%d snapshots built for one reader, want 1", n)
	}
}

// TestStatusShowsOwnStep: a caller who heard its acquire or release
// answered and then asks for status sees it, although no snapshot is
// built at each step. On one P the caller often runs before the loop has
// published the step it was answered for: the case to get right.
func TestStatusShowsOwnStep(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	a := startWith(t, Options{}, nil)
	guard, stop := context.WithTimeout(context.Background(), 60*time.Second) // only a guard against a hang
	defer stop()
	held := func(st Status, g Grant) bool {
		for _, l := range st.Leases {
			if l.ID == g.Lease && l.Admitted {
				return true
			}
		}
		return false
	}
	for i := range 500 {
		g, err := a.Acquire(guard, AcquireRequest{Job: "own"})
		if err != nil {
			t.Fatal(err)
		}
		st, err := a.Status(guard)
		if err != nil {
			t.Fatal(err)
		}
		if !held(st, g) {
			t.Fatalf("acquire %d: status after the grant does not show lease %s", i, g.Lease)
		}
		if err := a.Release(guard, g.Lease); err != nil {
			t.Fatal(err)
		}
		if st, err = a.Status(guard); err != nil {
			t.Fatal(err)
		}
		if held(st, g) {
			t.Fatalf("release %d: status after it still shows lease %s", i, g.Lease)
		}
	}
}

// TestStatusWhileStallAfterUnreadSteps: steps stored without a reader or
// an answer, and then a store write that stalls: status answers (once the write has
// waited slowWrite) from the last published snapshot, which has no step
// that is not stored, rather than waiting for the disk; once the disk is
// back it shows every step.
func TestStatusWhileStallAfterUnreadSteps(t *testing.T) {
	var stall *stallStore
	a := startWith(t, Options{}, func(a *Agent) {
		stall = &stallStore{Store: a.db}
		a.persist = stall
		a.slowWrite = 50 * time.Millisecond
	})
	guard, stop := context.WithTimeout(context.Background(), 60*time.Second) // only a guard against a hang
	defer stop()
	before, err := a.Status(guard)
	if err != nil {
		t.Fatal(err)
	}
	unanswered(t, guard, a, 20)
	stall.arm()
	var once sync.Once
	release := func() { once.Do(func() { close(stall.release) }) }
	defer release()
	acquired := make(chan error, 1)
	go func() {
		_, err := a.Acquire(guard, AcquireRequest{Job: "stalled"})
		acquired <- err
	}()
	<-stall.entered
	stored := a.snaps.stored.Load()
	st, err := answersAtOnce(t, func() (Status, error) { return a.Status(guard) })
	if err != nil {
		t.Fatalf("Status while a write waits: %v", err)
	}
	if st.Steps > stored || len(st.Leases) != len(before.Leases) {
		t.Errorf("status shows the step being written: step %d (stored %d), %d leases (%d stored)",
			st.Steps, stored, len(st.Leases), len(before.Leases))
	}
	release()
	if err := <-acquired; err != nil {
		t.Fatalf("Acquire after the disk came back: %v", err)
	}
	if st, err = a.Status(guard); err != nil || len(st.Leases) != len(before.Leases)+1 {
		t.Fatalf("status after the write: %d leases, want %d, %v", len(st.Leases), len(before.Leases)+1, err)
	}
}

// TestAnsweredCallerRunsFirst: a caller answered by a step runs before the
// loop builds that step's snapshot and journals it. The answer's channel
// send only readies the caller on the loop's own P, where it would wait
// for the loop to block on its next event (or for another P to steal it,
// after a few microseconds' sleep that is 50 us and more on a VM): that
// wait was on every API round trip. On one P the order shows directly.
func TestAnsweredCallerRunsFirst(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	a := startWith(t, Options{Clock: clock.NewMock()}, nil)
	guard, stop := context.WithTimeout(context.Background(), 60*time.Second) // only a guard against a hang
	defer stop()
	if _, err := a.Status(guard); err != nil {
		t.Fatal(err)
	}
	// The snapshot published when the caller runs: without its step if
	// the caller ran first.
	ranFirst := func() bool { return a.snaps.cur.Load().Steps < a.snaps.stored.Load() }
	const calls = 200
	first := 0
	for range calls / 2 {
		g, err := a.Acquire(guard, AcquireRequest{Job: "first"})
		if err != nil {
			t.Fatal(err)
		}
		if ranFirst() {
			first++
		}
		if err := a.Release(guard, g.Lease); err != nil {
			t.Fatal(err)
		}
		if ranFirst() {
			first++
		}
	}
	// Not every one: the scheduler takes the loop from its global queue
	// now and then (one schedule in 61), and the loop may be preempted.
	if first < calls/2 {
		t.Errorf("%d of %d callers ran before the loop built the snapshot of the step that answered them, want at least %d",
			first, calls, calls/2)
	}
}
