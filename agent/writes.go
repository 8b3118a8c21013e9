package agent

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/oarbank/svcrun/engine"
)

// writable refuses a request that needs a write before it reaches the
// engine, which changes its state before the step is stored: every one
// once the state file or its log is unlinked (store.ErrUnlinked), and
// while the data dir is full those that can wait (canWait: a new or
// renewed lease).
func (a *Agent) writable(canWait bool) error {
	if err := a.db.Unlinked(); err != nil {
		return err
	}
	if !canWait {
		return nil
	}
	if err := a.db.Writable(); err != nil {
		return fmt.Errorf("%w: new and renewed leases are refused until space is freed", err)
	}
	return nil
}

// checkLinked looks whether the state file and its log are still linked
// where they were opened, and logs at ERROR the first time they are not.
// Nothing else changes: the loop goes on (its writes reach files nobody
// reads again, harmlessly), the services run on, and writable refuses
// requests from then on.
func (a *Agent) checkLinked() {
	if a.db.Unlinked() != nil {
		return
	}
	if err := a.db.CheckLinked(); err != nil {
		a.log.Error("data dir: every request that needs a write is refused; running services are left alone", "error", err)
	}
}

// storeGate is the driver's store: it writes to a.persist, watched by
// a.storeWatch.
type storeGate struct{ a *Agent }

func (g storeGate) Apply(batch []engine.Effect) error {
	w := g.a.storeWatch()
	g.a.writeBegins(w, len(batch))
	measured := g.a.meters.storeWrite(g.a.opts.Clock.Now(), g.a.opts.Clock.Now)
	err := g.a.persist.Apply(batch)
	measured()
	g.a.writeEnds(w)
	return err
}

// writeWatch watches the loop's writes of one kind (the store's, the
// journal's), which may wait for a stalled disk: it logs at ERROR once a
// write has waited a.slowWrite (it may wait forever) and, at its end, its
// duration if it took that long. With limit, a stall is logged at most
// once a journalLogEvery (its duration only if its wait was). One timer,
// made at the first write and reset at each: there are two writes at
// every step, and a timer with its closures for each was a tenth of an
// API round trip's allocations.
type writeWatch struct {
	what  string
	limit *atomic.Int64
	// where gives the attributes of its lines, for a write of effects.
	where func(effects int) []any
	timer *clock.Timer

	mu sync.Mutex
	// n is the write in progress (a.snaps' number), 0 between writes;
	// logged is set once its wait is logged.
	n       uint64
	effects int
	start   time.Time
	logged  bool
}

func (a *Agent) storeWatch() *writeWatch {
	if a.storeW == nil {
		a.storeW = &writeWatch{what: "store write", where: func(effects int) []any {
			return []any{"state_file", a.db.Path(), "effects", effects}
		}}
	}
	return a.storeW
}

func (a *Agent) journalWatch() *writeWatch {
	if a.jourW == nil {
		a.jourW = &writeWatch{what: "journal write", limit: &a.jourSlow, where: func(int) []any {
			return []any{"journal", a.jour.dir}
		}}
	}
	return a.jourW
}

// writeBegins starts watching a write of w's kind.
func (a *Agent) writeBegins(w *writeWatch, effects int) {
	n, start := a.snaps.writeBegins(), a.opts.Clock.Now()
	w.mu.Lock()
	w.n, w.effects, w.start, w.logged = n, effects, start, false
	w.mu.Unlock()
	if w.timer == nil {
		w.timer = a.opts.Clock.AfterFunc(a.slowWrite, func() { a.writeWaited(w) })
	} else {
		w.timer.Reset(a.slowWrite)
	}
}

// writeWaited runs when w's timer fires: the write in progress has waited
// a.slowWrite, unless the fire is a late one of an earlier write.
func (a *Agent) writeWaited(w *writeWatch) {
	w.mu.Lock()
	n, effects, start := w.n, w.effects, w.start
	w.mu.Unlock()
	if n == 0 || a.opts.Clock.Now().Sub(start) < a.slowWrite {
		return
	}
	a.snaps.writeSlow(n) // status and metrics stop waiting for the loop
	if !w.allow(a.opts.Clock.Now()) {
		return
	}
	w.mu.Lock()
	if w.n == n {
		w.logged = true
	}
	w.mu.Unlock()
	a.log.Error(w.what+" waiting for the disk: status and metrics answer from the last snapshot "+
		"published meanwhile (every answered step, others up to a second behind)", append([]any{"waited", a.slowWrite},
		w.where(effects)...)...)
}

// writeEnds ends the watch of w's write in progress.
func (a *Agent) writeEnds(w *writeWatch) {
	w.timer.Stop()
	w.mu.Lock()
	n, effects, start, logged := w.n, w.effects, w.start, w.logged
	w.n = 0
	w.mu.Unlock()
	a.snaps.writeEnds(n)
	now := a.opts.Clock.Now()
	if took := now.Sub(start); took >= a.slowWrite && (logged || w.allow(now)) {
		a.log.Error("slow "+w.what, append([]any{"took", took}, w.where(effects)...)...)
	}
}

// allow says whether a line about a stall may be logged at now.
func (w *writeWatch) allow(now time.Time) bool {
	if w.limit == nil {
		return true
	}
	last := w.limit.Load()
	return (last == 0 || now.UnixNano()-last >= int64(journalLogEvery)) && w.limit.CompareAndSwap(last, now.UnixNano())
}

// journalFailed logs a failure of the journal at most once a
// journalLogEvery, with the number of failures since the last line.
func (a *Agent) journalFailed(now time.Time, err error) {
	a.jourFails++
	a.jourDown = true
	if !a.jourLogged.IsZero() && now.Sub(a.jourLogged) < journalLogEvery {
		return
	}
	a.log.Warn("journal: steps are not journaled", "error", err, "failures", a.jourFails,
		"next_report_in", journalLogEvery)
	a.jourLogged, a.jourFails = now, 0
}

// record journals a step and logs its decisions.
func (a *Agent) record(now time.Time, ev engine.Event, effects []engine.Effect) {
	a.logDecisions(effects)
	// Every step reaches the file (not the disk) before the next one: a
	// journal that lags would miss the last steps before a kill -9, when
	// it is needed most. The write is off the answers' path.
	w := a.journalWatch()
	a.writeBegins(w, 0)
	jerr := a.jour.Write(now, ev, effects, a.stepRecords)
	a.stepRecords = a.stepRecords[:0]
	if jerr == nil {
		jerr = a.jour.Flush()
	}
	a.writeEnds(w)
	switch {
	case jerr != nil:
		a.journalFailed(now, jerr)
	case a.jourDown && now.Sub(a.jourLogged) >= journalLogEvery: // at most a line a minute, this one too
		a.log.Info("journal: journaling again", "failures", a.jourFails)
		a.jourLogged, a.jourFails, a.jourDown = now, 0, false
	}
}
