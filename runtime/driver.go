package runtime

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
	Kill(service string)
	Freeze(service string)
	Thaw(service string)
}

// Store makes persistence effects durable. Apply gets the PutLease,
// DeleteLease and PutService effects of one step and must write them as one
// transaction.
type Store interface {
	Apply(batch []Effect) error
}

// Driver is the loop shared by svcrun and svcsim: next event, engine step,
// effects carried out.
type Driver struct {
	Engine *Engine
	Sched  clockwork.Scheduler[Event]
	Exec   Executor
	Store  Store
	// Answer receives the answers and notes (Admitted, Rejected, Renewed,
	// Released, Expired, LeaseUnknown, Note). Optional.
	Answer func(now time.Time, f Effect)
	// Trace sees every step: the event and all its effects. Optional.
	Trace func(now time.Time, ev Event, effects []Effect)

	timers []clockwork.TimerID // by TimerKey.Slot; 0: none pending
	batch  []Effect
}

// Step feeds one event to the engine at the scheduler's time and carries out
// the effects.
func (d *Driver) Step(ev Event) error {
	if f, ok := ev.(Fire); ok && int(f.Timer.Slot) < len(d.timers) {
		d.timers[f.Timer.Slot] = 0
	}
	now := d.Sched.Now()
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
			return fmt.Errorf("persist the effects of %s: %w", ev.EventName(), err)
		}
	}
	for _, f := range effects {
		switch f := f.(type) {
		case RunOp:
			d.Exec.Run(f)
		case SetTimer:
			for int(f.Key.Slot) >= len(d.timers) {
				d.timers = append(d.timers, make([]clockwork.TimerID, len(d.timers)+64)...)
			}
			if id := d.timers[f.Key.Slot]; id != 0 {
				d.Sched.Cancel(id)
			}
			d.timers[f.Key.Slot] = d.Sched.At(f.At, Fire{Timer: f.Key})
		case CancelTimer:
			if int(f.Key.Slot) < len(d.timers) {
				if id := d.timers[f.Key.Slot]; id != 0 {
					d.Sched.Cancel(id)
					d.timers[f.Key.Slot] = 0
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
	return nil
}

// Run steps events until ctx is done or, for a virtual scheduler, nothing is
// left; it returns the first store error.
func (d *Driver) Run(ctx context.Context) error {
	for {
		ev, ok := d.Sched.Next(ctx)
		if !ok {
			return nil
		}
		if err := d.Step(ev); err != nil {
			return err
		}
	}
}
