package scenario

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/protocol"
	"github.com/oarbank/svcrun/sim"
)

// journalOf runs a scenario file and keeps its steps as svcrun's journal
// would.
func journalOf(t *testing.T, file string) []sim.JournalLine {
	t.Helper()
	sc, err := ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return recordJournal(t, sc)
}

// recordJournal runs a scenario and keeps its steps as svcrun's journal
// would.
func recordJournal(t *testing.T, sc *Scenario) []sim.JournalLine {
	t.Helper()
	var lines []sim.JournalLine
	sc.onStep = func(now time.Time, ev engine.Event, effects []engine.Effect) {
		j, err := engine.NewJournalEntry(now, ev, effects)
		if err != nil {
			t.Fatal(err)
		}
		// Through JSON, as the journal keeps it.
		b, _ := json.Marshal(j)
		var back engine.JournalEntry
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		dec, err := back.DecodeEvent()
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, sim.JournalLine{File: "journal.jsonl", Line: len(lines) + 1, Entry: back, Event: dec})
	}
	if _, err := sc.Run(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// TestFromJournalRoundTrip: a journal becomes a scenario whose own run
// gives the trace written into it, and whose window hides what it must.
func TestFromJournalRoundTrip(t *testing.T) {
	lines := journalOf(t, "testdata/journal-source.txt")
	restart := slices.IndexFunc(lines[1:], func(l sim.JournalLine) bool { return l.Entry.Event == "boot" }) + 1
	for _, tc := range []struct {
		name      string
		win       JournalWindow
		want, not []string
		from      int // the first line given
	}{
		// A journal whose files begin at a restart: the store held
		// leases and failures, the daemons ran on.
		{name: "from a restart", from: restart, want: []string{
			"stored lease l1 attempt=a1 cap=kv pool=slots:1 admitted=-",
			"stored service db/kv failures=2 backoff_until=-36s reason: crashed: its process container emptied",
			"behaviour db/kv running",
			"(store: leases l1, l2; services db/cache failures=1, db/kv failures=2)", "db/kv: adopted",
		}},
		{name: "whole", want: []string{"at 12s emptied db/kv", "owner-stop db/cache",
			"behaviour db/kv pools=slots:3", "> restart", "db/kv: failure 1/5", "admitted l2 (db/cache)",
			"disable db why: disabled through svcrun's API (svcrun disable)", "enable db why: enabled",
			"disable-all why: svcrun is stopping (--stop-services-on-exit)", "at 1m2.5s emptied db/kv"},
			// The stop found the daemon running: as the fake does, since it
			// ran when the stop started.
			not: []string{"owner-start"}},
		{name: "window", win: JournalWindow{From: 10 * time.Second, Service: "db/kv"},
			want: []string{"window from=10s service=db/kv", "line(s) before this one not shown", "emptied db/kv"},
			not:  []string{"admitted l2", "run db/cache", "acquire l1"}},
		{name: "to", win: JournalWindow{To: 30 * time.Second}, want: []string{"run 30s"}, not: []string{"> restart"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, err := FromJournal("svcsim replay journal --scenario x.txt", lines[tc.from:], tc.win)
			if err != nil {
				t.Fatal(err)
			}
			sc, err := Parse("x.txt", text)
			if err != nil {
				t.Fatal(err)
			}
			res, err := sc.Run()
			if err != nil {
				t.Fatal(err)
			}
			if !sc.HasExpected || res.Trace() != sc.Expected {
				t.Fatalf("the written trace is not the scenario's own:\n%s",
					unifiedDiff(sc.Expected, res.Trace(), "written", "run", 3, 40))
			}
			for _, w := range tc.want {
				if !strings.Contains(string(text), w) {
					t.Errorf("no %q in\n%s", w, text)
				}
			}
			trace := sc.Expected
			for _, n := range tc.not {
				if strings.Contains(trace, n) {
					t.Errorf("the trace shows %q:\n%s", n, trace)
				}
			}
		})
	}
}

// TestFromJournalUnsayable: what the scenario language cannot say, or a
// journal the scenario does not reproduce, is an error naming the line.
func TestFromJournalUnsayable(t *testing.T) {
	base := journalOf(t, "testdata/tiny.txt")
	firstDone := func(ls []sim.JournalLine) int {
		for i, l := range ls {
			if _, ok := l.Event.(*engine.OpDone); ok {
				return i
			}
		}
		t.Fatal("no op-done")
		return 0
	}
	for _, tc := range []struct {
		name   string
		edit   func([]sim.JournalLine) []sim.JournalLine
		line   string // where the error must point
		reason string
	}{
		{name: "no boot", edit: func(ls []sim.JournalLine) []sim.JournalLine { return ls[1:] }, reason: "no boot entry"},
		{name: "spawn failure", edit: func(ls []sim.JournalLine) []sim.JournalLine {
			i := firstDone(ls)
			d := *ls[i].Event.(*engine.OpDone) // the other cases share base's
			d.Outcome = engine.Outcome{Failure: engine.FailSpawn, Message: "exec format error"}
			ls[i].Event = &d
			return ls
		}, line: "journal.jsonl:2 (op-done)", reason: "no spawn failure"},
		{name: "effects changed", edit: func(ls []sim.JournalLine) []sim.JournalLine {
			i := firstDone(ls)
			ls[i].Entry.Effects = append(ls[i].Entry.Effects, "kill db/kv")
			return ls
		}, line: "journal.jsonl:2 (op-done)", reason: "the engine decides otherwise than the journal recorded"},
		{name: "stored reason", edit: func(ls []sim.JournalLine) []sim.JournalLine {
			b := ls[0].Event.(engine.Boot)
			b.State.Services = []engine.ServiceRecord{{Name: "db/kv", Failures: 2, Reason: "start failed: #3"}}
			ls[0].Event = b
			return ls
		}, line: "journal.jsonl:1 (boot)", reason: "not words separated by single spaces without #"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines := tc.edit(append([]sim.JournalLine(nil), base...))
			_, err := FromJournal("svcsim replay", lines, JournalWindow{})
			if err == nil || !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("got %v, want an error saying %q", err, tc.reason)
			}
			var u *Unsayable
			if tc.line != "" && (!errors.As(err, &u) || u.Where != tc.line) {
				t.Fatalf("got %v, want it at %s", err, tc.line)
			}
		})
	}
}

// TestFromJournalLateTimer: svcrun's idle timer, due at 9s, fired only at
// 9.5s, after a renew at 9.2s; the simulator fires it on time, so the
// renew moves before it (halfway from the step before), and the steps
// still come in the journal's order.
func TestFromJournalLateTimer(t *testing.T) {
	lines := journalOf(t, "testdata/tiny.txt")
	fire := slices.IndexFunc(lines, func(l sim.JournalLine) bool {
		return l.Entry.Event == "fire" && l.Entry.At.Equal(sim.Epoch.Add(9*time.Second))
	})
	if fire < 0 || lines[fire+1].Entry.Event != "op-done" {
		t.Fatal("testdata/tiny.txt no longer idles out at 9s")
	}
	late := sim.Epoch.Add(9500 * time.Millisecond)
	lines[fire].Entry.At, lines[fire+1].Entry.At = late, late
	renew := sim.JournalLine{File: "journal.jsonl", Line: 99, Event: engine.Renew{Lease: "zz"},
		Entry: engine.JournalEntry{At: sim.Epoch.Add(9200 * time.Millisecond), Event: "renew",
			Effects: []string{"unknown lease zz"}}}
	lines = slices.Insert(lines, fire, renew)
	text, err := FromJournal("svcsim replay", lines, JournalWindow{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), "at 6.5s renew zz\n") || !strings.Contains(string(text), "op=stop duration=500ms") {
		t.Fatalf("the renew is not before the timer, or the stop does not end at its time:\n%s", text)
	}
}

// TestFromJournalNotReproduced: a failed start's message, which the fakes
// cannot give, ends in a rejection reason; the scenario, run before it is
// written, does not reproduce that step, and says which.
func TestFromJournalNotReproduced(t *testing.T) {
	sc, err := ParseFile("testdata/tiny.txt")
	if err != nil {
		t.Fatal(err)
	}
	e := engine.New()
	var lines []sim.JournalLine
	step := func(at time.Duration, ev engine.Event) engine.OpID {
		effects := e.Step(sim.Epoch.Add(at), ev)
		j, err := engine.NewJournalEntry(sim.Epoch.Add(at), ev, effects)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, sim.JournalLine{File: "journal.jsonl", Line: len(lines) + 1, Entry: j, Event: ev})
		for _, f := range effects {
			if r, ok := f.(*engine.RunOp); ok {
				return r.ID
			}
		}
		return 0
	}
	no := false
	fp := step(0, engine.Boot{Config: sc.Config,
		Modules: []engine.ModuleSpec{{Module: sc.Modules[0].Module, Enabled: true}}})
	step(time.Second, &engine.OpDone{ID: fp,
		Outcome: engine.Outcome{Result: protocol.Result{Op: protocol.OpFingerprint,
			Fingerprint: &protocol.Fingerprint{Running: &no, Healthy: true}}}})
	start := step(2*time.Second,
		engine.Acquire{Lease: "l1", Attempt: "a1", Requirements: engine.Requirements{Capabilities: []string{"kv"}},
			Wait: time.Minute})
	stop := step(3*time.Second,
		&engine.OpDone{ID: start, Outcome: engine.Outcome{Failure: engine.FailOp, Message: "exit status 3: disk full"}})
	step(3500*time.Millisecond,
		&engine.OpDone{ID: stop,
			Outcome: engine.Outcome{Result: protocol.Result{Op: protocol.OpStop, OpResult: &protocol.OpResult{OK: true}}}})
	step(3600*time.Millisecond,
		engine.Acquire{Lease: "l2", Attempt: "a2", Requirements: engine.Requirements{Capabilities: []string{"kv"}}})
	if !strings.Contains(strings.Join(lines[5].Entry.Effects, " "), "disk full") {
		t.Fatalf("the rejection of l2 does not say the failure: %v", lines[5].Entry.Effects)
	}
	_, err = FromJournal("svcsim replay", lines, JournalWindow{})
	var u *Unsayable
	if !errors.As(err, &u) || u.Where != "journal.jsonl:6 (acquire)" ||
		!strings.Contains(u.Reason, "does not reproduce this step") || !strings.Contains(u.Reason, "exit status 1") {
		t.Fatalf("got %v, want the acquire at line 6 not reproduced", err)
	}
}

// TestFromJournalContained: the journal of contained services (their
// container-populated events, each just before the end of the op that left
// the daemon, and the status periods they set) becomes a scenario that
// reproduces it step by step.
func TestFromJournalContained(t *testing.T) {
	for _, file := range []string{"testdata/journal-contained.txt"} {
		text, err := FromJournal("svcsim replay", journalOf(t, file), JournalWindow{})
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		if !strings.Contains(string(text), " populated web/") {
			t.Errorf("%s: no populated input in the scenario:\n%s", file, text)
		}
	}
}
