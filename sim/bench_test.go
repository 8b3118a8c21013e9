package sim

import (
	"fmt"
	"testing"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/fakes"
	"github.com/oarbank/svcrun/manifest"
)

// readyWorld boots n always-on services, each with one capability and a
// pool of 4 tokens, and runs until all are ready.
func readyWorld(b *testing.B, n int) *World {
	m := &manifest.Module{Name: "bench", Version: "1"}
	behaviours := map[string]*fakes.Behaviour{}
	for i := 0; i < n; i++ {
		s := manifest.Service{Module: "bench", Name: fmt.Sprintf("s%d", i), Exec: []string{"bin/s"},
			Lifecycle:   manifest.Always,
			IdleTimeout: time.Minute, StartTimeout: time.Minute, Capabilities: []string{fmt.Sprintf("c%d", i)},
			Pools: []string{fmt.Sprintf("p%d", i)},
			Restart: manifest.Restart{BackoffInitial: time.Second, BackoffMax: time.Minute, MaxFailures: 3,
				ResetAfter: time.Minute}}
		m.Services = append(m.Services, s)
		behaviours[s.FullName()] = &fakes.Behaviour{Pools: map[string]int64{s.Pools[0]: 4}}
	}
	w := New(engine.Config{NodeID: "n", Platform: "linux", MemoryBudgetGB: 8, MaxConcurrentOps: 64},
		[]engine.ModuleSpec{{Module: m, Enabled: true}}, behaviours)
	w.RunFor(time.Second)
	for _, s := range w.Engine.Status().Services {
		if !s.Ready {
			b.Fatalf("%s is %s", s.Name, s.State)
		}
	}
	return w
}

// BenchmarkAdmission measures one engine step admitting a lease on a ready
// service (a capability and a pool token), and the step releasing it.
func BenchmarkAdmission(b *testing.B) {
	w := readyWorld(b, 100)
	e := w.Engine
	now := w.Now()
	ids := make([]engine.LeaseID, 1024)
	for i := range ids {
		ids[i] = engine.LeaseID(fmt.Sprintf("l%d", i))
	}
	reqs := make([]engine.Requirements, 100)
	for i := range reqs {
		reqs[i] = engine.Requirements{Capabilities: []string{fmt.Sprintf("c%d", i)},
			Pools: map[string]int64{fmt.Sprintf("p%d", i): 1}}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := ids[i%len(ids)]
		out := e.Step(now, engine.Acquire{Lease: id, Attempt: "a", Requirements: reqs[i%len(reqs)], Wait: time.Minute})
		if len(out) == 0 {
			b.Fatal("no answer")
		}
		if _, ok := out[len(out)-1].(engine.Admitted); !ok {
			b.Fatalf("not admitted: %v", out)
		}
		e.Step(now, engine.Release{Lease: id})
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "µs/acquire+release")
}

// BenchmarkExplore measures one seed of svcsim explore (400 inputs, as its
// default), seeds 1, 2, ... in turn; allocs/op is allocations per seed,
// each one shared collector work when seeds run on several workers.
func BenchmarkExplore(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if x := Explore(uint64(i%50+1), 400); x.Err != nil {
			b.Fatalf("seed %d: %v", x.Seed, x.Err)
		}
	}
}
