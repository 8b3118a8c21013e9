package scenario

// The order of a replayed journal's steps: at which virtual time each
// step goes so that the simulator takes them in the journal's order.

import (
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/sim"
)

// stepInfo is what the simulator's order of a step at an instant depends
// on. At one instant it runs the events due (timers and op completions) in
// the order they were scheduled, then the inputs, each followed by what it
// scheduled for that instant. The converter numbers what its engine
// schedules (RunOp and SetTimer effects, in order) as the simulator's
// scheduler will.
type stepInfo struct {
	index int // in the journal, from the boot
	input bool
	done  bool
	fire  bool
	// A completion: the step that ran the op; a completion or a fire:
	// its place in the scheduling order.
	opStep int
	seq    int
}

// info describes journal line l, the next step.
func (c *converter) info(l sim.JournalLine) stepInfo {
	in := stepInfo{index: len(c.want)}
	switch e := l.Event.(type) {
	case engine.Fire:
		in.fire, in.seq = true, c.timerSeq[e.Timer]
	case *engine.OpDone:
		run := c.ops[e.ID]
		in.done, in.opStep, in.seq = true, run.step, run.seq
	default:
		in.input = true
	}
	return in
}

func nextDone(next *sim.JournalLine) (engine.OpDone, bool) {
	if next == nil {
		return engine.OpDone{}, false
	}
	if d, ok := next.Event.(*engine.OpDone); ok {
		return *d, true
	}
	return engine.OpDone{}, false
}

// scheduledBefore says whether completion e, at the instant of step p,
// would run before p: against the journal's order.
func scheduledBefore(e, p stepInfo) bool {
	if p.input {
		return e.opStep < p.index // due before the input is played
	}
	return e.seq < p.seq
}

// when is the virtual time of a step. A timer fires at its time in the
// simulator, while svcrun's came a little late (more on a loaded host);
// any other step keeps its time from the boot (an op lasts what it
// lasted), plus the lag of the step before it (see lag), unless a timer that fired after it in production would fire
// first: the step then goes halfway between the step before it and that
// timer, which leaves room for the next steps that came before the timer
// too. A completion that the simulator would run before the step before
// it at the same instant comes a nanosecond later.
func (c *converter) when(l sim.JournalLine, in stepInfo, next *sim.JournalLine) (time.Duration, error) {
	if f, ok := l.Event.(engine.Fire); ok {
		at, set := c.timers[f.Timer]
		if !set {
			return 0, unsayable(l, "a timer %s %s the engine had not set (or had cancelled)", f.Timer.Kind, f.Timer.Subject)
		}
		return max(at, c.now), nil
	}
	lo := c.now
	if in.done && scheduledBefore(in, c.prev) {
		lo += time.Nanosecond
	}
	at := max(l.Entry.At.Sub(c.t0)+c.lag(), lo)
	// An input followed at its instant by the completion of an op already
	// running would come after that completion in the simulator: it goes a
	// nanosecond earlier, rather than the completion later (which would
	// move every timer set from it).
	if d, ok := nextDone(next); ok && in.input && next.Entry.At.Equal(l.Entry.At) && at-time.Nanosecond >= lo {
		if run, running := c.ops[d.ID]; running && run.step < in.index {
			at -= time.Nanosecond
		}
	}
	// The step must come before every pending timer: strictly, unless it
	// is a completion scheduled before the timer.
	var first engine.TimerKey
	bound := time.Duration(-1)
	for k, t := range c.timers {
		limit := t
		if in.done && in.seq < c.timerSeq[k] {
			limit = t + time.Nanosecond
		}
		if bound < 0 || limit < bound || limit == bound && k.Slot < first.Slot {
			first, bound = k, limit
		}
	}
	if bound >= 0 && at >= bound {
		if bound <= lo {
			return 0, unsayable(l,
				"the timer %s %s, due at %v, fired only after this step in production; the simulator fires timers on "+
					"time, and has no room to put this step before it", first.Kind, first.Subject, c.timers[first])
		}
		at = lo + (bound-lo)/2
	}
	return at, nil
}

// lag is how much later than in the journal the last step came in the
// simulator: the nanoseconds a completion was put later, which every timer
// set from it keeps. The next steps keep it too, so that what they set
// keeps its place among those timers at an instant they share.
func (c *converter) lag() time.Duration {
	if len(c.want) == 0 {
		return 0
	}
	return max(0, c.now-c.want[len(c.want)-1].Entry.At.Sub(c.t0))
}
