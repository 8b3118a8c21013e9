package engine

import (
	"fmt"
	"slices"
	"time"

	"github.com/oarbank/svcrun/protocol"
)

// runOp starts op for a service or probe if a global slot is free;
// otherwise the actor queues for one and false is returned.
func (e *Engine) runOp(a actor, r *opRun, target Target, args []string, timeout time.Duration) bool {
	if e.ops.len() >= e.cfg.MaxConcurrentOps {
		b, first := a.base(), lifecycleOp(r.op)
		if b.waitSlot && (b.waitFirst || !first) {
			return false
		}
		// Queued for a poll and now in need of a lifecycle op (it
		// crashed while its status waited): it moves up, as if it had
		// queued for the lifecycle op in the first place.
		e.leaveSlotQueue(a)
		b.waitSlot, b.waitFirst = true, first
		i := len(e.slotQueue)
		if first {
			// A restart after a crash must not wait for the status
			// polls of every other service: a node of many services
			// keeps the slots busy with them.
			if j := slices.IndexFunc(e.slotQueue, func(x actor) bool { return !x.base().waitFirst }); j >= 0 {
				i = j
			}
		}
		e.slotQueue = slices.Insert(e.slotQueue, i, a)
		return false
	}
	e.nextOp++
	r.id = e.nextOp
	e.ops.put(r)
	f := e.runOps.next()
	*f = RunOp{ID: r.id, Target: target, Index: a.base().slot / timerKinds, Op: r.op, Args: args, Timeout: timeout}
	e.emit(f)
	return true
}

func (e *Engine) opDone(d *OpDone) {
	r := e.ops.get(d.ID)
	if r == nil {
		e.note("engine", "completion of unknown op %d ignored", d.ID)
		return
	}
	e.ops.remove(d.ID)
	e.freeSlots()
	d.Outcome = checkOutcome(r.op, d.Outcome)
	if r.svc != nil {
		e.reapOpDone(r, d.Outcome)
		e.serviceOpDone(r.svc, r, d.Outcome)
	} else {
		e.probeOpDone(r.prb, d.Outcome)
	}
}

// checkOutcome turns a success without the result its op returns into a
// protocol failure: the executor never reports one, but the engine must
// not act on a missing result (a hand-edited journal replayed, a driver
// bug).
func checkOutcome(op protocol.Op, o Outcome) Outcome {
	if o.Failure != FailNone {
		return o
	}
	r := o.Result
	var ok bool
	switch op {
	case protocol.OpFingerprint:
		ok = r.Fingerprint != nil
	case protocol.OpStart, protocol.OpStop, protocol.OpDestroy:
		ok = r.OpResult != nil
	case protocol.OpStatus, protocol.OpReady:
		ok = r.Status != nil
	case protocol.OpListOwned:
		ok = r.OwnedList != nil
	}
	if ok && r.Op == op {
		return o
	}
	return Outcome{Failure: FailProtocol,
		Message: fmt.Sprintf("%s: succeeded without a %s result (the executor's result is for %q)", op, op, r.Op)}
}

// lifecycleOp says op moves a service between stopped and ready: it is
// queued for a slot ahead of watch polls and reaping.
func lifecycleOp(op protocol.Op) bool {
	return op == protocol.OpStart || op == protocol.OpStop || op == protocol.OpReady
}

// leaveSlotQueue takes an actor out of the queue for op slots, if it is in.
func (e *Engine) leaveSlotQueue(a actor) {
	b := a.base()
	if !b.waitSlot {
		return
	}
	b.waitSlot = false
	if i := slices.Index(e.slotQueue, a); i >= 0 {
		e.slotQueue = slices.Delete(e.slotQueue, i, i+1)
	}
}

// freeSlots hands free global slots to the actors queued for them, in
// order: lifecycle ops first, each kind in FIFO order.
func (e *Engine) freeSlots() {
	for len(e.slotQueue) > 0 && e.ops.len() < e.cfg.MaxConcurrentOps {
		a := e.slotQueue[0]
		e.slotQueue = e.slotQueue[1:]
		a.base().waitSlot = false
		a.reconcile(e)
	}
}
