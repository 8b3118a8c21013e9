package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oarbank/svcrun/agent"
	"github.com/oarbank/svcrun/api"
)

// testNode is a running agent with its API server.
type testNode struct {
	a       *agent.Agent
	srv     *Server
	c       *api.Client
	socket  string
	dataDir string
	cancel  context.CancelFunc
	done    chan error
}

// demoBundle is the example module: demo/kv with 2 kv-slots, and the
// posix-sh probe.
func demoBundle(t testing.TB) string {
	t.Helper()
	b, err := filepath.Abs("../../examples/modules/demo")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// shortTempDir is a temp dir with a short path, for sockets (sun_path).
func shortTempDir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("", "sv")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// startNode writes a node configuration with the given [[modules]] entries,
// opens the agent, starts the API server, then runs the agent.
func startNode(t testing.TB, modules string, opts ...Option) *testNode {
	t.Helper()
	dir := t.TempDir()
	sock := filepath.Join(shortTempDir(t), "s.sock")
	cfg := filepath.Join(dir, "svcrun.toml")
	text := fmt.Sprintf(`node_id = "test-node"
data_dir = "data"
socket = %q
memory_budget_gb = 4
sandbox = "best_effort"
status_period_s = 1
fingerprint_period_s = 5
reap_period_s = 60

%s`, sock, modules)
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	var w io.Writer = testWriter{t}
	if _, bench := t.(*testing.B); bench || os.Getenv("SVCRUN_TEST_QUIET") != "" {
		w = io.Discard
	}
	log := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
	a, err := agent.Open(agent.Options{ConfigPath: cfg, Logger: log, StopServicesOnExit: true,
		ShutdownGrace: 10 * time.Second, NoContainers: true})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(a, a.Config().Socket, log, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &testNode{a: a, srv: srv, socket: sock, dataDir: filepath.Join(dir, "data"),
		cancel: cancel, done: make(chan error, 1)}
	go func() { n.done <- a.Run(ctx) }()
	n.c, err = api.Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.stop(t) })
	return n
}

func demoModules(t testing.TB) string {
	return fmt.Sprintf("[[modules]]\nbundle = %q\nsettings = { slots = 2 }\n", demoBundle(t))
}

// stop closes the server and stops the agent (once).
func (n *testNode) stop(t testing.TB) {
	if n.cancel == nil {
		return
	}
	n.c.Close()
	if err := n.srv.Close(); err != nil {
		t.Errorf("server close: %v", err)
	}
	n.cancel()
	n.cancel = nil
	select {
	case err := <-n.done:
		if err != nil {
			t.Errorf("agent Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("agent Run did not return")
	}
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond until it holds; the minute is only a guard against a
// hang, however loaded the machine.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within a minute: %s", what)
		}
		time.Sleep(10 * time.Millisecond) // polling the server, not synchronizing with it
	}
}
