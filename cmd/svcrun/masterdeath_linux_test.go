//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestMasterDeathRestarts: the master of an nginx-like daemon killed
// alone, its workers living on in the container, is seen at once (its
// pidfd) and the service restarted, with status, watched status and
// fingerprints an hour apart: only the master's death as an event can
// explain the restart within the test's bound.
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
	text := fmt.Sprintf("node_id = %q\ndata_dir = \"data\"\nsocket = %q\nmemory_budget_gb = 1\nsandbox = \"best_effort\"\n"+
		"status_period_s = 3600\nwatched_status_period_s = 3600\nfingerprint_period_s = 3600\n\n[[modules]]\nbundle = %q\n", n.node, n.sock, bundle)
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
	waitUntil(t, "the master's workers in its container", func() bool {
		return len(strings.Fields(containerProcs(t, n.node, "masterworkers", "web"))) >= 3
	})
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
}
