package sim

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/oarbank/svcrun/engine"
)

// Divergence is a step whose replay gave other effects than the journal
// recorded.
type Divergence struct {
	Line  int // of the journal
	Event string
	Want  []string
	Got   []string
}

func (d Divergence) String() string {
	return fmt.Sprintf("line %d (%s): the journal recorded\n    %s\nthe engine now decides\n    %s",
		d.Line, d.Event, strings.Join(d.Want, "\n    "), strings.Join(d.Got, "\n    "))
}

// Replay re-runs a journal (JSON lines of engine.JournalEntry) through a
// new engine and returns the steps whose effects differ. A journal starts
// with a boot entry; a later boot (svcrun restarted) starts a new engine.
func Replay(r io.Reader) (steps int, divs []Divergence, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var e *engine.Engine
	line := 0
	for sc.Scan() {
		line++
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		var j engine.JournalEntry
		if err := json.Unmarshal(sc.Bytes(), &j); err != nil {
			return steps, divs, fmt.Errorf("journal line %d: %w", line, err)
		}
		ev, err := j.DecodeEvent()
		if err != nil {
			return steps, divs, fmt.Errorf("journal line %d: %w", line, err)
		}
		if _, boot := ev.(engine.Boot); boot {
			e = engine.New()
		}
		if e == nil {
			return steps, divs, fmt.Errorf("journal line %d: %s before the first boot", line, j.Event)
		}
		effects, err := step(e, j.At, ev)
		if err != nil {
			return steps, divs, fmt.Errorf("journal line %d (%s): %w", line, j.Event, err)
		}
		got, err := engine.NewJournalEntry(j.At, ev, effects)
		if err != nil {
			return steps, divs, fmt.Errorf("journal line %d: %w", line, err)
		}
		steps++
		if strings.Join(got.Effects, "\n") != strings.Join(j.Effects, "\n") {
			divs = append(divs, Divergence{Line: line, Event: j.Event, Want: j.Effects, Got: got.Effects})
		}
	}
	return steps, divs, sc.Err()
}

// step runs one step of a replay; a journal edited by hand (or from a
// driver that broke the contract) may crash the engine, which is then an
// error naming the line rather than a crash of svcsim.
func step(e *engine.Engine, at time.Time, ev engine.Event) (effects []engine.Effect, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the engine failed on this step: %v", r)
		}
	}()
	return e.Step(at, ev), nil
}
