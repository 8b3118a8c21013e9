package clockwork

import (
	"context"
	"fmt"
	"time"
)

// Virtual is a Scheduler on virtual time for the simulator: a heap of
// events ordered by (when, insertion order). Popping an event moves Now to
// its time; nothing else moves time except AdvanceTo. It starts no
// goroutines, never sleeps and never reads the wall clock, so the same calls
// yield the same events in the same order, every run.
//
// Virtual is not safe for concurrent use: the driver loop, the engine's
// effects and the fake executors all call it from one goroutine.
type Virtual[E any] struct {
	start time.Time
	now   int64     // nanoseconds since start
	nowT  time.Time // start + now, made when now moves: Now is asked at every step
	// The start's Unix seconds and nanoseconds, for offset's fast path.
	startSec  int64
	startNsec int
	q         queue[E]
	// due holds, in order, the events scheduled for the current Now (Post,
	// and At for a time not after Now): most completions of a simulation.
	// A queue instead of the heap makes them O(1); the order is the same,
	// since an event pushed to the heap for Now was pushed before Now was
	// reached, so before every event in due.
	due     []TimerID
	dueHead int
	dueLive int
	// horizon bounds Next (nanoseconds since start); bounded says it is
	// set.
	horizon int64
	bounded bool
}

// NewVirtual returns a Virtual scheduler whose Now is start. The monotonic
// clock reading of start, if any, is dropped so that results do not depend
// on how start was obtained.
func NewVirtual[E any](start time.Time) *Virtual[E] {
	start = start.Round(0)
	return &Virtual[E]{start: start, nowT: start, startSec: start.Unix(), startNsec: start.Nanosecond()}
}

// setNow moves Now to off nanoseconds since start.
func (v *Virtual[E]) setNow(off int64) {
	v.now = off
	v.nowT = v.start.Add(time.Duration(off))
}

// Now returns the time of the last popped event, of the last AdvanceTo, or
// the start.
func (v *Virtual[E]) Now() time.Time { return v.nowT }

// offset converts when to nanoseconds since start, never before Now. Times
// more than ~292 years from start saturate.
func (v *Virtual[E]) offset(when time.Time) int64 {
	var off int64
	// Within ~285 years of start the difference of the Unix seconds and
	// nanoseconds is when.Sub(start), without Sub's overflow check (an
	// Add and an Equal) at every timer; farther, Sub saturates.
	if sec := when.Unix() - v.startSec; sec > -maxOffsetSec && sec < maxOffsetSec {
		off = sec*int64(time.Second) + int64(when.Nanosecond()-v.startNsec)
	} else {
		off = int64(when.Sub(v.start))
	}
	if off < v.now {
		off = v.now
	}
	return off
}

// maxOffsetSec bounds offset's fast path: seconds whose nanoseconds, give
// or take one second, fit in an int64.
const maxOffsetSec = 9e9

// At schedules ev at when. A when before Now is treated as Now: the event
// pops after every event already due at Now, including earlier Posts.
func (v *Virtual[E]) At(when time.Time, ev E) TimerID {
	off := v.offset(when)
	if off == v.now {
		return v.holdNow(ev)
	}
	return v.q.push(off, ev)
}

func (v *Virtual[E]) holdNow(ev E) TimerID {
	id := v.q.hold(ev)
	v.due = append(v.due, id)
	v.dueLive++
	return id
}

// Cancel removes a pending event. It reports false if id was never issued,
// was already popped or was already cancelled. O(log n).
func (v *Virtual[E]) Cancel(id TimerID) bool {
	if s, ok := v.q.lookup(id); ok && v.q.pos[s] == posHeld {
		v.dueLive--
	}
	return v.q.cancel(id)
}

// Post schedules ev at Now, after every event already due at Now.
func (v *Virtual[E]) Post(ev E) { v.holdNow(ev) }

// popDue takes the next live event of due; dueLive must be > 0.
func (v *Virtual[E]) popDue() E {
	for {
		id := v.due[v.dueHead]
		v.dueHead++
		if v.dueHead == len(v.due) {
			v.due, v.dueHead = v.due[:0], 0
		}
		s, ok := v.q.lookup(id)
		if !ok {
			continue // cancelled
		}
		ev := v.q.evs[s]
		v.q.release(s)
		v.dueLive--
		return ev
	}
}

// Next pops the earliest event (ties in insertion order) and moves Now to
// its time. It reports false when nothing is pending or ctx is done, and
// when the earliest event is after the horizon.
func (v *Virtual[E]) Next(ctx context.Context) (E, bool) {
	var zero E
	if done := ctx.Done(); done != nil {
		select {
		case <-done:
			return zero, false
		default:
		}
	}
	if v.bounded && v.now > v.horizon {
		return zero, false
	}
	// Heap events due now were pushed before Now was reached: they come
	// first; then the events held for Now; then time moves.
	if when, ok := v.q.peek(); ok && when <= v.now {
		_, ev := v.q.pop()
		return ev, true
	}
	if v.dueLive > 0 {
		return v.popDue(), true
	}
	if when, ok := v.q.peek(); !ok || v.bounded && when > v.horizon {
		return zero, false
	}
	when, ev := v.q.pop()
	v.setNow(when) // never backwards: every pending when is >= now
	return ev, true
}

// SetHorizon makes Next stop, as if nothing were left, at events after t,
// so that a loop that runs to the end runs to t; the zero t lifts the
// bound. Time does not move to t: AdvanceTo does that.
func (v *Virtual[E]) SetHorizon(t time.Time) {
	v.horizon, v.bounded = int64(t.Sub(v.start)), !t.IsZero()
}

// Len returns the number of pending events.
func (v *Virtual[E]) Len() int { return v.q.len() + v.dueLive }

// Peek returns the time of the next event, if any.
func (v *Virtual[E]) Peek() (time.Time, bool) {
	if v.dueLive > 0 {
		return v.Now(), true
	}
	when, ok := v.q.peek()
	if !ok {
		return time.Time{}, false
	}
	return v.start.Add(time.Duration(when)), true
}

// AdvanceTo moves Now forward to t without popping anything, for inputs
// such as "an hour passes". It refuses to skip: if an event is pending
// strictly before t it returns an error wrapping ErrWouldSkip and leaves Now
// unchanged (events due exactly at t stay pending and pop at t). A t before
// Now returns an error wrapping ErrBackwards.
func (v *Virtual[E]) AdvanceTo(t time.Time) error {
	off := int64(t.Sub(v.start))
	if off < v.now {
		return fmt.Errorf("%w: now %s, asked %s", ErrBackwards, v.Now().Format(time.RFC3339Nano), t.Format(time.RFC3339Nano))
	}
	if v.dueLive > 0 && off > v.now {
		return fmt.Errorf("%w: %d pending at %s, before %s", ErrWouldSkip, v.dueLive,
			v.Now().Format(time.RFC3339Nano), t.Format(time.RFC3339Nano))
	}
	if when, ok := v.q.peek(); ok && when < off {
		return fmt.Errorf("%w: %d pending, the next at %s, before %s", ErrWouldSkip, v.q.len(),
			v.start.Add(time.Duration(when)).Format(time.RFC3339Nano), t.Format(time.RFC3339Nano))
	}
	v.setNow(off)
	return nil
}

// Stall moves Now forward to t without popping anything, as a process
// stopped meanwhile sees the time go by: the events due before t stay
// pending, late, and pop first (in order of time) once Next is called
// again, after whatever the caller steps first. Nothing may be held for
// Now (Post) when it stalls: those would pop after the late events,
// out of order. A t before Now returns an error wrapping ErrBackwards.
func (v *Virtual[E]) Stall(t time.Time) error {
	off := int64(t.Sub(v.start))
	if off < v.now {
		return fmt.Errorf("%w: now %s, asked %s", ErrBackwards, v.Now().Format(time.RFC3339Nano), t.Format(time.RFC3339Nano))
	}
	if v.dueLive > 0 {
		return fmt.Errorf("stall: %d event(s) pending at %s: run them first", v.dueLive, v.Now().Format(time.RFC3339Nano))
	}
	v.setNow(off)
	return nil
}
