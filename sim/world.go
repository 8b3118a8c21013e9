package sim

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/oarbank/svcrun/clockwork"
	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/fakes"
)

// Epoch is the virtual time every world starts at.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// World is one simulated node.
type World struct {
	Sched  *clockwork.Virtual[engine.Event]
	Exec   *fakes.Executor
	Store  *MemStore
	Driver *engine.Driver
	Engine *engine.Engine

	cfg     engine.Config
	modules []engine.ModuleSpec

	// Answers holds every answer effect (Admitted, Rejected, ...) in order.
	Answers []Answer
	// Observe, when set, sees every step (for traces and invariants).
	// The effects are the engine's until its next step, and an OpDone
	// event the fake executor's, which reuses it once the step is over:
	// what Observe keeps, it copies.
	Observe func(now time.Time, ev engine.Event, effects []engine.Effect)
	// Check, when set, runs after every step; an error stops the world.
	Check func(w *World) error
	// Own, when set, takes the events of whoever drives the world (a
	// workload's jobs) before the engine sees them, and reports whether
	// it took ev.
	Own func(ev engine.Event) bool
	// Unseen, when set, learns of each daemon that died during a pause:
	// until svcrun takes the death, the answers of ops that ran before it
	// still say the daemon runs.
	Unseen func(service string)
	err    error
}

// Answer is an answer effect with its time.
type Answer struct {
	At     time.Time
	Effect engine.Effect
}

// New makes a world and boots its engine with the modules.
func New(cfg engine.Config, modules []engine.ModuleSpec, behaviours map[string]*fakes.Behaviour) *World {
	w := Build(cfg, modules, behaviours)
	w.Boot()
	return w
}

// Build makes a world without booting it, so that Observe and Check can be
// set to see the boot step too; Boot starts it.
func Build(cfg engine.Config, modules []engine.ModuleSpec, behaviours map[string]*fakes.Behaviour) *World {
	w := &World{cfg: cfg, modules: modules}
	w.Sched = clockwork.NewVirtual[engine.Event](Epoch)
	w.Exec = fakes.NewExecutor(w.Sched, behaviours)
	w.Store = NewMemStore()
	return w
}

// Boot starts a new engine from the store, as svcrun does at its start.
func (w *World) Boot() {
	w.Engine = engine.New()
	w.Driver = &engine.Driver{
		Engine: w.Engine, Sched: w.Sched, Exec: w.Exec, Store: w.Store,
		Answer: func(now time.Time, f engine.Effect) {
			if _, isNote := f.(engine.Note); !isNote {
				w.Answers = append(w.Answers, Answer{At: now, Effect: f})
			}
		},
		Trace: func(now time.Time, ev engine.Event, effects []engine.Effect) {
			if w.Observe != nil {
				w.Observe(now, ev, effects)
			}
		},
		After: w.after,
		Own:   w.own,
	}
	w.step(engine.Boot{Config: w.cfg, Modules: w.modules, State: w.Store.State()})
}

// Restart simulates a crash of the agent: the engine and its timers are
// gone, pending op completions are lost, the store and the fake services
// stay. A new engine boots from the store.
func (w *World) Restart() {
	w.Sched = clockwork.NewVirtual[engine.Event](w.Sched.Now())
	w.Exec.Rebind(w.Sched)
	w.Boot()
}

// Err is the first error of the world: a store failure or a failed check.
func (w *World) Err() error { return w.err }

// Now is the virtual time.
func (w *World) Now() time.Time { return w.Sched.Now() }

func (w *World) step(ev engine.Event) {
	if r, ok := ev.(engine.Reload); ok {
		// The configuration changed: an agent restarting later boots
		// with it, as svcrun reads its configuration again at start.
		w.modules = r.Modules
	}
	if w.err == nil {
		w.err = w.Driver.Handle(ev)
	}
}

// own takes the fake executor's events, then those of the world's Own,
// whose steps may fail the world.
func (w *World) own(ev engine.Event) (bool, error) {
	return w.Exec.Intercept(ev) || w.Own != nil && w.Own(ev), w.err
}

// after checks the world after every step, and gives the step's
// completion back to the fake executor, which reuses it.
func (w *World) after(_ time.Time, ev engine.Event, _ []engine.Effect, err error) error {
	defer w.Exec.Reuse(ev)
	if err != nil || w.Check == nil {
		return err
	}
	if err := w.Check(w); err != nil {
		return fmt.Errorf("at %s after %s: %w", w.Now().Sub(Epoch), ev.EventName(), err)
	}
	return nil
}

// Do steps an input event now, then everything due at the same instant.
func (w *World) Do(ev engine.Event) {
	w.step(ev)
	w.RunFor(0)
}

// RunFor runs every event due within d from now, then moves time to now+d.
func (w *World) RunFor(d time.Duration) {
	if w.err != nil {
		return
	}
	until := w.Now().Add(d)
	w.Sched.SetHorizon(until)
	w.err = w.Driver.Run(context.Background())
	w.Sched.SetHorizon(time.Time{})
	if w.err == nil && until.After(w.Now()) {
		w.err = w.Sched.AdvanceTo(until)
	}
}

// Pause stops svcrun for d: the world goes on (time, the fake daemons'
// own events wait on the scheduler) while nothing is delivered; then the
// engine is told first (Paused), and what fell due meanwhile follows, in
// order of time. Inputs the caller sends after Pause come after those.
func (w *World) Pause(d time.Duration) {
	if w.err != nil {
		return
	}
	// What is due now happens before the pause.
	if w.RunFor(0); w.err != nil {
		return
	}
	end := w.Now().Add(d)
	for _, name := range w.Exec.Advance(end) {
		if w.Unseen != nil {
			w.Unseen(name)
		}
	}
	if w.err = w.Sched.Stall(end); w.err != nil {
		return
	}
	w.Do(engine.Paused{Length: d})
}

// LastAnswer returns the last answer about lease id, or nil.
func (w *World) LastAnswer(id engine.LeaseID) engine.Effect {
	for i := len(w.Answers) - 1; i >= 0; i-- {
		if engine.LeaseOf(w.Answers[i].Effect) == id {
			return w.Answers[i].Effect
		}
	}
	return nil
}

// MemStore is the in-memory Store of the simulated world.
type MemStore struct {
	leases   map[engine.LeaseID]engine.LeaseRecord
	services map[string]engine.ServiceRecord
	// FailNext makes the next Apply fail (fault injection).
	FailNext bool
}

// NewMemStore returns an empty store.
func NewMemStore() *MemStore {
	return &MemStore{leases: map[engine.LeaseID]engine.LeaseRecord{}, services: map[string]engine.ServiceRecord{}}
}

// Apply writes a batch.
func (m *MemStore) Apply(batch []engine.Effect) error {
	if m.FailNext {
		m.FailNext = false
		return fmt.Errorf("injected store failure")
	}
	// As strict as the bbolt store: a driver bug must fail here too.
	for _, f := range batch {
		switch f := f.(type) {
		case engine.PutLease:
			if f.Lease.ID == "" {
				return fmt.Errorf("put-lease without an id")
			}
		case engine.DeleteLease:
			if f.Lease == "" {
				return fmt.Errorf("delete-lease without an id")
			}
		case engine.PutService:
			if f.Service.Name == "" {
				return fmt.Errorf("put-service without a name")
			}
		default:
			return fmt.Errorf("%T is not a persistence effect", f)
		}
	}
	for _, f := range batch {
		switch f := f.(type) {
		case engine.PutLease:
			m.leases[f.Lease.ID] = f.Lease
		case engine.DeleteLease:
			delete(m.leases, f.Lease)
		case engine.PutService:
			m.services[f.Service.Name] = f.Service
		}
	}
	return nil
}

// State is what a booting engine gets, in a stable order.
func (m *MemStore) State() engine.State {
	return engine.State{
		Leases: slices.SortedFunc(maps.Values(m.leases),
			func(a, b engine.LeaseRecord) int { return cmp.Compare(a.ID, b.ID) }),
		Services: slices.SortedFunc(maps.Values(m.services),
			func(a, b engine.ServiceRecord) int { return cmp.Compare(a.Name, b.Name) }),
	}
}

// holdsLeases says the store holds exactly the admitted leases of leases,
// n of them (lease ids are unique), without building the two lists.
func (m *MemStore) holdsLeases(leases []engine.LeaseStatus, n int) bool {
	if len(m.leases) != n {
		return false
	}
	for _, l := range leases {
		if _, ok := m.leases[l.ID]; l.Admitted && !ok {
			return false
		}
	}
	return true
}

// Leases lists the stored lease ids.
func (m *MemStore) Leases() []string {
	var ids []string
	for id := range m.leases {
		ids = append(ids, string(id))
	}
	sort.Strings(ids)
	return ids
}

// Configure sets the module set the next boot reads, as an operator
// editing svcrun's configuration while it is down: the running engine
// is not told.
func (w *World) Configure(modules []engine.ModuleSpec) { w.modules = modules }
