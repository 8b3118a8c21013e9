package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/oarbank/svcrun/engine"
)

// Record is one line of the event stream.
type Record struct {
	At   time.Time
	Kind string // the effect's name: note, admitted, rejected, ...; or lost, truncated
	Text string
}

// keptRecords is how many of the latest records the agent keeps for
// readers that ask for the past (`svcrun events --since`); the journal
// has every one.
const keptRecords = 4096

// subscriberBuffer is how far a live reader may fall behind before records
// are lost to it (and a "lost" record tells it how many).
const subscriberBuffer = 256

// eventLog is the event stream: the latest records and the live readers.
// It has a lock of its own: the loop adds, readers subscribe and leave.
type eventLog struct {
	mu      sync.Mutex
	ring    []Record // the kept records, oldest first once full at start
	start   int      // index of the oldest in ring
	evicted time.Time
	subs    map[*subscriber]bool
}

type subscriber struct {
	ch   chan Record
	lost int // records that did not fit since the last delivery
}

// Kinds of the records svcrun adds of its own, outside any engine step.
const (
	RecordReloaded      = "reloaded"       // a reload applied, with what waits for a restart
	RecordReloadRefused = "reload-refused" // a reload refused, with every error
)

// Subscribe returns the records at or after since (none for a zero since
// and no last), the last `last` of them when last > 0, and then streams
// every new record until ctx is done. The past comes from the records kept
// in memory and, before the oldest of them (an earlier run of svcrun, or
// records no longer kept), from the journal, in the same words. A reader
// that falls behind by more than subscriberBuffer records loses records
// rather than slowing the loop, and is told: a record of kind "lost" with
// the count comes first once it has room again. When records at or after
// since are neither kept nor in the journal, the past starts with a record
// of kind "truncated".
func (a *Agent) Subscribe(ctx context.Context, since time.Time, last int) (past []Record, live <-chan Record) {
	sub, kept, oldest, evicted := a.events.subscribe(since, last)
	go func() {
		<-ctx.Done()
		a.events.leave(sub)
	}()
	if since.IsZero() && last == 0 {
		return nil, sub.ch
	}
	// Before the oldest kept record (zero: none kept, no bound), the
	// journal has the rest.
	if (oldest.IsZero() || since.Before(oldest)) && (last == 0 || len(kept) < last) {
		var journaled []Record
		err := errors.New("no journal")
		if a.jour != nil {
			journaled, err = readJournalRecords(a.jour.dir, since, oldest, max(last-len(kept), 0))
			if err != nil {
				a.log.Warn("events: the journal cannot be read: only the records kept in memory are shown", "journal", a.jour.dir,
					"error", err)
			}
		}
		if err != nil && !evicted.IsZero() && !since.After(evicted) && last == 0 {
			past = append(past, Record{At: evicted, Kind: "truncated",
				Text: fmt.Sprintf("records up to %s are no longer kept here (svcrun keeps the "+
					"last %d) and its journal cannot be read: %v", evicted.Format(time.RFC3339Nano), keptRecords, err)})
		}
		kept = append(journaled, kept...)
	}
	if last > 0 && len(kept) > last {
		kept = kept[len(kept)-last:]
	}
	return append(past, kept...), sub.ch
}

func (a *Agent) publish(now time.Time, f engine.Effect) {
	r := Record{At: now, Kind: f.EffectName(), Text: engine.FormatEffect(f)}
	a.stepRecords = append(a.stepRecords, r) // for the step's journal line
	a.events.add(r)
}

// publishOutside adds a record of svcrun's own, made outside any engine
// step (a reload's verdict), to the stream and to the journal, on a line
// of its own. From any goroutine but the loop's.
func (a *Agent) publishOutside(r Record) {
	a.events.add(r)
	_ = a.onLoop(context.Background(), func() { // a stopped loop journals nothing more
		w := a.journalWatch()
		a.writeBegins(w, 0)
		err := a.jour.WriteRecords(r.At, []Record{r})
		if err == nil {
			err = a.jour.Flush()
		}
		a.writeEnds(w)
		if err != nil {
			a.journalFailed(r.At, err)
		}
	})
}

// subscribe adds a live reader and returns it, with the kept records at
// or after since (none for a zero since and no last), when the oldest kept
// one is (zero: none kept) and when records were last evicted.
func (l *eventLog) subscribe(since time.Time, last int) (sub *subscriber, kept []Record, oldest, evicted time.Time) {
	sub = &subscriber{ch: make(chan Record, subscriberBuffer)}
	l.mu.Lock()
	defer l.mu.Unlock()
	evicted = l.evicted
	if len(l.ring) > 0 {
		oldest = l.ring[l.start].At
	}
	if !since.IsZero() || last > 0 {
		for i := range l.ring {
			r := l.ring[(l.start+i)%len(l.ring)]
			if !r.At.Before(since) {
				kept = append(kept, r)
			}
		}
	}
	if l.subs == nil {
		l.subs = map[*subscriber]bool{}
	}
	l.subs[sub] = true
	return sub, kept, oldest, evicted
}

// leave ends a live reader: its channel is closed.
func (l *eventLog) leave(sub *subscriber) {
	l.mu.Lock()
	delete(l.subs, sub)
	l.mu.Unlock()
	close(sub.ch)
}

// add keeps r and hands it to every reader that has room.
func (l *eventLog) add(r Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.ring) < keptRecords {
		l.ring = append(l.ring, r)
	} else {
		l.evicted = l.ring[l.start].At
		l.ring[l.start] = r
		l.start = (l.start + 1) % len(l.ring)
	}
	for sub := range l.subs {
		if sub.lost > 0 {
			select {
			case sub.ch <- Record{At: r.At, Kind: "lost",
				Text: fmt.Sprintf("%d records lost: this reader fell behind (svcrun's journal has them all)", sub.lost)}:
				sub.lost = 0
			default:
				sub.lost++
				continue
			}
		}
		select {
		case sub.ch <- r:
		default:
			sub.lost++
		}
	}
}
