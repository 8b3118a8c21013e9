package clockwork

import (
	"context"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
)

// Real is a Scheduler on a clock.Clock: clock.New() in production,
// clock.NewMock() in tests of goroutine-based code.
//
// Pending timers live in one heap ordered by (when, insertion order); a
// single clock timer is armed for the earliest. When it fires, every due
// timer moves, in heap order, to an unbounded FIFO ready queue that Post
// also appends to; Next takes from that queue. Nothing ever blocks a timer
// callback or a Post caller for longer than a short critical section.
//
// At, Cancel, Post and Now are safe for concurrent use from any number of
// goroutines. Next must be called from one goroutine at a time (the driver
// loop).
type Real[E any] struct {
	clock clock.Clock
	base  time.Time     // origin of the int64 times in q
	wake  chan struct{} // 1-buffered: "the ready queue may be non-empty"

	mu      sync.Mutex
	q       queue[E]
	ready   ring[readyItem[E]]
	timer   *clock.Timer // nil until the first future At
	armed   bool
	armedAt int64

	pauses *Pauses
	paused func(time.Duration) E
}

// readyItem is a Post (id 0, ev set) or a fired timer (ev kept in q until
// taken, so that a Cancel after firing still wins).
type readyItem[E any] struct {
	id TimerID
	ev E
}

// NewReal returns a Real scheduler on c.
func NewReal[E any](c clock.Clock) *Real[E] {
	return &Real[E]{
		clock: c,
		base:  c.Now(),
		wake:  make(chan struct{}, 1),
	}
}

// NotePauses makes Next return paused(d), before any other event, once p
// has noticed a pause of length d: the timers that fell due during it are
// then still in the ready queue, where the event's handler can cancel or
// move them. Call it before the first Next.
func (r *Real[E]) NotePauses(p *Pauses, paused func(time.Duration) E) {
	r.pauses, r.paused = p, paused
	if p != nil {
		p.onNotice(r.notify)
	}
}

// Now returns c.Now().
func (r *Real[E]) Now() time.Time { return r.clock.Now() }

// since converts t to nanoseconds from base. Times derived from Now carry
// the monotonic reading of clock.New, so wall-clock jumps do not move them.
func (r *Real[E]) since(t time.Time) int64 { return int64(t.Sub(r.base)) }

// At schedules ev at when. If when is not in the future, ev goes to the
// ready queue at once, after every event already due. Timers due at the
// same instant are delivered in At order.
func (r *Real[E]) At(when time.Time, ev E) TimerID {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.since(r.clock.Now())
	off := max(r.since(when), now) // the past is now: after what is due
	id := r.q.push(off, ev)
	if off <= now {
		r.drainLocked(now)
	} else if !r.armed || off < r.armedAt {
		r.armLocked(off, now)
	}
	return id
}

// Cancel removes a timer. Once it returns true the event is never
// delivered, even if the timer has already fired and its event waits in the
// ready queue.
func (r *Real[E]) Cancel(id TimerID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	// The clock timer stays armed if it was armed for this one; firing
	// early only drains nothing and re-arms.
	return r.q.cancel(id)
}

// Post appends ev to the ready queue (FIFO with other Posts and with
// timers that have fired).
func (r *Real[E]) Post(ev E) {
	r.mu.Lock()
	r.ready.push(readyItem[E]{ev: ev})
	r.mu.Unlock()
	r.notify()
}

// Next blocks until an event is ready or ctx is done; it reports false in
// the latter case, even if events are ready.
func (r *Real[E]) Next(ctx context.Context) (E, bool) {
	var zero E
	for {
		if ctx.Err() != nil {
			return zero, false
		}
		if d := r.pauses.Take(); d > 0 {
			return r.paused(d), true
		}
		r.mu.Lock()
		for r.ready.len() > 0 {
			it := r.ready.pop()
			if it.id == 0 {
				r.mu.Unlock()
				return it.ev, true
			}
			if ev, ok := r.q.take(it.id); ok {
				r.mu.Unlock()
				return ev, true
			}
			// cancelled after it fired: skip
		}
		r.mu.Unlock()
		select {
		case <-r.wake:
		case <-ctx.Done():
			return zero, false
		}
	}
}

// fire is the callback of the clock timer. Stale or early calls are
// harmless: it moves what is due and re-arms for the rest.
func (r *Real[E]) fire() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.armed = false
	now := r.since(r.clock.Now())
	r.drainLocked(now)
	if when, ok := r.q.peek(); ok {
		r.armLocked(when, now)
	}
}

// drainLocked moves every timer due at now to the ready queue, in
// (when, seq) order.
func (r *Real[E]) drainLocked(now int64) {
	moved := false
	for {
		when, ok := r.q.peek()
		if !ok || when > now {
			break
		}
		r.ready.push(readyItem[E]{id: r.q.fire()})
		moved = true
	}
	if moved {
		r.notify()
	}
}

func (r *Real[E]) armLocked(when, now int64) {
	d := time.Duration(when - now)
	if r.timer == nil {
		r.timer = r.clock.AfterFunc(d, r.fire)
	} else {
		r.timer.Reset(d)
	}
	r.armed, r.armedAt = true, when
}

func (r *Real[E]) notify() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// ring is an unbounded FIFO on a power-of-two circular buffer.
type ring[T any] struct {
	buf        []T
	head, size int
}

func (q *ring[T]) len() int { return q.size }

func (q *ring[T]) push(x T) {
	if q.size == len(q.buf) {
		n := 2 * len(q.buf)
		if n == 0 {
			n = 16
		}
		buf := make([]T, n)
		k := copy(buf, q.buf[q.head:])
		copy(buf[k:], q.buf[:q.head])
		q.buf, q.head = buf, 0
	}
	q.buf[(q.head+q.size)&(len(q.buf)-1)] = x
	q.size++
}

func (q *ring[T]) pop() T {
	var zero T
	x := q.buf[q.head]
	q.buf[q.head] = zero
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.size--
	return x
}
