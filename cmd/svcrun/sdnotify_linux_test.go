package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oarbank/svcrun/internal/testhost"
)

// listenNotify is a stand-in for systemd's notification socket: the
// messages received, one datagram each, on a channel.
func listenNotify(t *testing.T, name string) <-chan string {
	t.Helper()
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	msgs := make(chan string, 1024)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(msgs)
				return
			}
			msgs <- string(buf[:n])
		}
	}()
	return msgs
}

// TestNotifierSends: a path and an abstract name ('@') both get the message
// as one datagram; without $NOTIFY_SOCKET nothing is sent and nothing fails.
func TestNotifierSends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "n.sock")
	abstract := fmt.Sprintf("@svcrun-test-notify-%d", os.Getpid())
	for _, tc := range []struct{ addr, listen string }{
		{path, path},
		{abstract, "\x00" + abstract[1:]},
	} {
		msgs := listenNotify(t, tc.listen)
		if err := (notifier{addr: tc.addr}).send("READY=1\nSTATUS=x"); err != nil {
			t.Fatalf("%s: %v", tc.addr, err)
		}
		if got := <-msgs; got != "READY=1\nSTATUS=x" {
			t.Errorf("%s: got %q", tc.addr, got)
		}
	}
	if err := (notifier{}).send("READY=1"); err != nil {
		t.Errorf("without $NOTIFY_SOCKET: %v", err)
	}
}

// TestWatchdogInterval: half of $WATCHDOG_USEC, none without it or when
// $WATCHDOG_PID is another process's, an error for a bad value.
func TestWatchdogInterval(t *testing.T) {
	self := fmt.Sprint(os.Getpid())
	for _, tc := range []struct {
		usec, pid string
		want      time.Duration
		bad       bool
	}{
		{"", "", 0, false},
		{"30000000", "", 15 * time.Second, false},
		{"30000000", self, 15 * time.Second, false},
		{"30000000", "1", 0, false},
		{"soon", "", 0, true},
		{"0", "", 0, true},
	} {
		t.Setenv("WATCHDOG_USEC", tc.usec)
		t.Setenv("WATCHDOG_PID", tc.pid)
		got, err := watchdogInterval()
		if got != tc.want || (err != nil) != tc.bad {
			t.Errorf("WATCHDOG_USEC=%q WATCHDOG_PID=%q: %v, %v; want %v (error: %v)", tc.usec, tc.pid, got, err, tc.want, tc.bad)
		}
	}
}

// TestServeNotifiesSystemd runs the binary as systemd would run a
// Type=notify unit with WatchdogSec=: READY=1 comes once the API socket
// answers, WATCHDOG=1 periodically, RELOADING=1 with MONOTONIC_USEC and then
// READY=1 around a SIGHUP reload, STOPPING=1 at SIGTERM. (That the pings
// stop while the loop is blocked is agent's TestWatchdogOnlyWhileTheLoopRuns.)
func TestServeNotifiesSystemd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSvcrun(t)
	sdir, err := os.MkdirTemp("", "sdn")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sdir) })
	dir := t.TempDir()
	cfg := filepath.Join(dir, "svcrun.toml")
	sock := filepath.Join(sdir, "s.sock")
	node := testhost.NodeID("sdnotify")
	t.Cleanup(func() { testhost.RemoveBase(t, node) })
	if err := os.WriteFile(cfg,
		[]byte(fmt.Sprintf(
			"node_id = %q\ndata_dir = \"data\"\nsocket = %q\nmemory_budget_gb = 1\nsandbox = \"best_effort\"\n", node, sock)),
		0o644); err != nil {
		t.Fatal(err)
	}
	notifySock := filepath.Join(sdir, "notify.sock")
	msgs := listenNotify(t, notifySock)

	logs := &lockedLog{t: t}
	cmd := exec.Command(bin, "serve", "--config", cfg, "--log-format", "text")
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+notifySock, "WATCHDOG_USEC=40000")
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-exited
		}
	})
	guard := time.After(60 * time.Second) // a failure guard only
	// next returns the next message that is not a watchdog ping, counting
	// the pings on the way.
	pings := 0
	next := func(what string) string {
		t.Helper()
		for {
			select {
			case m := <-msgs:
				if m == "WATCHDOG=1" {
					pings++
					continue
				}
				return m
			case err := <-exited:
				t.Fatalf("svcrun exited (%v) before %s\n%s", err, what, logs)
			case <-guard:
				t.Fatalf("no %s in 60s\n%s", what, logs)
			}
		}
	}
	if m := next("READY=1"); m != "READY=1" {
		t.Fatalf("first message %q, want READY=1", m)
	}
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatalf("READY=1 sent, but the API socket does not answer: %v", err)
	}
	c.Close()
	for pings < 3 {
		select {
		case m := <-msgs:
			if m != "WATCHDOG=1" {
				t.Fatalf("unexpected %q while waiting for watchdog pings", m)
			}
			pings++
		case <-guard:
			t.Fatalf("%d watchdog pings in 60s\n%s", pings, logs)
		}
	}

	cmd.Process.Signal(syscall.SIGHUP)
	m := next("RELOADING=1")
	if !strings.HasPrefix(m, "RELOADING=1\nMONOTONIC_USEC=") {
		t.Errorf("at SIGHUP %q, want RELOADING=1 with MONOTONIC_USEC", m)
	}
	if m := next("READY=1 after the reload"); m != "READY=1" {
		t.Errorf("after the reload %q, want READY=1", m)
	}

	cmd.Process.Signal(syscall.SIGTERM)
	if m := next("STOPPING=1"); m != "STOPPING=1" {
		t.Errorf("at SIGTERM %q, want STOPPING=1", m)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("svcrun exited with %v\n%s", err, logs)
		}
	case <-guard:
		t.Fatalf("svcrun still runs 60s after SIGTERM\n%s", logs)
	}
}

// TestServeDefaultConfig: without --config, serve reads the packaged
// configuration.
func TestServeDefaultConfig(t *testing.T) {
	_, out, errs := run(t, "serve", "-h")
	if !strings.Contains(out+errs, DefaultConfig) {
		t.Errorf("serve -h does not name the default %s:\n%s%s", DefaultConfig, out, errs)
	}
}
