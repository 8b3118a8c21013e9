package engine_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/oarbank/svcrun/clockwork"
	"github.com/oarbank/svcrun/engine"
)

type nopExec struct{}

func (nopExec) Run(engine.RunOp)     {}
func (nopExec) Kill(engine.Target)   {}
func (nopExec) Freeze(engine.Target) {}
func (nopExec) Thaw(engine.Target)   {}

// ownEvent is an event of whoever runs the driver, not the engine's.
type ownEvent struct{ fail bool }

func (ownEvent) EventName() string { return "own" }

// TestDriverRun: the one loop hands its own events to Own and steps the
// others, each seen by After once carried out; an error of Own or After
// ends it.
func TestDriverRun(t *testing.T) {
	errOwn, errAfter := errors.New("own failed"), errors.New("after failed")
	tests := []struct {
		name      string
		own       ownEvent
		afterErr  error
		wantErr   error
		wantSteps []string // what After saw, after boot
	}{
		{name: "own and engine events", wantSteps: []string{"doctor", "fire"}},
		{name: "own fails", own: ownEvent{fail: true}, wantErr: errOwn},
		{name: "after fails", afterErr: errAfter, wantErr: errAfter},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			sched := clockwork.NewVirtual[engine.Event](epoch)
			var owned int
			var steps []string
			d := &engine.Driver{Engine: engine.New(), Sched: sched, Exec: nopExec{}}
			if err := d.Step(engine.Boot{Config: engine.Config{NodeID: "n", Platform: "linux",
				ReapPeriod: time.Hour}}); err != nil {
				t.Fatal(err)
			}
			d.Own = func(ev engine.Event) (bool, error) {
				o, ok := ev.(ownEvent)
				if !ok {
					return false, nil
				}
				owned++
				if o.fail {
					return true, errOwn
				}
				return true, nil
			}
			d.After = func(_ time.Time, ev engine.Event, _ []engine.Effect, err error) error {
				steps = append(steps, ev.EventName())
				if err == nil {
					err = tt.afterErr
				}
				return err
			}
			sched.Post(tt.own)
			sched.Post(engine.Doctor{Reason: "test"})
			sched.SetHorizon(epoch.Add(time.Minute)) // before the reap round
			err := d.Run(context.Background())
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Run: %v, want %v", err, tt.wantErr)
			}
			if owned != 1 {
				t.Errorf("Own took %d events, want 1", owned)
			}
			if tt.wantErr == nil && !slices.Equal(steps, tt.wantSteps) {
				t.Errorf("After saw %v, want %v", steps, tt.wantSteps)
			}
		})
	}
}
