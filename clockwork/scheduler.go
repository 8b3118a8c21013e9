package clockwork

import (
	"context"
	"errors"
	"time"
)

// Scheduler hands the driver loop its events one at a time, in order.
//
// See the package documentation for the ordering guarantees and the
// concurrency rules of each implementation.
type Scheduler[E any] interface {
	// Now returns the current time. For Virtual it is the time of the last
	// popped event (or of the last AdvanceTo, or the start).
	Now() time.Time
	// At delivers ev at when. A when in the past means as soon as possible,
	// still after the events already due.
	At(when time.Time, ev E) TimerID
	// Cancel reports whether the timer was pending and is now gone; it is
	// false for an event already returned by Next, for a second Cancel and
	// for an unknown or zero id.
	Cancel(id TimerID) bool
	// Post delivers ev as soon as possible, after everything already due.
	Post(ev E)
	// Next returns the next event. It reports false when ctx is done, and
	// for Virtual also when nothing is left.
	Next(ctx context.Context) (E, bool)
}

// TimerID names a timer set with At. It is opaque and comparable, never
// reused within one scheduler, and its zero value means "no timer":
// Cancel(0) is always false.
type TimerID uint64

var (
	// ErrWouldSkip is returned by Virtual.AdvanceTo when an event is pending
	// before the target time: time may only pass over what has been handled.
	ErrWouldSkip = errors.New("clockwork: advancing would skip a pending event")
	// ErrBackwards is returned by Virtual.AdvanceTo for a time before Now.
	ErrBackwards = errors.New("clockwork: time cannot move backwards")
)

var (
	_ Scheduler[int] = (*Virtual[int])(nil)
	_ Scheduler[int] = (*Real[int])(nil)
)
