//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oarbank/svcrun/internal/testhost"
)

// TestReplayRealJournal closes the loop end to end: a real svcrun with the
// demo module serves two leases (one start), is killed with SIGKILL and
// started again (it adopts the daemon), the daemon is killed (a crash,
// nothing left to stop, a start after the backoff), the module is disabled and
// enabled by hand, svcrun stops (stopping its services); its journal
// directory becomes a scenario, and `svcsim test` passes on it.
func TestReplayRealJournal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs svcrun")
	}
	bin := filepath.Join(t.TempDir(), "svcrun")
	if out, err := exec.Command("go", "build", "-o", bin, "../svcrun").CombinedOutput(); err != nil {
		t.Fatalf("go build svcrun: %v\n%s", err, out)
	}
	demo, _ := filepath.Abs("../../examples/modules/demo")
	sdir, err := os.MkdirTemp("", "rp") // short: a socket path has a length limit
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sdir) })
	dir := t.TempDir()
	sock := filepath.Join(sdir, "s.sock")
	node := testhost.NodeID("rp") // a base cgroup of its own
	cfg := filepath.Join(dir, "svcrun.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("node_id = %q\ndata_dir = \"data\"\nsocket = %q\nmemory_budget_gb = 1\n"+
		"sandbox = \"best_effort\"\n\n[[modules]]\nbundle = %q\n", node, sock, demo)), 0o644)
	data := filepath.Join(dir, "data")
	pidFile := filepath.Join(data, "modules", "demo", "kv.pid")
	killDaemon := func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			var p int
			fmt.Sscan(string(b), &p)
			if p > 0 {
				syscall.Kill(p, syscall.SIGKILL)
			}
		}
	}

	var serve *exec.Cmd
	var log bytes.Buffer
	start := func(flags ...string) {
		serve = exec.Command(bin, append([]string{"serve", "--config", cfg, "--log-format", "text"}, flags...)...)
		serve.Stderr = &log
		// It announces its socket in the test's directory, not where a
		// user's commands (as root: /run/svcrun/socket) would find it.
		serve.Env = append(os.Environ(), "SVCRUN_RUNTIME_DIR="+dir)
		if err := serve.Start(); err != nil {
			t.Fatal(err)
		}
	}
	start()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			serve.Process.Signal(syscall.SIGTERM)
			serve.Wait()
		}
	}
	t.Cleanup(func() {
		stop()
		killDaemon() // svcrun leaves its services running for the next start to adopt
		testhost.RemoveBase(t, node)
	})
	// waitFor polls a real daemon (no virtual time here); the bound only
	// guards against a hang.
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %s within 60 s; svcrun's log:\n%s", what, log.String())
			}
		}
	}
	cli := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, append([]string{args[0], "--socket", sock}, args[1:]...)...).Output()
		if err != nil {
			t.Fatalf("svcrun %v: %v\n%s", args, err, log.String())
		}
		return string(out)
	}
	waitFor("svcrun answering", func() bool { return exec.Command(bin, "status", "--socket", sock).Run() == nil })
	var l1, l2 struct{ Lease string }
	json.Unmarshal([]byte(cli("acquire", "--capability", "kv", "--json", "--wait", "20s")), &l1)
	json.Unmarshal([]byte(cli("acquire", "--pool", "kv-slots=2", "--json", "--wait", "20s")), &l2)
	if l1.Lease == "" || l2.Lease == "" {
		t.Fatalf("acquire: %+v %+v", l1, l2)
	}
	cli("release", l2.Lease)
	journal := filepath.Join(data, "journal")
	readyCount := func() int {
		b, _ := os.ReadFile(filepath.Join(journal, "journal.jsonl"))
		return len(readyDone.FindAll(b, -1))
	}
	waitFor("ready demo/kv in the journal", func() bool { return readyCount() == 1 })
	// svcrun dies (kill -9) and starts again: the journal goes on with a
	// second boot, which adopts demo/kv and keeps the lease.
	serve.Process.Signal(syscall.SIGKILL)
	serve.Wait()
	start("--stop-services-on-exit")
	waitFor("svcrun answering again", func() bool { return exec.Command(bin, "status", "--socket", sock).Run() == nil })
	waitFor("demo/kv adopted", func() bool { return readyCount() == 2 })
	killDaemon()
	waitFor("demo/kv restarted after its crash", func() bool { return readyCount() == 3 })
	cli("release", l1.Lease)
	// By hand, then at the exit: reloads with reasons of their own.
	cli("disable", "demo")
	cli("enable", "demo")
	stop()

	out := filepath.Join(t.TempDir(), "incident.txt")
	if code, stdout, stderr := run(t, "replay", journal, "--scenario", out); code != 0 {
		t.Fatalf("replay --scenario: exit %d\n%s%s", code, stdout, stderr)
	}
	text, _ := os.ReadFile(out)
	for _, want := range []string{"acquire " + l1.Lease, "release " + l2.Lease, "> restart (store: leases " + l1.Lease,
		"demo/kv: adopted", "demo/kv: failure 1/3: crashed", "run demo/kv start #",
		"disable demo why: disabled through svcrun's API (svcrun disable)",
		"enable demo why: ", "disable demo why: svcrun is stopping (--stop-services-on-exit)"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("the replayed scenario lacks %q:\n%s", want, text)
		}
	}
	if code, stdout, stderr := run(t, "test", out); code != 0 {
		t.Fatalf("svcsim test of the replayed journal: exit %d\n%s%s\n%s", code, stdout, stderr, text)
	}
}

// readyDone matches a journaled ready op that found demo/kv ready, in the
// journal's raw JSON (whatever the case of the result's keys).
var readyDone = regexp.MustCompile(
	`(?i)"op":"ready","fingerprint":null,"opresult":null,"status":\{"running":true,"ready":true`)
