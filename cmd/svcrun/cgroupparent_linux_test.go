package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oarbank/svcrun/internal/testhost"
)

// TestServeCgroupParent: with --cgroup-parent, the containers' base is
// created in that cgroup, not in svcrun's own: the layout for systemd's
// DelegateSubgroup=, where svcrun runs in <unit>/supervisor and the base
// goes beside it.
func TestServeCgroupParent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	name := fmt.Sprintf("svcrun-test-parent-%d", os.Getpid())
	parent := ""
	for _, mount := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} { // unified: a hybrid host
		var st syscall.Statfs_t
		if syscall.Statfs(mount, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC &&
			os.Mkdir(filepath.Join(mount, name), 0o755) == nil {
			parent = filepath.Join(mount, name)
			break
		}
	}
	if parent == "" {
		if os.Getenv("REQUIRE_KERNEL_FEATURES") == "1" {
			t.Fatal("REQUIRE_KERNEL_FEATURES=1: cannot create a cgroup v2")
		}
		t.Skip("no writable cgroup v2")
	}
	t.Cleanup(func() { testhost.RemoveTree(t, parent) })
	bin := buildSvcrun(t)
	sdir, err := os.MkdirTemp("", "cgp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sdir) })
	dir := t.TempDir()
	cfg := filepath.Join(dir, "svcrun.toml")
	node := testhost.NodeID("cgparent")
	t.Cleanup(func() { testhost.RemoveBase(t, node) }) // had it gone to svcrun's own cgroup
	if err := os.WriteFile(cfg,
		[]byte(fmt.Sprintf(
			"node_id = %q\ndata_dir = \"data\"\nsocket = %q\nmemory_budget_gb = 1\nsandbox = \"best_effort\"\n",
			node, filepath.Join(sdir, "s.sock"))), 0o644); err != nil {
		t.Fatal(err)
	}
	notifySock := filepath.Join(sdir, "notify.sock")
	msgs := listenNotify(t, notifySock)
	logs := &lockedLog{t: t}
	cmd := exec.Command(bin, "serve", "--config", cfg, "--log-format", "text", "--cgroup-parent", parent)
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+notifySock)
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case m := <-msgs:
		if m != "READY=1" {
			t.Fatalf("first message %q, want READY=1", m)
		}
	case err := <-exited:
		t.Fatalf("svcrun exited (%v) before READY=1\n%s", err, logs)
	case <-time.After(60 * time.Second): // a failure guard only
		t.Fatalf("no READY=1 in 60s\n%s", logs)
	}
	if _, err := os.Stat(filepath.Join(parent, "svcrun-"+node, "cgroup.events")); err != nil {
		t.Errorf("no base in --cgroup-parent: %v\n%s", err, logs)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := <-exited; err != nil {
		t.Errorf("svcrun exited with %v\n%s", err, logs)
	}
}
