package sim

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/fakes"
	"github.com/oarbank/svcrun/manifest"
)

func mustModule(t *testing.T, text string) *manifest.Module {
	t.Helper()
	m, err := manifest.Parse("module.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

const kvModule = `
[module]
name = "db"
version = "1"
[[services]]
name = "kv"
exec = ["bin/kv"]
idle_timeout_s = 30
pools = ["slots"]
capabilities = ["kv"]
`

func TestLifecycleOnDemand(t *testing.T) {
	m := mustModule(t, kvModule)
	w := New(engine.Config{NodeID: "n1", Platform: "linux", MemoryBudgetGB: 4},
		[]engine.ModuleSpec{{Module: m, Enabled: true}},
		map[string]*fakes.Behaviour{"db/kv": {ReadyAfterPolls: 2, Pools: map[string]int64{"slots": 2}}})
	var trace []string
	w.Observe = func(now time.Time, ev engine.Event, effects []engine.Effect) {
		for _, f := range effects {
			trace = append(trace, now.Sub(Epoch).String()+" "+engine.FormatEffect(f))
		}
	}
	w.RunFor(time.Second)
	w.Do(engine.Acquire{Lease: "l1", Attempt: "a1",
		Requirements: engine.Requirements{Capabilities: []string{"kv"}, Pools: map[string]int64{"slots": 1}},
		Wait:         time.Minute})
	w.RunFor(10 * time.Second)
	if _, ok := w.LastAnswer("l1").(engine.Admitted); !ok {
		t.Fatalf("l1 not admitted: %v\n%s", w.LastAnswer("l1"), strings.Join(trace, "\n"))
	}
	if !w.Exec.Running("db/kv") || w.Exec.Starts("db/kv") != 1 {
		t.Fatalf("kv running=%v starts=%d", w.Exec.Running("db/kv"), w.Exec.Starts("db/kv"))
	}
	w.Do(engine.Release{Lease: "l1"})
	w.RunFor(29 * time.Second)
	if !w.Exec.Running("db/kv") {
		t.Fatal("stopped before idle_timeout_s")
	}
	w.RunFor(2 * time.Second)
	if w.Exec.Running("db/kv") {
		t.Fatalf("still running after idle_timeout_s\n%s", strings.Join(trace, "\n"))
	}
	if w.Err() != nil {
		t.Fatal(w.Err())
	}
}

// TestPauseTellsDeaths: a daemon that dies while svcrun is paused dies
// unseen until svcrun takes its event, which waits behind the answers of
// ops that ran before it; the world says so (to the invariants), or they
// would blame the engine for going by those answers.
func TestPauseTellsDeaths(t *testing.T) {
	w, _ := invariantWorld(t)
	var unseen []string
	w.Unseen = func(service string) { unseen = append(unseen, service) }
	w.Exec.Behaviour("db/kv").CrashAfter = 30 * time.Second
	w.Do(engine.Acquire{Lease: "l1", Attempt: "a1",
		Requirements: engine.Requirements{Capabilities: []string{"kv"}}, Wait: time.Minute})
	w.Pause(time.Minute)
	if w.Exec.Running("db/kv") {
		t.Fatal("db/kv's daemon did not die during the pause")
	}
	if !slices.Equal(unseen, []string{"db/kv"}) {
		t.Errorf("deaths told during the pause: %q, want [db/kv]", unseen)
	}
}
