//go:build unix

package module

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDaemonLifecycle: a daemon starts once, is alive, stops with SIGTERM
// or, when it ignores that, with SIGKILL, and a second stop finds nothing.
func TestDaemonLifecycle(t *testing.T) {
	for _, c := range []struct {
		name      string
		script    string
		escalated bool
	}{
		{"ends on SIGTERM", "exec sleep 1000", false},
		{"ignores SIGTERM", `trap "" TERM; echo up; while :; do sleep 1; done`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			d := Daemon{PIDFile: filepath.Join(dir, "d.pid"), Path: "/bin/sh", Args: []string{"-c", c.script},
				LogFile: filepath.Join(dir, "d.log")}
			if d.Alive() {
				t.Fatal("alive before start")
			}
			started, err := d.Start()
			if err != nil || !started {
				t.Fatalf("start: %v %v", started, err)
			}
			pid, ok, err := d.PID()
			if err != nil || !ok {
				t.Fatalf("after start: pid %d alive %v %v", pid, ok, err)
			}
			if again, err := d.Start(); err != nil || again {
				t.Errorf("second start: started %v %v, want false", again, err)
			}
			if c.escalated {
				// The trap must be set before the TERM, or the shell dies of it.
				waitFor(t, func() bool { b, _ := os.ReadFile(d.LogFile); return strings.Contains(string(b), "up") })
			}
			stopped, escalated, err := d.Stop(200 * time.Millisecond)
			if err != nil || !stopped || escalated != c.escalated {
				t.Errorf("stop: stopped %v escalated %v %v, want true %v", stopped, escalated, err, c.escalated)
			}
			if alive(pid) {
				t.Errorf("pid %d alive after stop", pid)
			}
			if _, err := os.Stat(d.PIDFile); !os.IsNotExist(err) {
				t.Errorf("pid file after stop: %v", err)
			}
			if stopped, _, err := d.Stop(time.Second); err != nil || stopped {
				t.Errorf("second stop: stopped %v %v, want false", stopped, err)
			}
		})
	}
}

// TestDaemonWait: Wait returns once a daemon ends on its own.
func TestDaemonWait(t *testing.T) {
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	d := Daemon{PIDFile: filepath.Join(dir, "d.pid"), Path: "/bin/sh",
		Args: []string{"-c", "while [ ! -e " + gate + " ]; do sleep 0.05; done"}}
	if _, err := d.Start(); err != nil {
		t.Fatal(err)
	}
	if !d.Alive() {
		t.Fatal("not alive after start")
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := d.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if d.Alive() {
		t.Error("alive after Wait")
	}
}

// TestDaemonPIDFile: a missing pid file is not running, a garbled one an
// error, and one naming a dead process not alive, so Start replaces it.
func TestDaemonPIDFile(t *testing.T) {
	dir := t.TempDir()
	d := Daemon{PIDFile: filepath.Join(dir, "d.pid"), Path: "/bin/sh", Args: []string{"-c", "exec sleep 1000"}}
	if pid, ok, err := d.PID(); pid != 0 || ok || err != nil {
		t.Errorf("missing: %d %v %v", pid, ok, err)
	}
	os.WriteFile(d.PIDFile, []byte("garbage\n"), 0o600)
	if _, ok, err := d.PID(); ok || err == nil || !strings.Contains(err.Error(), `"garbage" is not a pid`) {
		t.Errorf("garbled: %v %v", ok, err)
	}
	os.WriteFile(d.PIDFile, []byte("999999999\n"), 0o600)
	if _, ok, err := d.PID(); ok || err != nil {
		t.Errorf("dead: %v %v", ok, err)
	}
	if started, err := d.Start(); !started || err != nil {
		t.Fatalf("start over a dead pid: %v %v", started, err)
	}
	if stopped, _, err := d.Stop(10 * time.Second); !stopped || err != nil {
		t.Errorf("stop: %v %v", stopped, err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 60 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDaemonCredential: as root, a daemon runs as its Credential, in its
// Dir, and is still stopped.
func TestDaemonCredential(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("changing user needs root")
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "d.log")
	d := Daemon{PIDFile: filepath.Join(dir, "d.pid"), Path: "/bin/sh",
		Args:    []string{"-c", `echo "$(id -u) $(pwd)"; exec sleep 1000`},
		LogFile: log, Dir: "/", Credential: &Credential{UID: 65534, GID: 65534}}
	if _, err := d.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { b, _ := os.ReadFile(log); return strings.Contains(string(b), "\n") })
	if b, _ := os.ReadFile(log); string(b) != "65534 /\n" {
		t.Errorf("the daemon said %q, want uid 65534 in /", b)
	}
	if stopped, _, err := d.Stop(10 * time.Second); !stopped || err != nil {
		t.Errorf("stop: %v %v", stopped, err)
	}
}

// TestDaemonPIDFileFailure: a daemon whose pid file cannot be written is
// killed, so that no later start runs a second one beside it.
func TestDaemonPIDFileFailure(t *testing.T) {
	dir := t.TempDir()
	mark := filepath.Join(dir, "daemon.pid")
	d := Daemon{PIDFile: filepath.Join(dir, "missing", "d.pid"), Path: "/bin/sh",
		Args: []string{"-c", "echo $$ > " + mark + "; exec sleep 1000"}}
	started, err := d.Start()
	if started || err == nil || !strings.Contains(err.Error(), "the daemon was killed") {
		t.Fatalf("Start: %v, %v", started, err)
	}
	b, err := os.ReadFile(mark)
	if err != nil { // killed before its first line: nothing ran on
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 { // killed between creating the file and writing it
		return
	}
	if alive(pid) {
		t.Errorf("the daemon %d outlived its failed start", pid)
	}
}
