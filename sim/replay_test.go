package sim

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/protocol"
)

// journalOf runs an exploration-like history and records its journal.
func journalOf(t *testing.T, seed uint64) *bytes.Buffer {
	t.Helper()
	draw := seededDraw(seed)
	n := genNode(draw, "n1")
	w := Build(n.Config, n.Modules, n.Behaviours)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	w.Observe = func(now time.Time, ev engine.Event, effects []engine.Effect) {
		j, err := engine.NewJournalEntry(now, ev, effects)
		if err != nil {
			t.Fatal(err)
		}
		if err := enc.Encode(j); err != nil {
			t.Fatal(err)
		}
	}
	w.Boot()
	a := newActor(w, n, nil)
	for i := 0; i < 300; i++ {
		a.Act(pick(draw, "action", actionKinds), draw)
	}
	return &buf
}

func TestReplayMatches(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		j := journalOf(t, seed)
		steps, divs, err := Replay(j)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if len(divs) > 0 || steps == 0 {
			t.Fatalf("seed %d: %d steps, divergence:\n%s", seed, steps, divs[0])
		}
	}
}

func TestReplayFindsDivergence(t *testing.T) {
	j := journalOf(t, 3).String()
	// Turn the recorded op successes into failures: the replay must notice.
	const ok, bad = `"Failure":""`, `"Failure":"failed"`
	if !strings.Contains(j, ok) {
		t.Fatalf("no successful op in the journal:\n%.2000s", j)
	}
	tampered := strings.ReplaceAll(j, ok, bad)
	_, divs, err := Replay(strings.NewReader(tampered))
	if err != nil {
		t.Fatal(err)
	}
	if len(divs) == 0 {
		t.Fatal("a changed op result went unnoticed")
	}
}

// TestReplayOfResultsWithoutPayload: a journal whose successful op
// results lost their payload (edited by hand, or from a driver that broke
// the contract) replays without a crash: the engine takes each as a
// protocol failure, and the replay reports the divergence.
func TestReplayOfResultsWithoutPayload(t *testing.T) {
	var out strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(journalOf(t, 3).String()), "\n") {
		var j engine.JournalEntry
		if err := json.Unmarshal([]byte(line), &j); err != nil {
			t.Fatal(err)
		}
		if ev, err := j.DecodeEvent(); err == nil {
			if d, ok := ev.(*engine.OpDone); ok && d.Outcome.Failure == engine.FailNone {
				d.Outcome.Result = protocol.Result{Op: protocol.OpStatus}
				e, err := engine.NewJournalEntry(j.At, d, nil)
				if err != nil {
					t.Fatal(err)
				}
				j.Data = e.Data
			}
		}
		b, _ := json.Marshal(j)
		out.Write(append(b, '\n'))
	}
	_, divs, err := Replay(strings.NewReader(out.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(divs) == 0 {
		t.Fatal("results without payload went unnoticed")
	}
}
