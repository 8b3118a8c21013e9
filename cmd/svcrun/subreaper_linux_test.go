//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oarbank/svcrun/api"
	"github.com/oarbank/svcrun/cgroup"
)

// TestServeCgroupDaemonReapedAtOnce: svcrun serve is the child subreaper
// with cgroup containers too, so a daemon a start op leaves is svcrun's
// child and its zombie goes the moment it dies. Left to init (which may
// reap late, or never, in a container) the zombie would answer the
// restart's kill -0 on the pid file, the start would say already running,
// and with status and fingerprint an hour apart nothing would start the
// daemon again. Its death is seen at once (its container empties), and a
// stop still leaves nothing in its container.
func TestServeCgroupDaemonReapedAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	n := newRestartNode(t, "sr")
	text, err := os.ReadFile(n.cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Top-level keys go before the [[modules]] table.
	slow := "status_period_s = 3600\nwatched_status_period_s = 3600\nfingerprint_period_s = 3600\n"
	if err := os.WriteFile(n.cfg, append([]byte(slow), text...), 0o644); err != nil {
		t.Fatal(err)
	}
	n.start()
	out, code := n.cli("status", "--json")
	var st struct {
		Services []struct{ Name, Container string }
	}
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("status: exit %d\n%s", code, out)
	}
	mode := ""
	for _, s := range st.Services {
		if s.Name == "demo/kv" {
			mode = s.Container
		}
	}
	if mode != "cgroup" {
		if os.Getenv("REQUIRE_KERNEL_FEATURES") == "1" {
			t.Fatalf("REQUIRE_KERNEL_FEATURES=1: demo/kv runs in %q", mode)
		}
		t.Skipf("no cgroup container here: %s", mode)
	}
	if out, code := n.cli("acquire", "--attempt", "attempt-sr", "--capability", "kv", "--wait", "30s"); code != 0 {
		t.Fatalf("acquire: exit %d\n%s", code, out)
	}
	pidFile := filepath.Join(n.dir, "data", "modules", "demo", "kv.pid")
	first := livePid(t, pidFile)
	serve := n.serve.Process.Pid
	if ppid := parentOf(t, first); ppid != serve {
		t.Errorf("the daemon %d is a child of %d, not of svcrun serve %d: svcrun is not the child subreaper",
			first, ppid, serve)
	}
	killed := time.Now()
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var second int
	waitUntil(t, "the crashed daemon restarted (its container's emptying seen, its zombie gone)", func() bool {
		second = pidIn(pidFile)
		return second != 0 && second != first && alive(second)
	})
	// The daemon is the start op's child until that op exits, and only
	// then svcrun's: its parent is checked once the service is ready
	// again, after the start op ended. The ready must be one that began
	// after the kill, since status may answer from a snapshot taken
	// before the crash was seen.
	waitUntil(t, "demo/kv ready again after its restart", func() bool {
		s, ok := n.serviceStatus("demo/kv")
		return ok && s.State == "ready" && s.StateSince.After(killed)
	})
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", first)); err == nil {
		t.Errorf("the crashed daemon %d is still in /proc after its restart: its zombie was not reaped", first)
	}
	if ppid := parentOf(t, second); ppid != serve {
		t.Errorf("the restarted daemon %d is a child of %d, not of svcrun serve %d", second, ppid, serve)
	}
	if out, code := n.cli("disable", "demo"); code != 0 {
		t.Fatalf("disable: exit %d\n%s", code, out)
	}
	waitUntil(t, "the daemon stopped", func() bool { return !alive(second) })
	var procs string
	waitUntil(t, "demo/kv's container empty", func() bool {
		procs = containerProcs(t, n.node, "demo", "kv")
		return procs == ""
	})
}

// serviceStatus is service name as svcrun status --json reports it; false
// when status does not answer or lists no such service.
func (n *restartNode) serviceStatus(name string) (api.ServiceStatus, bool) {
	n.t.Helper()
	out, code := n.cli("status", "--json")
	var st struct{ Services []api.ServiceStatus }
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		return api.ServiceStatus{}, false
	}
	for _, s := range st.Services {
		if s.Name == name {
			return s, true
		}
	}
	return api.ServiceStatus{}, false
}

// pidIn reads a pid file; 0 when it is absent or being written.
func pidIn(file string) int {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// livePid waits for the pid file to name a living process.
func livePid(t testing.TB, file string) int {
	t.Helper()
	var pid int
	waitUntil(t, file+" names a living daemon", func() bool {
		pid = pidIn(file)
		return pid > 0 && alive(pid)
	})
	return pid
}

// alive says pid runs and is no zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// parentOf is the parent pid of a living process (/proc/PID/stat field 4).
func parentOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		t.Fatalf("/proc/%d/stat: %q", pid, s)
	}
	return ppid
}

// containerProcs is the cgroup.procs of a service's container under the
// base of node id node, where svcrun puts it (cgroup.Locate: under the
// test's own cgroup in the cgroup2 mount, whichever that is).
func containerProcs(t testing.TB, node, module, name string) string {
	t.Helper()
	loc, err := cgroup.Locate(cgroup.Options{NodeID: node})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(loc.Base, module, name, "cgroup.procs"))
	if err != nil {
		t.Fatalf("no container %s/%s under the base %s: %v", module, name, loc.Base, err)
	}
	return strings.TrimSpace(string(b))
}
