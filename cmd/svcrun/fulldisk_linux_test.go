//go:build linux

package main

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oarbank/svcrun/api"
	"github.com/oarbank/svcrun/internal/testhost"
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
			// Registered after newRestartNode's cleanup, so run before it.
			testhost.Tmpfs(t, data, "64m")
			n.start()
			out, code := n.cli("acquire", "--capability", "kv", "--wait", "20s")
			held := strings.TrimSpace(out)
			if code != 0 || !strings.HasPrefix(held, "lease-") {
				t.Fatalf("acquire: exit %d %s", code, out)
			}
			pid := kvPid(t, n)

			testhost.FillDisk(t, filepath.Join(data, "filler"))
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
