package agent

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/errdefs"
	"github.com/oarbank/svcrun/sim"
)

// testConfig writes a node config using the example demo module, with a
// data dir in a temp dir.
// noPressure is a pressure file that does not exist: the agents of the
// tests do not watch the host's memory pressure, which a loaded machine
// would turn into yields no test asked for (signals_linux_test.go fakes
// the file).
const noPressure = "testdata/no-such-pressure-file"

func testConfig(t *testing.T) string {
	t.Helper()
	bundle, err := filepath.Abs("../examples/modules/demo")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "svcrun.toml")
	text := `node_id = "test-node"
data_dir = "data"
memory_budget_gb = 1
sandbox = "best_effort"
status_period_s = 1
fingerprint_period_s = 5
reap_period_s = 2

[[modules]]
bundle = "` + bundle + `"
settings = { slots = 2 }
`
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

type running struct {
	a      *Agent
	cancel context.CancelFunc
	done   chan error
}

func start(t *testing.T, cfg string, stopServices bool) *running {
	t.Helper()
	a, err := Open(Options{PressureFile: noPressure, ConfigPath: cfg,
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil)), StopServicesOnExit: stopServices, NoContainers: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{a: a, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- a.Run(ctx) }()
	return r
}

func (r *running) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return")
	}
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

func TestLeaseAdoptionAndStop(t *testing.T) {
	cfg := testConfig(t)
	r := start(t, cfg, false)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	g, err := r.a.Acquire(ctx, AcquireRequest{Job: "j1",
		Requirements: engine.Requirements{Capabilities: []string{"kv"},
			Pools: map[string]int64{"kv-slots": 1}}, Wait: 20 * time.Second})
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	if len(g.Services) != 1 || g.Services[0] != "demo/kv" {
		t.Fatalf("grant %+v", g)
	}
	st, err := r.a.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s := st.Services[0]; !s.Ready || s.Refs != 1 {
		t.Fatalf("kv: %+v", s)
	}
	// A request beyond the pool's capacity (2 slots from the settings) waits
	// and is rejected with the reason.
	_, err = r.a.Acquire(ctx,
		AcquireRequest{Requirements: engine.Requirements{Pools: map[string]int64{"kv-slots": 2}},
			Wait: 500 * time.Millisecond})
	var rej *errdefs.RejectedError
	if !errors.As(err, &rej) || !strings.Contains(rej.Reason, "pool kv-slots") {
		t.Fatalf("oversized request: %v", err)
	}

	// svcrun stops (SIGTERM): the service stays up, the lease is kept.
	r.stop(t)
	r = start(t, cfg, true)
	st, err = r.a.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range st.Leases {
		found = found || (l.ID == g.Lease && l.Admitted)
	}
	if !found {
		t.Fatalf("lease %s lost across the restart: %+v", g.Lease, st.Leases)
	}
	if err := r.a.Release(ctx, g.Lease); err != nil {
		t.Fatalf("release after restart: %v", err)
	}
	if err := r.a.Release(ctx, g.Lease); !errors.Is(err, errdefs.ErrUnknownLease) {
		t.Fatalf("second release: %v", err)
	}
	r.stop(t) // --stop-services-on-exit
	journal, err := os.ReadFile(filepath.Join(filepath.Dir(cfg), "data", "journal", JournalName))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(journal), "run demo/kv start"); n != 1 {
		t.Errorf("demo/kv was started %d times across the restart, want 1 (adopted)", n)
	}
	if !strings.Contains(string(journal), "run demo/kv stop") {
		t.Error("no stop at exit in the journal")
	}
	// The production journal replays through a new engine to the same
	// decisions (svcsim replay).
	steps, divs, err := sim.Replay(strings.NewReader(string(journal)))
	if err != nil || len(divs) > 0 || steps < 10 {
		t.Errorf("replay: %d steps, %v, divergences: %v", steps, err, divs)
	}
	pid, err := os.ReadFile(filepath.Join(filepath.Dir(cfg), "data", "modules", "demo", "kv.pid"))
	if err == nil {
		t.Fatalf("kv still has a pid file after a stop on exit: %s", pid)
	}
}

// TestRequireSandbox checks that sandbox = "require" refuses the ops of a
// module whose sandbox cannot be applied whole, and says which layer is
// missing (here, as root with no run_as: the op would share svcrun's
// identity).
func TestRequireSandbox(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the missing layer differs when svcrun is not root")
	}
	cfg := testConfig(t)
	data, _ := os.ReadFile(cfg)
	if err := os.WriteFile(cfg, []byte(strings.Replace(string(data), `sandbox = "best_effort"`,
		`sandbox = "require"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	r := start(t, cfg, true)
	defer r.stop(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := r.a.Acquire(ctx,
		AcquireRequest{Requirements: engine.Requirements{Capabilities: []string{"kv"}}, Wait: 3 * time.Second})
	var rej *errdefs.RejectedError
	if !errors.As(err, &rej) {
		t.Fatalf("an op ran without its whole sandbox: %v", err)
	}
	st, err := r.a.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(st.SandboxMissing, "\n"), "run_as") {
		t.Fatalf("status does not name the missing layer: %q", st.SandboxMissing)
	}
}
