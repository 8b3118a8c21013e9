package agent

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestWatchdogOnlyWhileTheLoopRuns: Options.Watchdog is called
// periodically, from the loop: while a store write waits for a frozen disk
// it is not called at all (systemd then restarts svcrun), and once the
// write ends it is called again.
func TestWatchdogOnlyWhileTheLoopRuns(t *testing.T) {
	const every = 5 * time.Millisecond
	var pings atomic.Int64
	pinged := make(chan struct{}, 1)
	a, err := Open(Options{PressureFile: noPressure, ConfigPath: testConfig(t), NoContainers: true,
		WatchdogEvery: every, Watchdog: func() {
			pings.Add(1)
			select {
			case pinged <- struct{}{}:
			default:
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	stall := &stallStore{Store: a.db}
	a.persist = stall
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() { cancel(); <-done }()
	guard, stop := context.WithTimeout(context.Background(), 60*time.Second) // only a guard against a hang
	defer stop()
	waitPings := func(n int) {
		t.Helper()
		for range n {
			select {
			case <-pinged:
			case <-guard.Done():
				t.Fatalf("no watchdog ping in 60s (%d in all)", pings.Load())
			}
		}
	}
	waitPings(3)

	stall.arm()
	var once sync.Once
	release := func() { once.Do(func() { close(stall.release) }) }
	defer release()
	acquired := make(chan error, 1)
	go func() {
		_, err := a.Acquire(guard, AcquireRequest{Job: "stalled"})
		acquired <- err
	}()
	<-stall.entered // the loop now waits for the disk
	before := pings.Load()
	// Absence can only be shown over some time: 40 periods, measured by a
	// clock of the test's own. A loaded machine makes pings rarer, never
	// more frequent, so it cannot make this fail.
	<-time.After(40 * every)
	if n := pings.Load() - before; n != 0 {
		t.Errorf("%d watchdog pings while the loop was blocked in a store write", n)
	}
	release()
	if err := <-acquired; err != nil {
		t.Fatalf("Acquire after the disk came back: %v", err)
	}
	select {
	case <-pinged: // drain one sent before the stall
	default:
	}
	waitPings(2)
}
