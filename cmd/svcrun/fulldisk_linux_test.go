//go:build linux

package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oarbank/svcrun/api"
)

// TestRestartOnFullDataDir restarts svcrun (kill -9, or SIGTERM) while its
// data dir, a tmpfs, is full and a service's daemon runs for a held
// lease: the next svcrun fingerprints the service (no op needs to rewrite
// the module's unchanged settings), adopts the daemon it finds running,
// kills nothing, and the lease is still held.
func TestRestartOnFullDataDir(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	if os.Geteuid() != 0 {
		requireOrSkip(t, "mounting a tmpfs needs root")
	}
	for _, tc := range []struct {
		name string
		stop func(n *restartNode)
	}{
		{"kill -9", (*restartNode).kill9},
		{"SIGTERM", func(n *restartNode) {
			n.serve.Process.Signal(syscall.SIGTERM) // a clean stop leaves the services running
			n.serve.Wait()
			n.serve = nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newRestartNode(t, "full")
			data := filepath.Join(n.dir, "data")
			if err := os.Mkdir(data, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := unix.Mount("tmpfs", data, "tmpfs", 0, "size=64m"); err != nil {
				requireOrSkip(t, "mount a tmpfs: "+err.Error())
			}
			// Registered after newRestartNode's cleanup, so run before it:
			// that one reads the daemon's pid file to kill it.
			t.Cleanup(func() { unix.Unmount(data, unix.MNT_DETACH) })
			n.start()
			out, code := n.cli("acquire", "--capability", "kv", "--wait", "20s")
			held := strings.TrimSpace(out)
			if code != 0 || !strings.HasPrefix(held, "lease-") {
				t.Fatalf("acquire: exit %d %s", code, out)
			}
			pid := kvPid(t, n)

			fillDisk(t, filepath.Join(data, "filler"))
			tc.stop(n)
			restarted := time.Now()
			n.start()
			var kv api.ServiceStatus
			waitUntil(t, "the next svcrun has demo/kv ready, or its daemon dies", func() bool {
				s, ok := n.serviceStatus("demo/kv")
				kv = s
				return ok && s.FingerprintedAt.After(restarted) && s.State == "ready" || procGone(pid)
			})
			if procGone(pid) {
				t.Fatalf("kv's daemon %d was killed by the svcrun restarted on a full data dir (state %s)", pid, kv.State)
			}
			if l := n.leases(); len(l) != 1 || l[0].ID != held || !l[0].Admitted {
				t.Errorf("leases %+v, want %s alone", l, held)
			}
			if got := kvPid(t, n); got != pid {
				t.Errorf("kv's daemon is pid %d, want %d", got, pid)
			}
		})
	}
}

// fillDisk writes file until its file system has no space left.
func fillDisk(t *testing.T, file string) {
	t.Helper()
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill %s: %v", file, err)
			}
			return
		}
	}
}

// requireOrSkip skips the test, or fails it with REQUIRE_KERNEL_FEATURES=1.
func requireOrSkip(t *testing.T, reason string) {
	t.Helper()
	if os.Getenv("REQUIRE_KERNEL_FEATURES") == "1" {
		t.Fatalf("REQUIRE_KERNEL_FEATURES=1: %s", reason)
	}
	t.Skip(reason)
}
