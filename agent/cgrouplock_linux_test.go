package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/oarbank/svcrun/cgroup"
	"github.com/oarbank/svcrun/engine"
)

// TestSecondSvcrunOfANodeRefused: a second svcrun with the first one's
// node_id and a data dir of its own is refused by Open, with the reason and
// the fix, and the first one runs on unharmed.
func TestSecondSvcrunOfANodeRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("real time, real processes")
	}
	first := newE2E(t, e2eMode{}, nil)
	first.ctl("ondemand", "pools", `{"od-slots":2}`)
	first.start() // skips without cgroup v2 containers
	req := AcquireRequest{Requirements: engine.Requirements{Pools: map[string]int64{"od-slots": 1}},
		Wait: 10 * time.Second}
	first.release(first.mustAcquire(req))

	second := newE2E(t, e2eMode{}, map[string]string{"node_id": strconv.Quote(first.node)})
	a, err := Open(Options{PressureFile: noPressure, ConfigPath: second.cfg,
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))})
	if err == nil {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		a.Run(ctx) // closes what Open opened
		t.Fatal("a second svcrun with the same node_id was opened")
	}
	if !errors.Is(err, cgroup.ErrInUse) {
		t.Fatalf("Open: %v, want cgroup.ErrInUse", err)
	}
	base := first.r.a.containers.Base()
	prefix := fmt.Sprintf("%s: the process containers of node_id %s (%s) are in use by another svcrun (pid %d", second.cfg,
		first.node, base, os.Getpid())
	if msg := err.Error(); !strings.HasPrefix(msg, prefix) ||
		!strings.HasSuffix(msg, "): give this svcrun its own node_id") {
		t.Errorf("Open:\n%s\nwant it to start with\n%s", msg, prefix)
	}
	t.Log(err)

	g := first.mustAcquire(req)
	if s := svc(first.status(), "ondemand"); !s.Ready {
		t.Errorf("the first svcrun's service after the refusal: %+v", s)
	}
	first.release(g)
}

// TestContainerRemovedUnderAService: the container of a stopped service,
// removed behind svcrun's back, is re-created at its next start with one
// WARN naming it, and the daemon lives in it.
func TestContainerRemovedUnderAService(t *testing.T) {
	if testing.Short() {
		t.Skip("real time, real processes")
	}
	e := newE2E(t, e2eMode{}, nil)
	var logged syncBuffer
	e.logTo = &logged
	e.ctl("ondemand", "pools", `{"od-slots":2}`)
	e.start() // skips without cgroup v2 containers
	req := AcquireRequest{Requirements: engine.Requirements{Pools: map[string]int64{"od-slots": 1}},
		Wait: 10 * time.Second}
	e.release(e.mustAcquire(req))
	e.waitFor("ondemand stopped after its idle timeout", func(st Status) bool {
		return svc(st, "ondemand").State == "stopped"
	})
	dir := filepath.Join(e.r.a.containers.Base(), "e2e", "ondemand")
	eventually(t, "the stopped service's container empties", func() bool {
		data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		return err == nil && len(data) == 0
	})
	if err := syscall.Rmdir(dir); err != nil {
		t.Fatal(err)
	}

	g := e.mustAcquire(req)
	defer e.release(g)
	if n := e.count("ondemand", "start"); n != 2 {
		t.Errorf("%d starts, want 2", n)
	}
	e.checkContained("ondemand", e.pid("ondemand"))
	if !e.contained("ondemand") {
		t.Errorf("container mode %q", e.status().ContainerModes["e2e/ondemand"])
	}
	want := fmt.Sprintf("the process container %s of e2e/ondemand was removed (by another "+
		"svcrun with the same node_id?): re-created", dir)
	if log := logged.String(); strings.Count(log, want) != 1 {
		t.Errorf("want one WARN %q in the log:\n%s", want, log)
	}
}

// syncBuffer is a bytes.Buffer for a logger and a test to share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
