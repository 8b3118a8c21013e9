package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oarbank/svcrun/engine"
)

func TestJournalRotates(t *testing.T) {
	dir := t.TempDir()
	j, err := OpenJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	j.MaxBytes, j.Keep = 300, 2
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 40; i++ {
		if err := j.Write(at.Add(time.Duration(i)*time.Second), engine.Doctor{Reason: "r"},
			[]engine.Effect{engine.Note{Subject: "s", Text: "t"}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	rotated, _ := filepath.Glob(filepath.Join(dir, "journal-*.jsonl"))
	if len(rotated) != 2 {
		t.Errorf("%d rotated files kept, want 2: %v", len(rotated), rotated)
	}
	live, err := os.ReadFile(filepath.Join(dir, JournalName))
	if err != nil || !strings.Contains(string(live), `"event":"doctor"`) {
		t.Errorf("live journal: %v %q", err, live)
	}
}

// A journal whose file is already closed (its buffered lines cannot be
// written any more) closes without an error; the write error is only for
// the log.
func TestJournalCloseAfterFileClosed(t *testing.T) {
	j, err := OpenJournal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := j.Write(at, engine.Doctor{Reason: "r"}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := j.f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Errorf("Close of a journal whose file is closed: %v, want nil", err)
	}
}

// TestJournalLineAllocations: a line is encoded into the journal's own
// buffer, not copied out of encoding/json for each step (a step of the
// API's release: 11 allocations with json.Marshal, 9 now).
func TestJournalLineAllocations(t *testing.T) {
	j, err := OpenJournal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ev := engine.Release{Lease: "lease-1"}
	effects := []engine.Effect{engine.DeleteLease{Lease: "lease-1"}, engine.Released{Lease: "lease-1"}}
	n := testing.AllocsPerRun(100, func() {
		if err := j.Write(at, ev, effects, nil); err != nil {
			t.Fatal(err)
		}
	})
	if n > 9 {
		t.Errorf("%.0f allocations to journal a release, want at most 9", n)
	}
}
