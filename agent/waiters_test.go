package agent

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/oarbank/svcrun/clockwork"
	"github.com/oarbank/svcrun/engine"
)

// TestCall drives the waiter registry's call without a loop: the test takes
// the posted event from the scheduler (so the waiter is registered) and
// plays the loop's part with deliver, or cancels, or shuts down.
func TestCall(t *testing.T) {
	const id = engine.LeaseID("lease-1")
	renewed := engine.Renewed{Lease: id, Expires: time.Unix(100, 0)}
	tests := []struct {
		name string
		key  waitKey
		ev   engine.Event
		// loop runs once the call's event is posted: it answers, cancels
		// the call's context, or stops svcrun.
		loop    func(a *Agent, cancel context.CancelFunc)
		want    engine.Effect
		wantErr error
		// withdrawn are the acquires shutdown is left to withdraw.
		withdrawn []engine.LeaseID
	}{
		{
			name: "answered",
			key:  leaseKey(id),
			ev:   engine.Renew{Lease: id},
			loop: func(a *Agent, _ context.CancelFunc) { a.deliver(leaseKey(id), renewed) },
			want: renewed,
		},
		{
			name: "an answer not accepted waits for the next",
			key:  leaseKey(id),
			ev:   engine.Renew{Lease: id},
			loop: func(a *Agent, _ context.CancelFunc) {
				a.deliver(leaseKey(id), engine.Released{Lease: id}) // a release's, not a renew's
				a.deliver(leaseKey(id), renewed)
			},
			want: renewed,
		},
		{
			name: "a lease's answer does not reach a reap of the same name",
			key:  reapKey(string(id)),
			ev:   engine.ReapNow{Ticket: string(id)},
			loop: func(a *Agent, _ context.CancelFunc) {
				a.deliver(leaseKey(id), engine.ReapDone{Round: 1})
				a.deliver(reapKey(string(id)), engine.ReapDone{Round: 2})
			},
			want: engine.ReapDone{Round: 2},
		},
		{
			name:    "cancelled",
			key:     leaseKey(id),
			ev:      engine.Renew{Lease: id},
			loop:    func(_ *Agent, cancel context.CancelFunc) { cancel() },
			wantErr: context.Canceled,
		},
		{
			name: "svcrun stops",
			key:  leaseKey(id),
			ev:   engine.Acquire{Lease: id},
			loop: func(a *Agent, _ context.CancelFunc) {
				a.stop.withdrawAll(a.waiters.close())
			},
			wantErr:   ErrStopping,
			withdrawn: []engine.LeaseID{id},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &Agent{sched: clockwork.NewReal[engine.Event](clock.New())}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			accepts := renewAnswer
			switch tt.ev.(type) {
			case engine.ReapNow:
				accepts = reapAnswer
			case engine.Acquire:
				accepts = acquireAnswer
			}
			type result struct {
				r   reply
				err error
			}
			done := make(chan result, 1)
			go func() {
				r, err := a.call(ctx, tt.key, tt.ev, accepts)
				done <- result{r, err}
			}()
			next, stop := context.WithTimeout(context.Background(), time.Minute)
			defer stop()
			if ev, ok := a.sched.Next(next); !ok || !reflect.DeepEqual(ev, tt.ev) {
				t.Fatalf("posted %v (%v), want %v", ev, ok, tt.ev)
			}
			tt.loop(a, cancel)
			var got result
			select {
			case got = <-done:
			case <-next.Done():
				t.Fatal("call still waiting a minute after its answer")
			}
			if !errors.Is(got.err, tt.wantErr) {
				t.Fatalf("call: error %v, want %v", got.err, tt.wantErr)
			}
			if tt.wantErr == nil && !reflect.DeepEqual(got.r.f, tt.want) {
				t.Errorf("call answered %#v, want %#v", got.r.f, tt.want)
			}
			if len(a.waiters.m) != 0 {
				t.Errorf("waiters left: %v", a.waiters.m)
			}
			if len(a.stop.withdrawn) != len(tt.withdrawn) ||
				(len(tt.withdrawn) > 0 && a.stop.withdrawn[0] != tt.withdrawn[0]) {
				t.Errorf("withdrawn %v, want %v", a.stop.withdrawn, tt.withdrawn)
			}
		})
	}
}

// TestCallAfterShutdown: a call that comes once the waiters are closed is
// refused, and leaves no waiter that nothing would answer.
func TestCallAfterShutdown(t *testing.T) {
	a := &Agent{sched: clockwork.NewReal[engine.Event](clock.New())}
	a.waiters.close()
	_, err := a.call(context.Background(), leaseKey("lease-1"), engine.Renew{Lease: "lease-1"}, renewAnswer)
	if !errors.Is(err, ErrStopping) {
		t.Fatalf("call after shutdown: %v, want ErrStopping", err)
	}
	if len(a.waiters.m) != 0 {
		t.Errorf("waiters left: %v", a.waiters.m)
	}
}
