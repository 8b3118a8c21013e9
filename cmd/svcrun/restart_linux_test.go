//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/oarbank/svcrun/cgroup"
	"github.com/oarbank/svcrun/internal/procfs"
	"github.com/oarbank/svcrun/internal/testhost"
)

// lockedBuffer is a command's stderr, read while the command runs.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// restartNode is a node configuration for the real binary, started and
// killed at will.
type restartNode struct {
	t        testing.TB
	bin, cfg string
	// node is the node id, the test's own (testhost.NodeID): its svcrun
	// names and locks its base cgroup after it.
	node      string
	sock, dir string
	serve     *exec.Cmd
}

func newRestartNode(t testing.TB, name string) *restartNode {
	t.Helper()
	n := &restartNode{t: t, bin: buildSvcrun(t), dir: t.TempDir(), node: testhost.NodeID(name)}
	demo, _ := filepath.Abs("../../examples/modules/demo")
	sdir, err := os.MkdirTemp("", name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sdir) })
	n.sock = filepath.Join(sdir, "s.sock")
	n.cfg = filepath.Join(n.dir, "svcrun.toml")
	text := fmt.Sprintf("node_id = %q\ndata_dir = \"data\"\nsocket = %q\nmemory_budget_gb = 1\n"+
		"sandbox = \"best_effort\"\n\n[[modules]]\nbundle = %q\nsettings = { slots = 2 }\n", n.node, n.sock, demo)
	if err := os.WriteFile(n.cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if n.serve != nil {
			n.serve.Process.Signal(syscall.SIGTERM)
			n.serve.Wait()
		}
		if pid, err := os.ReadFile(filepath.Join(n.dir, "data", "modules", "demo", "kv.pid")); err == nil {
			var p int
			fmt.Sscan(string(pid), &p)
			if p > 0 {
				syscall.Kill(p, syscall.SIGKILL)
			}
		}
		testhost.RemoveBase(t, n.node)
	})
	return n
}

// start runs svcrun serve and waits until it answers.
func (n *restartNode) start() {
	n.t.Helper()
	cmd := exec.Command(n.bin, "serve", "--config", n.cfg, "--log-format", "text")
	cmd.Stderr = &testLog{n.t}
	if err := cmd.Start(); err != nil {
		n.t.Fatal(err)
	}
	n.serve = cmd
	waitUntil(n.t, "svcrun serve answers",
		func() bool { return exec.Command(n.bin, "status", "--socket", n.sock).Run() == nil })
}

// kill9 kills svcrun serve with SIGKILL.
func (n *restartNode) kill9() {
	n.t.Helper()
	n.serve.Process.Signal(syscall.SIGKILL)
	n.serve.Wait()
	n.serve = nil
}

// cli runs a command against the node; it returns stdout and the exit code.
func (n *restartNode) cli(args ...string) (string, int) {
	n.t.Helper()
	full := append([]string{args[0], "--socket", n.sock}, args[1:]...)
	cmd := exec.Command(n.bin, full...)
	cmd.Stderr = &testLog{n.t}
	out, err := cmd.Output()
	if err != nil && cmd.ProcessState == nil {
		n.t.Fatalf("svcrun %v: %v", args, err)
	}
	return string(out), cmd.ProcessState.ExitCode()
}

type leaseView struct {
	ID       string `json:"id"`
	Attempt  string `json:"attempt"`
	Admitted bool   `json:"admitted"`
}

func (n *restartNode) leases() []leaseView {
	n.t.Helper()
	out, code := n.cli("status", "--json")
	var st struct{ Leases []leaseView }
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		n.t.Fatalf("status: exit %d\n%s", code, out)
	}
	return st.Leases
}

// waitUntil polls cond (a daemon's state, a file, a line of output) with a
// 60 s failure guard.
func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 60 s", what)
		}
		time.Sleep(20 * time.Millisecond) // polling another process, not synchronizing the engine
	}
}

// TestAcquireAgainAfterKill9: an acquire whose answer was lost (svcrun
// killed after storing the lease) asked again with its attempt gets the
// same lease from the next svcrun; other requirements under that attempt
// are refused.
func TestAcquireAgainAfterKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	n := newRestartNode(t, "ag")
	n.start()
	acquire := func(args ...string) (string, int) {
		out, code := n.cli(append([]string{"acquire", "--attempt", "attempt-ag", "--json", "--wait", "20s"}, args...)...)
		var g struct{ Lease, Error string }
		json.Unmarshal([]byte(out), &g)
		return g.Lease + g.Error, code
	}
	first, code := acquire("--capability", "kv")
	if code != 0 || !strings.HasPrefix(first, "lease-") {
		t.Fatalf("acquire: exit %d %s", code, first)
	}
	n.kill9()
	n.start()
	if again, code := acquire("--capability", "kv"); code != 0 || again != first {
		t.Errorf("the same acquire after kill -9: exit %d %s, want lease %s", code, again, first)
	}
	if other, code := acquire("--pool", "kv-slots=1"); code != 1 ||
		!strings.Contains(other, "attempt attempt-ag already holds lease "+first) {
		t.Errorf("another requirement under the attempt: exit %d %s", code, other)
	}
	if l := n.leases(); len(l) != 1 || l[0].ID != first {
		t.Errorf("leases %+v, want %s alone", l, first)
	}
}

// TestRunKeepsItsLeaseAcrossKill9: svcrun run keeps its lease while svcrun
// is killed and started again, renewing it once svcrun is back; a run still
// waiting for admission asks again with its attempt and is admitted by the
// next svcrun. Each says once that svcrun went away and once that it is
// back.
func TestRunKeepsItsLeaseAcrossKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	n := newRestartNode(t, "rk")
	n.start()
	dir := t.TempDir()
	once := func(what, stderr string) {
		t.Helper()
		if c := strings.Count(stderr, "svcrun went away"); c != 1 {
			t.Errorf("%s: %d lines saying svcrun went away, want 1:\n%s", what, c, stderr)
		}
		if c := strings.Count(stderr, "svcrun is back"); c != 1 {
			t.Errorf("%s: %d lines saying svcrun is back, want 1:\n%s", what, c, stderr)
		}
	}

	// Holding: the renewals wait for the next svcrun. The TTL leaves the
	// next svcrun 20 s to come up after run notices (its renewal every 10 s
	// fails) before the lease would expire.
	leaseFile, doneFile := filepath.Join(dir, "lease"), filepath.Join(dir, "done")
	var holdErr lockedBuffer
	hold := exec.Command(n.bin, "run", "--socket", n.sock, "--attempt", "attempt-hold", "--capability", "kv",
		"--ttl", "30s", "--wait", "30s", "--",
		"sh", "-c",
		fmt.Sprintf(`echo "$OARBANK_LEASE_ID" > %s.tmp && mv %s.tmp %s; while [ ! -e %s ]; do sleep 0.05; done`,
			leaseFile, leaseFile, leaseFile, doneFile))
	hold.Stderr = &holdErr
	if err := hold.Start(); err != nil {
		t.Fatal(err)
	}
	defer hold.Process.Kill()
	waitUntil(t, "run's CMD starts", func() bool { _, err := os.Stat(leaseFile); return err == nil })
	b, _ := os.ReadFile(leaseFile)
	lease := strings.TrimSpace(string(b))
	n.kill9()
	waitUntil(t, "run says svcrun went away",
		func() bool { return strings.Contains(holdErr.String(), "svcrun went away") })
	n.start()
	waitUntil(t, "run says svcrun is back", func() bool { return strings.Contains(holdErr.String(), "svcrun is back") })
	if l := n.leases(); len(l) != 1 || l[0].ID != lease || l[0].Attempt != "attempt-hold" || !l[0].Admitted {
		t.Errorf("after kill -9: leases %+v, want %s of attempt-hold", l, lease)
	}
	os.WriteFile(doneFile, nil, 0o644)
	if err := hold.Wait(); err != nil {
		t.Errorf("run: %v\n%s", err, holdErr.String())
	}
	t.Logf("holding run's stderr:\n%s", holdErr.String())
	once("holding", holdErr.String())
	if strings.Contains(holdErr.String(), "was lost") || strings.Contains(holdErr.String(), "had already ended") {
		t.Errorf("run lost its lease:\n%s", holdErr.String())
	}

	// Waiting: the acquire asks again when svcrun is back.
	out, code := n.cli("acquire", "--pool", "kv-slots=2", "--wait", "20s")
	blocker := strings.TrimSpace(out)
	if code != 0 {
		t.Fatalf("acquire both slots: exit %d", code)
	}
	gotFile := filepath.Join(dir, "got")
	var waitErr lockedBuffer
	wait := exec.Command(n.bin, "run", "--socket", n.sock, "--attempt", "attempt-wait", "--pool", "kv-slots=1",
		"--wait", "60s", "--",
		"sh", "-c", fmt.Sprintf(`echo "$OARBANK_ATTEMPT_ID" > %s`, gotFile))
	wait.Stderr = &waitErr
	if err := wait.Start(); err != nil {
		t.Fatal(err)
	}
	defer wait.Process.Kill()
	waiting := func() bool {
		for _, l := range n.leases() {
			if l.Attempt == "attempt-wait" && !l.Admitted {
				return true
			}
		}
		return false
	}
	waitUntil(t, "run waits for a slot", waiting)
	n.kill9()
	waitUntil(t, "waiting run says svcrun went away",
		func() bool { return strings.Contains(waitErr.String(), "svcrun went away") })
	n.start()
	waitUntil(t, "run asks again", waiting)
	if _, code := n.cli("release", blocker); code != 0 {
		t.Fatalf("release %s: exit %d", blocker, code)
	}
	if err := wait.Wait(); err != nil {
		t.Errorf("waiting run: %v\n%s", err, waitErr.String())
	}
	if b, _ := os.ReadFile(gotFile); strings.TrimSpace(string(b)) != "attempt-wait" {
		t.Errorf("CMD ran with attempt %q, want attempt-wait", b)
	}
	t.Logf("waiting run's stderr:\n%s", waitErr.String())
	once("waiting", waitErr.String())
	if l := n.leases(); len(l) != 0 {
		t.Errorf("leases left: %+v", l)
	}
}

// TestRemovedModuleEndedAtStart: a module removed from the configuration
// while svcrun was down is not left running, unmanaged and uncharged, by
// the next svcrun: what its container holds gets SIGTERM (the stop op may
// be gone with its bundle), and the container goes.
func TestRemovedModuleEndedAtStart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	n := newRestartNode(t, "rmmod")
	n.start()
	if out, code := n.cli("run", "--capability", "kv", "--wait", "20s", "--", "true"); code != 0 {
		t.Fatalf("run: exit %d %s", code, out)
	}
	pidFile := filepath.Join(n.dir, "data", "modules", "demo", "kv.pid")
	var pid int
	if b, err := os.ReadFile(pidFile); err == nil {
		fmt.Sscan(string(b), &pid)
	}
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		t.Fatalf("no kv daemon after the run (pid file %q)", pidFile)
	}
	cg := procfs.Cgroup(pid)
	if cg == "" || !strings.HasSuffix(cg, "/demo/kv") {
		t.Skipf("kv's daemon is not in a cgroup container (%q): the removed module's processes are not svcrun's to find", cg)
	}
	n.serve.Process.Signal(syscall.SIGTERM) // a clean stop leaves the services running
	n.serve.Wait()
	n.serve = nil

	cfg, err := os.ReadFile(n.cfg)
	if err != nil {
		t.Fatal(err)
	}
	node, _, _ := strings.Cut(string(cfg), "[[modules]]")
	if err := os.WriteFile(n.cfg, []byte(node), 0o644); err != nil {
		t.Fatal(err)
	}
	var log lockedBuffer
	cmd := exec.Command(n.bin, "serve", "--config", n.cfg, "--log-format", "text")
	cmd.Stderr = &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n.serve = cmd
	waitUntil(t, "svcrun serve answers",
		func() bool { return exec.Command(n.bin, "status", "--socket", n.sock).Run() == nil })
	if !strings.Contains(log.String(), `msg="not in the configuration: ended on SIGTERM" service=demo/kv`) {
		t.Errorf("no line saying demo/kv was ended:\n%s", log.String())
	}
	waitUntil(t, "the removed module's daemon has ended", func() bool { return procGone(pid) })
	// The container is found under the node's base, wherever the mount
	// and the test's own cgroup put it.
	if loc, err := cgroup.Locate(cgroup.Options{NodeID: n.node}); err != nil {
		t.Errorf("no base for the daemon's container %s: %v", cg, err)
	} else if dir := filepath.Join(loc.Base, "demo", "kv"); !strings.HasSuffix(dir, cg) {
		t.Errorf("the daemon's container %s is not %s", cg, dir)
	} else if _, err := os.Stat(dir); err == nil {
		t.Errorf("the removed service's container %s stays", dir)
	}
}

// procGone says whether pid has exited (gone, or a zombie its new parent
// has yet to reap).
func procGone(pid int) bool {
	f, ok := procfs.Fields(pid)
	return !ok || f[0][0] == 'Z'
}
