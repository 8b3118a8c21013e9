package agent

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/benbjohnson/clock"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/internal/loglimit"
)

func TestLogDecisionLevels(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a := &Agent{log: log, loud: loglimit.New(log, clock.NewMock())}
	a.logDecisions([]engine.Effect{
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
