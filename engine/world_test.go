package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/fakes"
	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/sim"
)

// The engine's tests of whole histories run it in the simulated world:
// the real driver loop on virtual time with fake services.

// modules parses module.toml texts into enabled module specs.
func modules(t *testing.T, tomls ...string) []engine.ModuleSpec {
	t.Helper()
	var specs []engine.ModuleSpec
	for _, text := range tomls {
		m, err := manifest.Parse("module.toml", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, engine.ModuleSpec{Module: m, Enabled: true})
	}
	return specs
}

// testConfig is the node of these tests: 8 GB, periods long enough that
// polls do not clutter a history of a few minutes.
func testConfig() engine.Config {
	return engine.Config{NodeID: "n1", Platform: "linux", MemoryBudgetGB: 8, StatusPeriod: time.Hour,
		FingerprintPeriod: time.Hour, ReapPeriod: time.Hour}
}

// recorded is what a world did: every effect line and note, by step.
type recorded struct{ lines []string }

func (r *recorded) String() string { return strings.Join(r.lines, "\n") }

// has says some line contains s.
func (r *recorded) has(s string) bool {
	for _, l := range r.lines {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

// count is how many lines contain s.
func (r *recorded) count(s string) int {
	n := 0
	for _, l := range r.lines {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

// newWorld boots a world and records its steps from the boot on.
func newWorld(t *testing.T, cfg engine.Config, specs []engine.ModuleSpec,
	behaviours map[string]*fakes.Behaviour) (*sim.World, *recorded) {
	t.Helper()
	w := sim.Build(cfg, specs, behaviours)
	rec := record(w)
	w.Boot()
	return w, rec
}

func record(w *sim.World) *recorded {
	rec := &recorded{}
	w.Observe = func(now time.Time, ev engine.Event, effects []engine.Effect) {
		at := now.Sub(sim.Epoch).String()
		rec.lines = append(rec.lines, at+" > "+ev.EventName())
		for _, f := range effects {
			rec.lines = append(rec.lines, at+"   "+engine.FormatEffect(f))
		}
	}
	return rec
}

// answer is the last answer about lease id, failing the test without one.
func answer(t *testing.T, w *sim.World, id engine.LeaseID) engine.Effect {
	t.Helper()
	if err := w.Err(); err != nil {
		t.Fatal(err)
	}
	a := w.LastAnswer(id)
	if a == nil {
		t.Fatalf("no answer about %s", id)
	}
	return a
}

func status(w *sim.World, name string) engine.ServiceStatus {
	for _, s := range w.Engine.Status().Services {
		if s.Name == name {
			return s
		}
	}
	return engine.ServiceStatus{}
}

func caps(cs ...string) engine.Requirements { return engine.Requirements{Capabilities: cs} }
