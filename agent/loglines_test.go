package agent

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/oarbank/svcrun/engine"
)

func TestLogDecisionLevels(t *testing.T) {
	var buf bytes.Buffer
	a := &Agent{log: slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	a.logDecisions(now, []engine.Effect{
		engine.Note{Subject: "db/kv", Text: "ready"},
		engine.Note{Subject: "db/kv", Text: "failure 1/3: crashed", Level: engine.NoteWarn},
		engine.Note{Subject: "db/kv", Text: "failure 3/3: crashed; unhealthy", Level: engine.NoteError},
		engine.Rejected{Lease: "l1", Reason: "not admitted in time: pool p: 2 of 2 token(s) held"},
		engine.Expired{Lease: "l2", Reason: "module db removed"},
		engine.Expired{Lease: "l3"},
		engine.Kill{Service: engine.Target{Module: "db", Name: "kv"}},
		engine.Admitted{Lease: "l4"},
	})
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var r struct{ Level, Msg string }
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		got = append(got, r.Level+" "+r.Msg)
	}
	want := []string{
		"INFO ready",
		"WARN failure 1/3: crashed",
		"ERROR failure 3/3: crashed; unhealthy",
		"WARN lease rejected: not admitted in time: pool p: 2 of 2 token(s) held",
		"WARN lease ended: module db removed",
		"WARN kill process container",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("log lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestLoudLinesAreRateLimited(t *testing.T) {
	var l loudLimiter
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for i := range loudLinesPerWindow {
		if ok, _ := l.allow("db/kv", t0.Add(time.Duration(i)*time.Second)); !ok {
			t.Fatalf("line %d refused", i)
		}
	}
	for i := range 3 {
		if ok, _ := l.allow("db/kv", t0.Add(30*time.Second+time.Duration(i))); ok {
			t.Fatalf("line %d past the limit allowed", loudLinesPerWindow+i)
		}
	}
	if ok, _ := l.allow("db/other", t0.Add(30*time.Second)); !ok {
		t.Error("another subject was limited too")
	}
	ok, dropped := l.allow("db/kv", t0.Add(loudWindow))
	if !ok || dropped != 3 {
		t.Errorf("after the window: ok %v, %d left out (want 3)", ok, dropped)
	}
}
