// Package clockwork owns time and the order of events for the driver loop
// of svcrun and svcsim:
//
//	for {
//		ev, ok := sched.Next(ctx)
//		if !ok {
//			break
//		}
//		effects := engine.Step(sched.Now(), ev)
//		carryOut(effects) // may call sched.At, sched.Cancel, sched.Post
//	}
//
// The loop is the same in both worlds; only the Scheduler differs. Real runs
// on a clock.Clock from github.com/benbjohnson/clock (clock.New() in
// production) and receives completions posted by executor goroutines.
// Virtual runs on virtual time for the simulator and property tests.
//
// # Ordering
//
// Both implementations deliver events in the order of (when, insertion):
// an earlier time first, and among equal times the one scheduled first.
// A when in the past means "as soon as possible": the event comes after
// every event that was already due when it was scheduled, never before.
// Post(ev) is At(Now(), ev): posts are FIFO among themselves and with
// past-due timers.
//
// Virtual keeps this order exactly; it is the point of the type, since it
// makes a simulation a pure function of its inputs. Real keeps it for
// timers that are in its heap together when the clock reaches them (so
// timers set for the same instant come out in At order) and for Posts
// (FIFO), but a Post made while a due timer's callback has not yet run can
// overtake that timer: real time has no total order to preserve there.
//
// Cancel(id) returns true only if the event was pending, and then the event
// is never returned by Next, even if (in Real) its timer had already fired
// and the event was waiting to be taken. Cancelling an event that Next
// already returned, cancelling twice, or cancelling an unknown id or the
// zero TimerID returns false. Ids are never reused within a scheduler.
//
// # Time
//
// Virtual.Now is the start time until the first event pops; popping an
// event moves Now to the event's time, and AdvanceTo moves it forward to a
// chosen time when nothing is pending before it ("an hour passes"). Now
// never moves backwards, and nothing else moves it. Times are kept as
// nanoseconds from the start; times more than about 292 years away
// saturate.
//
// Real.Now is the clock's Now. Deadlines are kept as offsets from the time
// the scheduler was made, measured with the monotonic clock when the
// deadline was derived from Now (as time.Time.Add keeps it), so a change of
// the wall clock does not fire or delay timers.
//
// # Concurrency
//
// Virtual is not safe for concurrent use. It needs no lock because nothing
// in the simulated world runs concurrently: fake executors schedule their
// completions with At on the loop's goroutine.
//
// Real's At, Cancel, Post and Now are safe for concurrent use by any number
// of goroutines; Next must be called by one goroutine at a time. Pending
// timers sit in one heap with one clock timer armed for the earliest; fired
// timers and posts go to an unbounded queue, so neither a timer callback
// nor a Post ever waits for the loop to catch up.
//
// # Why Virtual has no goroutines, and why clock.Mock is not the simulator
//
// A simulation must be deterministic and fast. Any goroutine between
// "timer due" and "event delivered" hands the order of events to the Go
// scheduler, and waiting for such goroutines needs real sleeps. clock.Mock
// does both: Mock.Add runs each AfterFunc callback on a new goroutine and
// sleeps a millisecond of real time per fired timer (about 900 simulated
// events per second), and its Timer and Ticker are concrete structs, so no
// other queue can stand behind its interface. Virtual is a plain heap: At
// and Next cost about 100 ns together and allocate nothing in the steady
// state (bench/README.md, row scheduler), so a simulated week of a large
// node runs in seconds.
//
// clock.Mock remains the right tool for tests of Real and of other
// goroutine-based shell code.
package clockwork
