package agent

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/internal/testhost"
	"github.com/oarbank/svcrun/store"
)

// TestStateRestoredWithoutJournal: a state file with records whose
// journal is missing or empty (restored without it) starts with a WARN
// that says so; with its journal, or with nothing stored, it does not.
func TestStateRestoredWithoutJournal(t *testing.T) {
	const warn = "but its journal is missing or empty"
	for _, tc := range []struct {
		name    string
		records bool
		journal string // the journal file's content; "-": no journal dir
		want    int
	}{
		{"records, no journal", true, "-", 1},
		{"records, empty journal", true, "", 1},
		{"records and journal", true, "{}\n", 0},
		{"nothing stored, no journal", false, "-", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			data := filepath.Join(filepath.Dir(cfg), "data")
			db, err := store.Open(filepath.Join(data, StateFile), store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.records {
				if err := db.Apply([]engine.Effect{engine.PutService{Service: engine.ServiceRecord{Name: "demo/kv", Failures: 1,
					Reason: "exit 1"}}}); err != nil {
					t.Fatal(err)
				}
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if tc.journal != "-" {
				must(t, os.MkdirAll(filepath.Join(data, "journal"), 0o700))
				must(t, os.WriteFile(filepath.Join(data, "journal", JournalName), []byte(tc.journal), 0o600))
			}
			logs := testhost.NewLogLines(t)
			a, err := Open(Options{PressureFile: noPressure, ConfigPath: cfg,
				Logger: slog.New(slog.NewTextHandler(logs, nil)), NoContainers: true})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- a.Run(ctx) }()
			logs.WaitFor("svcrun starting")
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if n := logs.Count("level=WARN", warn); n != tc.want {
				t.Errorf("%d WARN lines about the journal, want %d", n, tc.want)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
