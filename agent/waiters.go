package agent

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/oarbank/svcrun/engine"
)

// waitKey names what a caller waits for the answer to: a lease's request
// (acquire, renew, release) or a reap round it asked for (its ticket).
type waitKey struct {
	lease engine.LeaseID
	reap  string
}

func leaseKey(id engine.LeaseID) waitKey { return waitKey{lease: id} }

func reapKey(ticket string) waitKey { return waitKey{reap: ticket} }

// reply is an answer as its waiter gets it; an admission's comes with the
// services and probes its lease depends on (Grant.Uses, Grant.Probes).
type reply struct {
	f      engine.Effect
	uses   []engine.ServiceStatus
	probes []engine.ProbeStatus
}

// waiter is a caller waiting for the answer to its request.
type waiter struct {
	ch      chan reply
	accepts func(engine.Effect) bool
	// acquire is set for an Acquire's waiter, whose lease is withdrawn when
	// svcrun stops before the answer; caps are its capabilities, whose
	// probes its grant lists.
	acquire bool
	caps    []string
}

// waiters are the callers waiting for answers from the loop. They have a
// lock of their own: the API's goroutines register and give up, the loop
// delivers, and shutdown closes.
type waiters struct {
	mu     sync.Mutex
	m      map[waitKey][]waiter
	closed bool
}

// call posts ev and waits for the first answer to key that accepts takes:
// the driver's Answer hook (Agent.answer) hands every answer to deliver,
// which sends it on this call's channel. A closed channel is shutdown's
// (ErrStopping). If ctx ends first the call stops waiting, and the request
// stays posted: an acquire's caller withdraws it.
func (a *Agent) call(ctx context.Context, key waitKey, ev engine.Event,
	accepts func(engine.Effect) bool) (reply, error) {
	w := waiter{ch: make(chan reply, 1), accepts: accepts}
	if acq, ok := ev.(engine.Acquire); ok {
		w.acquire, w.caps = true, acq.Capabilities
	}
	if err := a.waiters.add(key, w); err != nil {
		return reply{}, err
	}
	if err := a.post(ev); err != nil {
		a.waiters.remove(key, w.ch)
		return reply{}, err
	}
	select {
	case r, ok := <-w.ch:
		if !ok {
			return reply{}, ErrStopping
		}
		return r, nil
	case <-ctx.Done():
		a.waiters.remove(key, w.ch)
		return reply{}, ctx.Err()
	}
}

// deliver hands an answer of the loop to the first waiter of key that
// accepts it: a Renew queued behind a TTL expiry must not take the Expired,
// it gets its own "unknown lease". On the loop.
func (a *Agent) deliver(key waitKey, f engine.Effect) {
	to, ok := a.waiters.take(key, f)
	if !ok {
		return
	}
	a.snaps.answered = true
	r := reply{f: f}
	if to.acquire {
		// What the lease depends on as it was admitted: the engine is as
		// this stored step left it.
		switch f := f.(type) {
		case engine.Admitted:
			r.uses, r.probes = a.engine.StatusOf(f.Services, to.caps)
		case engine.AlreadyHeld:
			r.uses, r.probes = a.engine.StatusOf(f.Services, to.caps)
		}
	}
	to.ch <- r
}

func (ws *waiters) add(key waitKey, w waiter) error {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.closed {
		return ErrStopping
	}
	if ws.m == nil {
		ws.m = map[waitKey][]waiter{}
	}
	ws.m[key] = append(ws.m[key], w)
	return nil
}

// take removes and returns the first waiter of key that accepts f.
func (ws *waiters) take(key waitKey, f engine.Effect) (waiter, bool) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for i, w := range ws.m[key] {
		if w.accepts(f) {
			ws.drop(key, i)
			return w, true
		}
	}
	return waiter{}, false
}

// remove removes the waiter whose channel is ch, a caller's that gave up.
func (ws *waiters) remove(key waitKey, ch chan reply) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for i, w := range ws.m[key] {
		if w.ch == ch {
			ws.drop(key, i)
			return
		}
	}
}

func (ws *waiters) drop(key waitKey, i int) {
	l := ws.m[key]
	l = append(l[:i:i], l[i+1:]...)
	if len(l) == 0 {
		delete(ws.m, key)
		return
	}
	ws.m[key] = l
}

// close tells every waiter that svcrun stops (its channel closed) and takes
// no more; it returns the leases of the acquires among them, in order.
func (ws *waiters) close() []engine.LeaseID {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.closed = true
	var acquires []engine.LeaseID
	for _, key := range slices.SortedFunc(maps.Keys(ws.m), compareKeys) {
		for _, w := range ws.m[key] {
			if w.acquire {
				acquires = append(acquires, key.lease)
			}
			close(w.ch)
		}
	}
	ws.m = nil
	return acquires
}

func compareKeys(x, y waitKey) int {
	return cmp.Or(cmp.Compare(x.lease, y.lease), cmp.Compare(x.reap, y.reap))
}

// Answer kinds each request waits for.
func acquireAnswer(f engine.Effect) bool {
	switch f.(type) {
	case engine.Admitted, engine.AlreadyHeld, engine.Rejected:
		return true
	}
	return false
}

func renewAnswer(f engine.Effect) bool {
	switch f.(type) {
	case engine.Renewed, engine.LeaseUnknown:
		return true
	}
	return false
}

func releaseAnswer(f engine.Effect) bool {
	switch f.(type) {
	case engine.Released, engine.LeaseUnknown:
		return true
	}
	return false
}

func reapAnswer(f engine.Effect) bool {
	_, ok := f.(engine.ReapDone)
	return ok
}
