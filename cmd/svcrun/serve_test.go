//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/oarbank/svcrun/internal/testhost"
)

// lockedLog collects a child's stderr for the test to read while it runs.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
	t  *testing.T
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.t.Log(strings.TrimSuffix(string(p), "\n"))
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestSecondSignalExitsAtOnce: with --stop-services-on-exit, a first
// SIGTERM makes svcrun stop its services; a second one, while a stop op
// still blocks, ends svcrun at once: it has exited while that op still runs
// (the op writes its pid as it begins and never ends by itself; waiting for
// it, svcrun would have killed it at the end of its grace first), and the
// log says the services are left for the next start to adopt.
func TestSecondSignalExitsAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSvcrun(t)
	bundle, err := filepath.Abs("testdata/slow-stop")
	if err != nil {
		t.Fatal(err)
	}
	sdir, err := os.MkdirTemp("", "sig2")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sdir) })
	dir := t.TempDir()
	cfg := filepath.Join(dir, "svcrun.toml")
	sock := filepath.Join(sdir, "s.sock")
	node := testhost.NodeID("sig2")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("node_id = %q\ndata_dir = \"data\"\nsocket = %q\n"+
		"memory_budget_gb = 1\nsandbox = \"best_effort\"\n\n[[modules]]\nbundle = %q\n", node, sock, bundle)),
		0o644); err != nil {
		t.Fatal(err)
	}
	mdata := filepath.Join(dir, "data", "modules", "slowstop")
	t.Cleanup(func() {
		for _, f := range []string{"daemon.pid", "stop.pid"} {
			if pid := readPid(filepath.Join(mdata, f)); pid > 0 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		testhost.RemoveBase(t, node)
	})

	var logs = &lockedLog{t: t}
	cmd := exec.Command(bin, "serve", "--config", cfg, "--log-format", "text", "--stop-services-on-exit")
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{}) // closed when svcrun has exited
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	// Failure guards only: each wait ends on its event.
	const guard = 60 * time.Second
	waitFile := func(what, path string) int {
		t.Helper()
		deadline := time.Now().Add(guard)
		for {
			if pid := readPid(path); pid > 0 {
				return pid
			}
			select {
			case <-exited:
				t.Fatalf("svcrun exited (%v) before %s\n%s", waitErr, what, logs)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s within %v\n%s", what, guard, logs)
			}
			time.Sleep(20 * time.Millisecond) // polling a file another process writes
		}
	}
	waitFile("daemon of slowstop/svc", filepath.Join(mdata, "daemon.pid"))
	// The service is started; it is stopped only once it has been ready,
	// which svcrun logs.
	deadline := time.Now().Add(guard)
	for !strings.Contains(logs.String(), "slowstop/svc") || !strings.Contains(logs.String(), "msg=ready") {
		if time.Now().After(deadline) {
			t.Fatalf("slowstop/svc not ready within %v\n%s", guard, logs)
		}
		time.Sleep(20 * time.Millisecond)
	}

	cmd.Process.Signal(syscall.SIGTERM)
	stopPid := waitFile("stop op of slowstop/svc", filepath.Join(mdata, "stop.pid"))
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(guard):
		t.Fatalf("svcrun still runs %v after the second SIGTERM\n%s", guard, logs)
	}
	if st := procStateOf(stopPid); st == 0 || st == 'Z' {
		t.Errorf("the stop op (pid %d) had ended when svcrun exited: svcrun waited for it instead of exiting at once",
			stopPid)
	}
	if !strings.Contains(logs.String(), "left for the next start to adopt") {
		t.Errorf("the log does not say what happens to the services:\n%s", logs)
	}
}

func readPid(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	return n
}

// procStateOf is the state letter of pid ('Z' zombie), 0 when it is gone.
func procStateOf(pid int) byte {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 || i+2 >= len(data) {
		return 0
	}
	return data[i+2]
}
