package engine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/oarbank/svcrun/clockwork"
	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/fakes"
	"github.com/oarbank/svcrun/manifest"
)

// countingSched is a virtual scheduler that remembers what the driver
// asked of it.
type countingSched struct {
	*clockwork.Virtual[engine.Event]
	cancels, stale int // Cancel calls, and those that found nothing pending
}

func (c *countingSched) Cancel(id clockwork.TimerID) bool {
	c.cancels++
	ok := c.Virtual.Cancel(id)
	if !ok {
		c.stale++
	}
	return ok
}

// batchStore records the batches the driver hands it.
type batchStore struct{ batches [][]engine.Effect }

func (s *batchStore) Apply(batch []engine.Effect) error {
	s.batches = append(s.batches, append([]engine.Effect(nil), batch...))
	return nil
}

const driverModule = `
[module]
name = "m"
version = "1"
[[services]]
name = "a"
exec = ["bin/a"]
capabilities = ["ca"]
idle_timeout_s = 30
[services.restart]
max_failures = 5
backoff_initial_s = 10
reset_after_s = 20
`

// TestDriverTimersAndStore holds the driver contract of engine/doc.go over
// histories that set, replace, cancel and fire timers of every owner:
// SetTimer replaces the pending timer of its key and CancelTimer drops it
// (the driver cancels only timers still pending: a fired one is no longer
// its to cancel), a cancelled or replaced timer never fires, a Fire never
// comes early, and a step's persistence effects reach the store together,
// in their order, once per step that has any and never as an empty batch.
// A lease's timers are cancelled when it ends: none fires after.
func TestDriverTimersAndStore(t *testing.T) {
	type input struct {
		at time.Duration
		ev engine.Event
	}
	acquire := func(id, attempt string, ttl time.Duration) engine.Event {
		return engine.Acquire{Lease: engine.LeaseID(id), Attempt: attempt, Wait: time.Minute, TTL: ttl,
			Requirements: engine.Requirements{Capabilities: []string{"ca"}}}
	}
	tests := []struct {
		name   string
		inputs []input
		until  time.Duration
		fires  int // at least this many timers fire
	}{
		{name: "lease renewed, released, idle stop, start again", inputs: []input{
			{1 * time.Second, acquire("l1", "a1", 30*time.Second)},
			{10 * time.Second, engine.Renew{Lease: "l1"}},
			{20 * time.Second, engine.Renew{Lease: "l1"}},
			{30 * time.Second, engine.Release{Lease: "l1"}},
			{2 * time.Minute, acquire("l2", "a2", 0)},
		}, until: 10 * time.Minute, fires: 20},
		{name: "crash, backoff, reset after readiness", inputs: []input{
			{1 * time.Second, acquire("l1", "a1", 0)},
			{5 * time.Second, engine.ContainerEmptied{Service: engine.Target{Module: "m", Name: "a"}}},
			{3 * time.Minute, engine.Doctor{Reason: "test"}},
		}, until: 10 * time.Minute, fires: 20},
		{name: "lease expires", inputs: []input{
			{1 * time.Second, acquire("l1", "a1", 5*time.Second)},
		}, until: 5 * time.Minute, fires: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mod, err := manifest.Parse("module.toml", []byte(driverModule))
			if err != nil {
				t.Fatal(err)
			}
			epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			sched := &countingSched{Virtual: clockwork.NewVirtual[engine.Event](epoch)}
			exec := fakes.NewExecutor(sched.Virtual, nil)
			store := &batchStore{}
			pending := map[engine.TimerKey]time.Time{}
			ended := map[string]bool{} // leases released or expired
			var errs []string
			fires, before := 0, 0
			var persist []engine.Effect
			d := &engine.Driver{Engine: engine.New(), Sched: sched, Exec: exec, Store: store,
				Own: func(ev engine.Event) (bool, error) { return exec.Intercept(ev), nil }}
			d.Trace = func(now time.Time, ev engine.Event, effects []engine.Effect) {
				if f, ok := ev.(engine.Fire); ok {
					fires++
					at, ok := pending[f.Timer]
					switch {
					case !ok:
						errs = append(errs, fmt.Sprintf("%s: fire of %s %s, not pending (cancelled, replaced or fired)",
							now.Sub(epoch), f.Timer.Kind, f.Timer.Subject))
					case now.Before(at):
						errs = append(errs, fmt.Sprintf("%s: fire of %s %s set for %s: early", now.Sub(epoch), f.Timer.Kind,
							f.Timer.Subject, at.Sub(epoch)))
					}
					delete(pending, f.Timer)
					if ended[f.Timer.Subject] && (f.Timer.Kind == engine.TimerLeaseTTL || f.Timer.Kind == engine.TimerLeaseWait) {
						errs = append(errs, fmt.Sprintf(
							"%s: %s timer of %s, which has ended: its timers are cancelled when it ends", now.Sub(epoch),
							f.Timer.Kind, f.Timer.Subject))
					}
				}
				persist = persist[:0]
				for _, f := range effects {
					switch f := f.(type) {
					case *engine.SetTimer:
						pending[f.Key] = f.At
					case *engine.CancelTimer:
						delete(pending, f.Key)
					case engine.PutLease, engine.DeleteLease, engine.PutService:
						persist = append(persist, f)
					case engine.Released:
						ended[string(f.Lease)] = true
					case engine.Expired:
						ended[string(f.Lease)] = true
					}
				}
				before = len(store.batches)
			}
			d.After = func(now time.Time, ev engine.Event, _ []engine.Effect, err error) error {
				want := before
				if len(persist) > 0 {
					want++
				}
				switch {
				case len(store.batches) != want:
					errs = append(errs, fmt.Sprintf(
						"%s: %s: %d batch(es) stored, want %d (one per step with persistence effects)", now.Sub(epoch),
						ev.EventName(), len(store.batches)-before, want-before))
				case len(persist) > 0 && fmt.Sprint(store.batches[want-1]) != fmt.Sprint(persist):
					errs = append(errs, fmt.Sprintf("%s: %s: stored %v, want the step's %v", now.Sub(epoch), ev.EventName(),
						store.batches[want-1], persist))
				}
				return err
			}
			boot := engine.Boot{Config: engine.Config{NodeID: "n1", Platform: "linux", MemoryBudgetGB: 4,
				ReapPeriod: time.Minute},
				Modules: []engine.ModuleSpec{{Module: mod, Enabled: true}}}
			if err := d.Step(boot); err != nil {
				t.Fatal(err)
			}
			for _, in := range tt.inputs {
				sched.SetHorizon(epoch.Add(in.at))
				if err := d.Run(context.Background()); err != nil {
					t.Fatal(err)
				}
				if err := sched.AdvanceTo(epoch.Add(in.at)); err != nil {
					t.Fatal(err)
				}
				if err := d.Step(in.ev); err != nil {
					t.Fatal(err)
				}
			}
			sched.SetHorizon(epoch.Add(tt.until))
			if err := d.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			for _, e := range errs {
				t.Error(e)
			}
			if sched.stale > 0 {
				t.Errorf("%d of the driver's %d Cancel calls found no pending timer: its table of pending timers kept "+
					"fired or cancelled ones", sched.stale, sched.cancels)
			}
			if sched.cancels == 0 || fires < tt.fires {
				t.Errorf("the history replaced or cancelled %d timers and fired %d, want some and at least %d",
					sched.cancels, fires, tt.fires)
			}
		})
	}
}
