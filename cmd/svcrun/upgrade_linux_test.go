//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestBundleUpgradedInPlace replaces the bundle of a module whose service
// runs a daemon, as a package upgrade does (mv B B.old, cp -a B.old B).
// Before a reload its ops fail with the message docs/operating.md gives
// (here the list_owned of a reap); after `svcrun reload` they run again,
// from the new bundle, the daemon was never stopped (the same pid) and the
// lease held across it is still there; a new lease is admitted.
func TestBundleUpgradedInPlace(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	n := newRestartNode(t, "upg")
	demo, _ := filepath.Abs("../../examples/modules/demo")
	bundle := filepath.Join(n.dir, "demo")
	if out, err := exec.Command("cp", "-a", demo, bundle).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v: %s", err, out)
	}
	cfg, err := os.ReadFile(n.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(n.cfg,
		[]byte(strings.Replace(string(cfg), fmt.Sprintf("%q", demo), fmt.Sprintf("%q", bundle), 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	n.start()

	out, code := n.cli("acquire", "--capability", "kv", "--wait", "20s")
	held := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(held, "lease-") {
		t.Fatalf("acquire: exit %d %s", code, out)
	}
	pid := kvPid(t, n)

	if err := os.Rename(bundle, bundle+".old"); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", bundle+".old", bundle).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v: %s", err, out)
	}
	want := fmt.Sprintf("the bundle of module demo was replaced since it was loaded (directory %s): run `svcrun reload`",
		bundle)
	if failed := reapFailures(t, n); !strings.Contains(failed["demo/kv"], want) {
		t.Errorf("reap before the reload: %q, want the list_owned of demo/kv failed with %q", failed, want)
	}

	if out, code := n.cli("reload"); code != 0 {
		t.Fatalf("reload: exit %d %s", code, out)
	}
	if failed := reapFailures(t, n); len(failed) != 0 {
		t.Errorf("reap after the reload: %q, want no failure", failed)
	}
	if got := kvPid(t, n); got != pid {
		t.Errorf("kv's daemon is pid %d after the reload, want %d: it was restarted", got, pid)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Errorf("kv's daemon %d: %v", pid, err)
	}
	if l := n.leases(); len(l) != 1 || l[0].ID != held || !l[0].Admitted {
		t.Errorf("leases %+v, want %s alone", l, held)
	}
	if out, code := n.cli("acquire", "--pool", "kv-slots=1", "--wait", "20s"); code != 0 ||
		!strings.HasPrefix(out, "lease-") {
		t.Errorf("acquire after the reload: exit %d %s", code, out)
	}
}

// kvPid is the pid of demo/kv's daemon, from its pid file; it must live.
func kvPid(t *testing.T, n *restartNode) int {
	t.Helper()
	var pid int
	if b, err := os.ReadFile(filepath.Join(n.dir, "data", "modules", "demo", "kv.pid")); err == nil {
		fmt.Sscan(string(b), &pid)
	}
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		t.Fatalf("no live kv daemon (pid %d)", pid)
	}
	return pid
}

// reapFailures runs a reap round and returns the services whose listing
// failed, with why.
func reapFailures(t *testing.T, n *restartNode) map[string]string {
	t.Helper()
	out, _ := n.cli("reap", "--json")
	var r struct {
		Services []struct{ Service, Failed string }
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("reap --json: %v\n%s", err, out)
	}
	failed := map[string]string{}
	for _, s := range r.Services {
		if s.Failed != "" {
			failed[s.Service] = s.Failed
		}
	}
	return failed
}
