//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oarbank/svcrun/internal/procfs"
)

// TestMasterDeathRestarts: the master of an nginx-like daemon killed
// alone, its workers living on in the container, is seen at once (its
// pidfd) and the service restarted, with status, watched status and
// fingerprints an hour apart: only the master's death as an event can
// explain the restart within the test's bound. The master was svcrun's
// child (its subreaper) and a signal killed it: a crash without a status,
// its workers killed with the container.
func TestMasterDeathRestarts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	if fd, err := unix.PidfdOpen(os.Getpid(), 0); err != nil {
		if os.Getenv("REQUIRE_KERNEL_FEATURES") == "1" {
			t.Fatalf("REQUIRE_KERNEL_FEATURES=1: pidfd_open: %v", err)
		}
		t.Skipf("no pidfds here: %v", err)
	} else {
		unix.Close(fd)
	}
	n := newRestartNode(t, "md")
	bundle, _ := filepath.Abs("testdata/master-workers")
	text := fmt.Sprintf(
		"node_id = %q\ndata_dir = \"data\"\nsocket = %q\nmemory_budget_gb = 1\nsandbox = \"best_effort\"\n"+
			"status_period_s = 3600\nwatched_status_period_s = 3600\nfingerprint_period_s = 3600\n\n[[modules]]\n"+
			"bundle = %q\n", n.node, n.sock, bundle)
	if err := os.WriteFile(n.cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(n.dir, "data", "modules", "masterworkers", "master.pid")
	t.Cleanup(func() {
		if p := pidIn(pidFile); p > 0 {
			syscall.Kill(p, syscall.SIGKILL)
		}
	})
	n.start()
	waitUntil(t, "masterworkers/web ready in its cgroup container", func() bool {
		s, ok := n.serviceStatus("masterworkers/web")
		return ok && s.State == "ready" && s.Container != ""
	})
	if s, _ := n.serviceStatus("masterworkers/web"); s.Container != "cgroup" {
		if os.Getenv("REQUIRE_KERNEL_FEATURES") == "1" {
			t.Fatalf("REQUIRE_KERNEL_FEATURES=1: masterworkers/web runs in %q", s.Container)
		}
		t.Skipf("no cgroup container here: %s", s.Container)
	}
	first := livePid(t, pidFile)
	var procs []string
	waitUntil(t, "the master's workers in its container", func() bool {
		procs = strings.Fields(containerProcs(t, n.node, "masterworkers", "web"))
		return len(procs) >= 3
	})
	// The workers, by pid and start time (a pid may be reused).
	workers := map[int]uint64{}
	for _, p := range procs {
		if pid, _ := strconv.Atoi(p); pid != first {
			workers[pid], _ = procfs.StartTicks(pid)
		}
	}
	killed := time.Now()
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var second int
	waitUntil(t, "a new master after the old one was killed alone", func() bool {
		second = pidIn(pidFile)
		return second != 0 && second != first && alive(second)
	})
	waitUntil(t, "masterworkers/web ready again after its restart", func() bool {
		s, ok := n.serviceStatus("masterworkers/web")
		return ok && s.State == "ready" && s.StateSince.After(killed)
	})
	t.Logf("master %d killed alone; master %d ready %v later", first, second, time.Since(killed).Round(time.Millisecond))
	const why = "crashed: its master was killed by a signal"
	if s, _ := n.serviceStatus("masterworkers/web"); !strings.HasPrefix(s.Reason, why) {
		t.Errorf("the failure's reason %q, want %q...", s.Reason, why)
	}
	for pid, start := range workers {
		if now, ok := procfs.StartTicks(pid); ok && now == start {
			t.Errorf("the old master's worker %d lives on", pid)
		}
	}
}
