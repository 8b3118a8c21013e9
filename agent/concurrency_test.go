//go:build linux

// Regression tests from a review of the daemon's concurrency: answers
// routed to the request that expects them, loop calls that outlive their
// caller's context, concurrent reloads, calls posted as the loop ends.
package agent

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/errdefs"
	"github.com/oarbank/svcrun/executor"
)

// onLoop returns on ctx.Done while the closure is still queued; the closure
// later writes the caller's result variables (data race) and its side effect
// still happens although the caller was told it failed.
func TestReviewOnLoopCancelRace(t *testing.T) {
	r := start(t, testConfig(t), false)
	defer r.stop(t)
	bg := context.Background()
	if _, err := r.a.Status(bg); err != nil {
		t.Fatal(err)
	}
	// keep the loop busy for 200ms
	go r.a.onLoop(bg, func() { time.Sleep(200 * time.Millisecond) })
	time.Sleep(20 * time.Millisecond)
	ctx, cancel := context.WithTimeout(bg, 20*time.Millisecond)
	defer cancel()
	err := r.a.SetModuleEnabled(ctx, "demo", false)
	t.Logf("SetModuleEnabled returned %v", err)
	time.Sleep(400 * time.Millisecond)
	st, _ := r.a.Status(bg)
	for _, s := range st.Services {
		t.Logf("service %s enabled=%v", s.Name, s.Enabled)
		if err != nil && !s.Enabled {
			t.Errorf("caller got %v but module was disabled anyway", err)
		}
	}
}

// Reload reads a.cfg off the loop while another Reload's closure replaces it.
func TestReviewConcurrentReloadRace(t *testing.T) {
	r := start(t, testConfig(t), false)
	defer r.stop(t)
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 5; j++ {
				if _, err := r.a.Reload(context.Background()); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
}

// A call posted just before the loop exits is never run: onLoop with a
// context that never ends blocks forever.
func TestReviewOnLoopAfterStopHangs(t *testing.T) {
	r := start(t, testConfig(t), false)
	if _, err := r.a.Status(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Hold the loop busy, then cancel Run and post a call behind it.
	go r.a.onLoop(context.Background(), func() { time.Sleep(200 * time.Millisecond) })
	time.Sleep(20 * time.Millisecond)
	done := make(chan error, 1)
	go func() { _, err := r.a.Status(context.Background()); done <- err }()
	time.Sleep(20 * time.Millisecond)
	r.stop(t)
	select {
	case err := <-done:
		t.Logf("Status returned %v", err)
	case <-time.After(time.Minute): // a hang's guard, however loaded the machine
		t.Errorf("Status(Background) still blocked a minute after Run returned")
	}
}

func TestReviewRenewGetsExpired(t *testing.T) {
	mc := clock.NewMock()
	mc.Set(time.Now())
	a, err := Open(Options{PressureFile: noPressure, ConfigPath: testConfig(t),
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil)), NoContainers: true, Clock: mc})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() { cancel(); <-done }()
	bg := context.Background()
	g, err := a.Acquire(bg, AcquireRequest{Requirements: caps(), TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	go a.onLoop(bg, func() { <-release })
	time.Sleep(20 * time.Millisecond)
	mc.Add(2 * time.Second) // TTL timer fires: its Fire is queued behind the busy call
	res := make(chan error, 1)
	go func() { _, err := a.Renew(bg, g.Lease); res <- err }()
	time.Sleep(20 * time.Millisecond)
	close(release)
	err = <-res
	t.Logf("Renew: %v", err)
	if err != nil && err != errdefs.ErrUnknownLease {
		t.Errorf("Renew of an expiring lease: %v, want errdefs.ErrUnknownLease", err)
	}
}

// An acquire withdrawn while svcrun stops (its caller gave up just as the
// loop ended, so the loop takes no more events) is released before the
// store closes: otherwise its lease, admitted in the loop's last steps,
// would be held across restarts for a caller that is gone.
func TestWithdrawWhileStopping(t *testing.T) {
	cfg := testConfig(t)
	var arm atomic.Bool
	held := make(chan engine.Event, 1)
	var post func(engine.Event)
	armed := func(engine.OpDone) bool { return arm.CompareAndSwap(true, false) } // shutdown waits for the held op
	newExec := func(c executor.Config, p func(engine.Event)) (Executor, error) {
		return holdOps(armed, held, &post)(c, p)
	}
	a, err := Open(Options{PressureFile: noPressure, ConfigPath: cfg,
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil)), NoContainers: true, NewExecutor: newExec})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	bg, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	g, err := a.Acquire(bg, AcquireRequest{Requirements: caps(), Wait: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	arm.Store(true) // the next op to end (a status poll, every second) is held
	var ev engine.Event
	select {
	case ev = <-held:
	case <-bg.Done():
		t.Fatal("no op ended")
	}
	cancel()
	<-a.quit // stopping: the loop has ended, shutdown waits for the held op
	a.withdraw(g.Lease)
	post(ev)
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, l := range storedLeases(t, cfg) {
		if l.ID == g.Lease {
			t.Fatalf("withdrawn lease %s still stored after svcrun stopped: %+v", g.Lease, l)
		}
	}
}

// TestStatusTimesAreAsOfTheAsking: status answers from the snapshot of the
// last step, but its Now (which "ago" and "in" are counted from) is when
// status is asked, also while the loop is busy and takes no step.
func TestStatusTimesAreAsOfTheAsking(t *testing.T) {
	mc := clock.NewMock()
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	mc.Set(t0)
	a, err := Open(Options{PressureFile: noPressure, ConfigPath: testConfig(t),
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil)), NoContainers: true, Clock: mc})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() { cancel(); <-done }()
	bg := context.Background()
	if _, err := a.Status(bg); err != nil { // after the boot step
		t.Fatal(err)
	}
	busy, release := make(chan struct{}), make(chan struct{})
	go a.onLoop(bg, func() { close(busy); <-release })
	<-busy
	defer close(release)
	mc.Add(45 * time.Second) // the timers' events queue behind the busy call: no step
	st, err := a.Status(bg)
	if err != nil {
		t.Fatal(err)
	}
	if want := t0.Add(45 * time.Second); !st.Now.Equal(want) {
		t.Errorf("status Now %v, want %v (when it was asked)", st.Now, want)
	}
}
