package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/oarbank/svcrun/clockwork"
)

// Executor carries out the effects that reach processes. Run must not
// block: the executor posts the op's OpDone to the scheduler when the op
// ends (a real executor from a goroutine, a fake one at a virtual time).
type Executor interface {
	Run(op RunOp)
	Kill(service Target)
	Freeze(service Target)
	Thaw(service Target)
}

// Store makes persistence effects durable. Apply gets the PutLease,
// DeleteLease and PutService effects of one step and must write them as one
// transaction.
type Store interface {
	Apply(batch []Effect) error
}

// Driver is the loop shared by svcrun and svcsim: next event, engine step,
// effects carried out. The agent, the simulated world and the benchmark
// workload all run it; their own events travel on the same scheduler and
// are taken by Own.
type Driver struct {
	Engine *Engine
	Sched  clockwork.Scheduler[Event]
	Exec   Executor
	Store  Store
	// Answer receives the answers and notes (Admitted, Rejected, Renewed,
	// Released, Expired, LeaseUnknown, Note). Optional.
	Answer func(now time.Time, f Effect)
	// Trace sees every step, the event and all its effects, before the
	// effects are carried out; what it keeps of them it copies (see
	// Engine.Step). Optional.
	Trace func(now time.Time, ev Event, effects []Effect)
	// After sees every step once its effects are carried out, or once its
	// store write failed (err); what it returns is the step's error.
	// Optional.
	After func(now time.Time, ev Event, effects []Effect, err error) error
	// Own takes, in Run, the events that are not the engine's (the agent's
	// calls, a fake executor's crashes, a workload's jobs) before the
	// engine sees them, and reports whether it took ev; its error ends
	// Run. Optional.
	Own func(ev Event) (bool, error)

	// slots holds the timers by TimerKey.Slot: what one set needs in one
	// place, as a node of many services touches a far slot at every
	// step.
	slots []timerSlot
	batch []Effect
}

// timerSlot is one timer slot: the timer pending in it, and the Fire last
// scheduled in it, boxed, with its key: a timer set again with the same key
// (a status poll's, every period) reuses it instead of boxing a new one.
type timerSlot struct {
	id   clockwork.TimerID // 0: none pending
	key  TimerKey
	fire Event
}

// Step feeds one event to the engine at the scheduler's time and carries out
// the effects.
func (d *Driver) Step(ev Event) error {
	now := d.Sched.Now()
	effects, err := d.step(now, ev)
	if d.After != nil {
		return d.After(now, ev, effects, err)
	}
	return err
}

func (d *Driver) step(now time.Time, ev Event) ([]Effect, error) {
	if f, ok := ev.(Fire); ok && int(f.Timer.Slot) < len(d.slots) {
		d.slots[f.Timer.Slot].id = 0
	}
	effects := d.Engine.Step(now, ev)
	if d.Trace != nil {
		d.Trace(now, ev, effects)
	}
	d.batch = d.batch[:0]
	for _, f := range effects {
		switch f.(type) {
		case PutLease, DeleteLease, PutService:
			d.batch = append(d.batch, f)
		}
	}
	if len(d.batch) > 0 && d.Store != nil {
		if err := d.Store.Apply(d.batch); err != nil {
			return effects, fmt.Errorf("persist the effects of %s: %w", ev.EventName(), err)
		}
	}
	for _, f := range effects {
		switch f := f.(type) {
		case *RunOp:
			d.Exec.Run(*f)
		case *SetTimer:
			for int(f.Key.Slot) >= len(d.slots) {
				d.slots = append(d.slots, make([]timerSlot, len(d.slots)+64)...)
			}
			s := &d.slots[f.Key.Slot]
			if s.id != 0 {
				d.Sched.Cancel(s.id)
			}
			if s.fire == nil || s.key != f.Key {
				s.key, s.fire = f.Key, Fire{Timer: f.Key}
			}
			s.id = d.Sched.At(f.At, s.fire)
		case *CancelTimer:
			if int(f.Key.Slot) < len(d.slots) {
				if s := &d.slots[f.Key.Slot]; s.id != 0 {
					d.Sched.Cancel(s.id)
					s.id = 0
				}
			}
		case Kill:
			d.Exec.Kill(f.Service)
		case Freeze:
			d.Exec.Freeze(f.Service)
		case Thaw:
			d.Exec.Thaw(f.Service)
		case PutLease, DeleteLease, PutService:
		default:
			if d.Answer != nil {
				d.Answer(now, f)
			}
		}
	}
	return effects, nil
}

// Run takes events from the scheduler until ctx is done or, for a virtual
// scheduler, nothing is left (before its horizon): Own's first, the others
// stepped. It returns the first error of a step or of Own.
func (d *Driver) Run(ctx context.Context) error {
	for {
		ev, ok := d.Sched.Next(ctx)
		if !ok {
			return nil
		}
		if err := d.Handle(ev); err != nil {
			return err
		}
	}
}

// Handle is one turn of Run: ev goes to Own, and to the engine if Own does
// not take it.
func (d *Driver) Handle(ev Event) error {
	if d.Own != nil {
		if taken, err := d.Own(ev); taken || err != nil {
			return err
		}
	}
	return d.Step(ev)
}
