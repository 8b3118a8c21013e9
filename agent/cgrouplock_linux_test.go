package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oarbank/svcrun/cgroup"
	"github.com/oarbank/svcrun/runtime"
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
	req := AcquireRequest{Requirements: runtime.Requirements{Pools: map[string]int64{"od-slots": 1}}, Wait: 10 * time.Second}
	first.release(first.mustAcquire(req))

	second := newE2E(t, e2eMode{}, map[string]string{"node_id": strconv.Quote(first.node)})
	a, err := Open(Options{ConfigPath: second.cfg, Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))})
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
	prefix := fmt.Sprintf("%s: the process containers of node_id %s (%s) are in use by another svcrun (pid %d", second.cfg, first.node, base, os.Getpid())
	if msg := err.Error(); !strings.HasPrefix(msg, prefix) || !strings.HasSuffix(msg, "): give this svcrun its own node_id") {
		t.Errorf("Open:\n%s\nwant it to start with\n%s", msg, prefix)
	}
	t.Log(err)

	g := first.mustAcquire(req)
	if s := svc(first.status(), "ondemand"); !s.Ready {
		t.Errorf("the first svcrun's service after the refusal: %+v", s)
	}
	first.release(g)
}
