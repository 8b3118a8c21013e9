package sim

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/oarbank/svcrun/engine"
)

// Divergence is a step whose replay gave other effects than the journal
// recorded.
type Divergence struct {
	File  string
	Line  int // of the journal
	Event string
	Want  []string
	Got   []string
}

func (d Divergence) String() string {
	return fmt.Sprintf("%s:%d (%s): the journal recorded\n    %s\nthe engine now decides\n    %s",
		d.File, d.Line, d.Event, strings.Join(d.Want, "\n    "), strings.Join(d.Got, "\n    "))
}

// JournalLine is one entry of a journal with where it was read.
type JournalLine struct {
	File  string
	Line  int
	Entry engine.JournalEntry
	Event engine.Event
}

// Where names the line in messages: "journal.jsonl:12 (op-done)".
func (l JournalLine) Where() string {
	return fmt.Sprintf("%s:%d (%s)", l.File, l.Line, l.Entry.Event)
}

// ReadJournal reads a journal: one file, or svcrun's journal directory,
// whose rotated files (journal-<time>.jsonl) come before the live
// journal.jsonl, oldest first.
func ReadJournal(path string) ([]JournalLine, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	files := []string{path}
	if info.IsDir() {
		rotated, err := filepath.Glob(filepath.Join(path, "journal-*.jsonl"))
		if err != nil {
			return nil, fmt.Errorf("journal %s: %w", path, err)
		}
		// Their names hold the UTC time of the rotation, so name order
		// is time order.
		sort.Strings(rotated)
		files = rotated
		if _, err := os.Stat(filepath.Join(path, liveJournal)); err == nil {
			files = append(files, filepath.Join(path, liveJournal))
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("journal %s: no %s nor journal-*.jsonl in it", path, liveJournal)
		}
	}
	var out []JournalLine
	for _, f := range files {
		lines, err := readJournalFile(f)
		if err != nil {
			return nil, err
		}
		out = append(out, lines...)
	}
	return out, nil
}

// liveJournal is the name svcrun's agent gives its live journal.
const liveJournal = "journal.jsonl"

func readJournalFile(file string) ([]JournalLine, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	defer f.Close()
	return readJournal(file, f)
}

// readJournal decodes the entries of one journal file. A line svcrun
// tore when a write failed (a full disk) is an error naming it: a replay
// with a step missing would decide differently for reasons of its own.
func readJournal(file string, r io.Reader) ([]JournalLine, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var out []JournalLine
	line := 0
	for sc.Scan() {
		line++
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		l := JournalLine{File: file, Line: line}
		if err := json.Unmarshal(sc.Bytes(), &l.Entry); err != nil {
			return out, fmt.Errorf("%s:%d: %w", file, line, err)
		}
		if l.Entry.Event == "" {
			continue // records alone, made by svcrun outside the engine (a reload's verdict)
		}
		ev, err := l.Entry.DecodeEvent()
		if err != nil {
			return out, fmt.Errorf("%s:%d: %w", file, line, err)
		}
		l.Event = ev
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("%s: %w", file, err)
	}
	return out, nil
}

// Replay re-runs a journal (JSON lines of engine.JournalEntry) through a
// new engine and returns the steps whose effects differ. A journal starts
// with a boot entry; a later boot (svcrun restarted) starts a new engine.
func Replay(r io.Reader) (steps int, divs []Divergence, err error) {
	lines, err := readJournal("journal", r)
	if err != nil {
		return 0, nil, err
	}
	return ReplayLines(lines)
}

// ReplayLines is Replay of lines read by ReadJournal.
func ReplayLines(lines []JournalLine) (steps int, divs []Divergence, err error) {
	var e *engine.Engine
	for _, l := range lines {
		j := l.Entry
		if _, boot := l.Event.(engine.Boot); boot {
			e = engine.New()
		}
		if e == nil {
			return steps, divs, fmt.Errorf("%s: before the first boot", l.Where())
		}
		effects, err := Step(e, j.At, l.Event)
		if err != nil {
			return steps, divs, fmt.Errorf("%s: %w", l.Where(), err)
		}
		got, err := engine.NewJournalEntry(j.At, l.Event, effects)
		if err != nil {
			return steps, divs, fmt.Errorf("%s: %w", l.Where(), err)
		}
		steps++
		if strings.Join(got.Effects, "\n") != strings.Join(j.Effects, "\n") {
			divs = append(divs, Divergence{File: l.File, Line: l.Line, Event: j.Event, Want: j.Effects, Got: got.Effects})
		}
	}
	return steps, divs, nil
}

// Step runs one step of a replay; a journal edited by hand (or from a
// driver that broke the contract) may crash the engine, which is then an
// error naming the line rather than a crash of svcsim.
func Step(e *engine.Engine, at time.Time, ev engine.Event) (effects []engine.Effect, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the engine failed on this step: %v", r)
		}
	}()
	return e.Step(at, ev), nil
}
