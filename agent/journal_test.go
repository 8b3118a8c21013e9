package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oarbank/svcrun/runtime"
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
		if err := j.Write(at.Add(time.Duration(i)*time.Second), runtime.Doctor{Reason: "r"}, []runtime.Effect{runtime.Note{Subject: "s", Text: "t"}}); err != nil {
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
