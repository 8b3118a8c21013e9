package agent

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/errdefs"
	"github.com/oarbank/svcrun/sim"
)

// logBuffer is an agent's log, read while it runs.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func startLogged(t *testing.T, cfg string, log *logBuffer) *running {
	t.Helper()
	a, err := Open(Options{PressureFile: noPressure, ConfigPath: cfg,
		Logger: slog.New(slog.NewTextHandler(log, nil)), NoContainers: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{a: a, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- a.Run(ctx) }()
	return r
}

// recordsSince is what `svcrun events --since` gets: the past from since.
func recordsSince(t *testing.T, a *Agent, since time.Time) []Record {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	past, _ := a.Subscribe(ctx, since, 0)
	return past
}

func findRecord(rs []Record, kind string, parts ...string) (Record, bool) {
	for _, r := range rs {
		if r.Kind != kind {
			continue
		}
		all := true
		for _, p := range parts {
			all = all && strings.Contains(r.Text, p)
		}
		if all {
			return r, true
		}
	}
	return Record{}, false
}

// A refused reload is never silent: it is an error, logged at ERROR with
// every error of the file, and a record of the event stream; an applied
// reload is a record too. The journal still replays.
func TestReloadVerdictsAreEvents(t *testing.T) {
	cfg := testConfig(t)
	var log logBuffer
	r := startLogged(t, cfg, &log)
	defer r.stop(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	orig, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(orig), "memory_budget_gb = 1", "memory_budget_gb = -1\nbogus = 1", 1)
	if err := os.WriteFile(cfg, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.a.Reload(ctx); err == nil {
		t.Fatal("a file with errors was reloaded")
	}
	rec, ok := findRecord(recordsSince(t, r.a, time.Unix(0, 0)), RecordReloadRefused,
		"memory_budget_gb", "bogus", "running configuration stays")
	if !ok {
		t.Errorf("no reload-refused record naming both errors: %+v", recordsSince(t, r.a, time.Unix(0, 0)))
	}
	var errLine string
	for line := range strings.Lines(log.String()) {
		if strings.Contains(line, "level=ERROR") && strings.Contains(line, "reload refused") {
			errLine = line
		}
	}
	if !strings.Contains(errLine, "memory_budget_gb") || !strings.Contains(errLine, "bogus") {
		t.Errorf("the ERROR line does not give every error of the file: %q", errLine)
	}
	// A restart-only key changed on its own is refused and names it.
	if err := os.WriteFile(cfg, append(orig, []byte("\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	withListen := strings.Replace(string(orig), "memory_budget_gb = 1",
		"memory_budget_gb = 1\nmetrics_listen = \"127.0.0.1:0\"", 1)
	if err := os.WriteFile(cfg, []byte(withListen), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.a.Reload(ctx); !errors.Is(err, ErrNeedsRestart) || !strings.Contains(err.Error(), "metrics_listen") {
		t.Errorf("a reload setting metrics_listen: %v, want it refused as needing a restart", err)
	}
	if err := os.WriteFile(cfg, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.a.Reload(ctx); err != nil {
		t.Fatalf("reload of the original file: %v", err)
	}
	if _, ok := findRecord(recordsSince(t, r.a, rec.At), RecordReloaded, cfg); !ok {
		t.Errorf("no reloaded record: %+v", recordsSince(t, r.a, rec.At))
	}
	lines, err := sim.ReadJournal(filepath.Join(filepath.Dir(cfg), "data", "journal", JournalName))
	if err != nil {
		t.Fatalf("the journal with records alone does not read: %v", err)
	}
	if _, divs, err := sim.ReplayLines(lines); err != nil || len(divs) > 0 {
		t.Errorf("replay: %v, divergences: %v", err, divs)
	}
}

// A setting that waits for the restart keeps its running value for the
// ops too: a reload that sets sandbox = "require" (which refuses every op
// here: no run_as) leaves the ops under best_effort until the restart.
func TestReloadKeepsSandboxModeForOps(t *testing.T) {
	cfg := testConfig(t)
	r := start(t, cfg, true)
	defer r.stop(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	orig, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, bytes.Replace(orig, []byte(`sandbox = "best_effort"`),
		[]byte(`sandbox = "require"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	notes, err := r.a.Reload(ctx)
	if err != nil || !strings.Contains(strings.Join(notes, ","), "sandbox") {
		t.Fatalf("reload: notes %v, %v", notes, err)
	}
	g, err := r.a.Acquire(ctx,
		AcquireRequest{Requirements: engine.Requirements{Capabilities: []string{"kv"}}, Wait: 30 * time.Second})
	var rej *errdefs.RejectedError
	if errors.As(err, &rej) || err != nil {
		t.Fatalf("after a reload that only notes the sandbox mode, the ops ran under it: %v", err)
	}
	if err := r.a.Release(ctx, g.Lease); err != nil {
		t.Fatal(err)
	}
}

// svcrun events --since reads across restarts: the records of the run
// before a restart are listed after it, in the same words, with those of
// the new run after them.
func TestEventsAcrossRestart(t *testing.T) {
	cfg := testConfig(t)
	r := start(t, cfg, false)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g, err := r.a.Acquire(ctx, AcquireRequest{Job: "before-restart",
		Requirements: engine.Requirements{Capabilities: []string{"kv"}}, Wait: 30 * time.Second})
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	if err := r.a.Release(ctx, g.Lease); err != nil {
		t.Fatal(err)
	}
	before := recordsSince(t, r.a, time.Unix(0, 0))
	admitted, ok := findRecord(before, "admitted", string(g.Lease))
	if !ok {
		t.Fatalf("no admitted record before the restart: %+v", before)
	}
	r.stop(t)

	r = start(t, cfg, true)
	defer r.stop(t)
	g2, err := r.a.Acquire(ctx, AcquireRequest{Job: "after-restart",
		Requirements: engine.Requirements{Capabilities: []string{"kv"}}, Wait: 30 * time.Second})
	if err != nil {
		t.Fatalf("acquire after the restart: %v", err)
	}
	after := recordsSince(t, r.a, admitted.At)
	got, ok := findRecord(after, "admitted", string(g.Lease))
	if !ok || got.Text != admitted.Text || !got.At.Equal(admitted.At) {
		t.Fatalf("the admission before the restart is not listed after it as it was (%+v): %+v", admitted, after)
	}
	if _, ok := findRecord(after, "released", string(g.Lease)); !ok {
		t.Errorf("the release before the restart is missing: %+v", after)
	}
	if _, ok := findRecord(after, "admitted", string(g2.Lease)); !ok {
		t.Errorf("the admission after the restart is missing: %+v", after)
	}
	for i := 1; i < len(after); i++ {
		if after[i].At.Before(after[i-1].At) {
			t.Errorf("records out of order at %d: %+v then %+v", i, after[i-1], after[i])
		}
	}
	// The last N reach back across the restart too (svcrun events, -f).
	ctxS, cancelS := context.WithCancel(ctx)
	defer cancelS()
	last, _ := r.a.Subscribe(ctxS, time.Time{}, len(after))
	if len(last) != len(after) || last[0].Text != after[0].Text {
		t.Errorf("last %d: %d records, first %+v, want %+v", len(after), len(last), last, after[0])
	}
	if err := r.a.Release(ctx, g2.Lease); err != nil {
		t.Fatal(err)
	}
}

// Every kind of record svcrun events can print is listed in
// docs/operating.md: the answers and notes the engine hands the agent
// (engine.Driver.Answer), the agent's own, and the stream's.
func TestEveryRecordKindDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/operating.md")
	if err != nil {
		t.Fatal(err)
	}
	_, events, _ := strings.Cut(string(doc), "## Logs and events")
	events, _, _ = strings.Cut(events, "\n## ")
	kinds := []string{RecordReloaded, RecordReloadRefused, "lost", "truncated"}
	for _, f := range []engine.Effect{engine.Note{}, engine.Admitted{}, engine.AlreadyHeld{},
		engine.Rejected{}, engine.Renewed{},
		engine.Released{}, engine.Expired{}, engine.LeaseUnknown{}, engine.ReapDone{}} {
		kinds = append(kinds, f.EffectName())
	}
	for _, k := range kinds {
		if !strings.Contains(events, "`"+k+"`") {
			t.Errorf("docs/operating.md, Logs and events, does not list the kind %s", k)
		}
	}
}
