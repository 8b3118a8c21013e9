//go:build linux

package agent

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/executor"
	"github.com/oarbank/svcrun/protocol"
	"github.com/oarbank/svcrun/store"
)

// holdOps returns an Options.NewExecutor-like constructor of executors
// whose OpDone events go to held instead of the scheduler when hold says
// so (the engine keeps those ops in flight); *post is set to the
// scheduler's Post, to hand them back.
func holdOps(hold func(engine.OpDone) bool, held chan<- engine.Event,
	post *func(engine.Event)) func(executor.Config, func(engine.Event)) (*executor.Executor, error) {
	return func(c executor.Config, p func(engine.Event)) (*executor.Executor, error) {
		*post = p
		return executor.New(c, func(ev engine.Event) {
			if d, ok := ev.(*engine.OpDone); ok && hold(*d) {
				held <- ev
				return
			}
			p(ev)
		})
	}
}

// storedLeases reopens the state file of the (stopped) agent of cfg.
func storedLeases(t *testing.T, cfg string) []engine.LeaseRecord {
	t.Helper()
	db, err := store.Open(filepath.Join(filepath.Dir(cfg), "data", StateFile), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st, err := db.State()
	if err != nil {
		t.Fatal(err)
	}
	return st.Leases
}

// startSpy remembers the ids of start ops.
type startSpy struct {
	*executor.Executor
	starts *sync.Map
}

func (x *startSpy) Run(op engine.RunOp) {
	if op.Op == protocol.OpStart {
		x.starts.Store(op.ID, true)
	}
	x.Executor.Run(op)
}

// An acquire that is waiting when svcrun stops gets ErrStopping (shutdown
// closes its waiter channel) and is withdrawn: otherwise the engine would
// keep the request, drain would step the OpDone of the start it waits for,
// and the request would be admitted and its lease stored, held across
// restarts for a caller that was told it failed.
func TestWaitingAcquireAtStopIsWithdrawn(t *testing.T) {
	cfg := testConfig(t)
	var starts sync.Map
	held := make(chan engine.Event, 1)
	var post func(engine.Event)
	// held until svcrun is stopping
	isStart := func(d engine.OpDone) bool { _, ok := starts.LoadAndDelete(d.ID); return ok }
	newExec := func(c executor.Config, p func(engine.Event)) (Executor, error) {
		x, err := holdOps(isStart, held, &post)(c, p)
		if err != nil {
			return nil, err
		}
		return &startSpy{Executor: x, starts: &starts}, nil
	}
	a, err := Open(Options{PressureFile: noPressure, ConfigPath: cfg,
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil)), NoContainers: true, NewExecutor: newExec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // the kv daemon left running
		if b, err := os.ReadFile(filepath.Join(filepath.Dir(cfg), "data", "modules", "demo", "kv.pid")); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()

	acq := make(chan error, 1)
	go func() {
		bg, stop := context.WithTimeout(context.Background(), 60*time.Second)
		defer stop()
		_, err := a.Acquire(bg, AcquireRequest{Job: "j", Requirements: caps("kv"), Wait: 30 * time.Second})
		acq <- err
	}()
	var ev engine.Event
	select {
	case ev = <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("no start ended")
	}
	cancel()
	<-a.quit
	if err := <-acq; !errors.Is(err, ErrStopping) {
		t.Fatalf("acquire: %v, want ErrStopping", err)
	}
	post(ev) // the start ends within the grace: drain steps it
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, l := range storedLeases(t, cfg) {
		if l.Job == "j" {
			t.Fatalf("the caller was told ErrStopping, yet its lease %s is stored and held across restarts: %+v", l.ID, l)
		}
	}
}
