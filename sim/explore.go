package sim

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/fakes"
	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/protocol"
)

// Exploration is one seeded run of svcsim explore.
type Exploration struct {
	Seed   uint64
	Steps  int      // inputs of the safety phase
	Inputs []string // the timeline, in scenario syntax
	Err    error    // the first broken invariant or liveness failure
	Recent []string // the end of the trace when Err is set
}

const exploreNode = "n1"

// Explore runs a random node from seed: a safety phase of steps random
// inputs with faults (failing and hanging ops, crashes, agent restarts,
// stops that need a kill, leaked objects), every invariant checked after
// every step; then a liveness phase without faults in which every service
// must become usable for a lease, every orphan of a running service must be
// reaped, and every idle on_demand service must stop.
func Explore(seed uint64, steps int) Exploration {
	draw := seededDraw(seed)
	cfg, mods, behaviours := genNode(draw, exploreNode)
	w := New(cfg, mods, behaviours)
	inv := watchInvariants(w, mods, exploreNode)
	w.RunFor(0)
	a := &actor{W: w, Node: exploreNode, Services: inv.ServiceNames()}
	x := Exploration{Seed: seed, Steps: steps}
	finish := func(err error) Exploration {
		x.Inputs = a.Inputs
		x.Err = err
		if err != nil {
			x.Recent = inv.Recent(60)
		}
		return x
	}
	for i := 0; i < steps && w.Err() == nil; i++ {
		kind := pick(draw, "action", actionKinds)
		if kind == "agent restart" {
			before := admittedLeases(w)
			a.Act(kind, draw)
			if after := admittedLeases(w); before != after {
				inv.Failf("leases before the restart %s, after %s", before, after)
			}
			continue
		}
		a.Act(kind, draw)
	}
	if err := w.Err(); err != nil {
		return finish(err)
	}

	// Liveness: no more faults.
	for _, name := range a.Services {
		b := behaviours[name]
		b.Ops, b.CrashAfter, b.StopIgnored, b.Healthy = nil, 0, false, nil
		a.record("behaviour %s op=start duration=0s outcomes=ok crash_after=0s stop_ignored=false healthy=true", name)
	}
	for _, id := range a.Leases {
		a.record("release %s", id)
		w.Do(engine.Release{Lease: id})
	}
	a.Leases = nil
	// Ops begun under faults (a start that hangs to its timeout) end
	// first; then failures are cleared.
	w.RunFor(10 * time.Minute)
	for _, s := range a.Services {
		a.record("reset %s", s)
		w.Do(engine.Reset{Service: serviceTarget(s)})
	}
	a.record("doctor liveness phase")
	w.Do(engine.Doctor{Reason: "liveness phase"})
	w.RunFor(10 * time.Minute)
	specs := map[string]*manifest.Service{}
	for _, m := range mods {
		for i := range m.Module.Services {
			specs[m.Module.Services[i].FullName()] = &m.Module.Services[i]
		}
	}
	for i, name := range a.Services {
		spec := specs[name]
		if spec.Lifecycle == manifest.Manual && !w.Exec.Running(name) {
			continue // nobody starts it
		}
		id := engine.LeaseID(fmt.Sprintf("live-%d", i))
		a.record("acquire %s attempt=live cap=%s wait=15m", id, spec.Capabilities[0])
		w.Do(engine.Acquire{Lease: id, Attempt: "live", Wait: 15 * time.Minute, Requirements: engine.Requirements{Capabilities: spec.Capabilities}})
		w.RunFor(16 * time.Minute)
		switch ans := w.LastAnswer(id).(type) {
		case engine.Admitted:
		case engine.Rejected:
			// Memory held by services in use is a reason to wait; nothing
			// else is, once faults are gone.
			if !strings.Contains(ans.Reason, "memory") {
				return finish(fmt.Errorf("liveness: %s rejected without faults: %s", name, ans.Reason))
			}
			continue
		default:
			return finish(fmt.Errorf("liveness: no answer for %s 16 minutes into the fault-free phase: %v", name, ans))
		}
		// Held through enough reap rounds for --force, every orphan must go.
		w.RunFor(time.Duration(5+4) * cfg.ReapPeriod)
		for _, o := range w.Exec.Objects(name) {
			l := o.Labels
			if l[protocol.LabelNode] == exploreNode && l[protocol.LabelService] == name && l[protocol.LabelAttemptID] != "" && l[protocol.LabelAttemptID] != "live" {
				return finish(fmt.Errorf("liveness: orphan %s of %s (attempt %s) survived %d reap periods", o.ID, name, l[protocol.LabelAttemptID], 9))
			}
		}
		a.record("release %s", id)
		w.Do(engine.Release{Lease: id})
		w.RunFor(spec.IdleTimeout + 5*time.Minute)
		if spec.Lifecycle == manifest.OnDemand && w.Exec.Running(name) {
			return finish(fmt.Errorf("liveness: %s still runs %v after its last lease", name, spec.IdleTimeout+5*time.Minute))
		}
		if err := w.Err(); err != nil {
			return finish(err)
		}
	}
	return finish(w.Err())
}

func admittedLeases(w *World) string {
	var ids []string
	for _, l := range w.Engine.Status().Leases {
		if l.Admitted {
			ids = append(ids, string(l.ID))
		}
	}
	return strings.Join(ids, ",")
}

// Node regenerates the exploration's node from its seed: its
// configuration, modules and the behaviours of their services.
func (x Exploration) Node() (engine.Config, []engine.ModuleSpec, map[string]*fakes.Behaviour) {
	return genNode(seededDraw(x.Seed), exploreNode)
}

// ShardSeeds is shard i of n (1 <= i <= n) of the count seeds from first:
// the k-th seed, first+k, belongs to shard k%n+1. Striding rather than
// contiguous ranges keeps the shards of a CI matrix equally long when the
// cost of seeds drifts along the range, and shards 1..n of the same first
// and count partition its seeds exactly.
func ShardSeeds(first uint64, count, i, n int) ([]uint64, error) {
	if n < 1 || i < 1 || i > n {
		return nil, fmt.Errorf("shard %d/%d: want 1 <= i <= n", i, n)
	}
	seeds := make([]uint64, 0, (count+n-1)/n)
	for k := i - 1; k < count; k += n {
		seeds = append(seeds, first+uint64(k))
	}
	return seeds, nil
}

// ExploreSeeds runs explore for every seed on workers goroutines and hands
// each exploration to report in the order of seeds, whatever order they
// finish in, so that a run's report does not depend on its workers. An
// exploration shares nothing with another, so a seed's result is the one
// it gives alone. Once report returns false no further seed is reported,
// and no seed not yet begun is run.
func ExploreSeeds(seeds []uint64, workers int, explore func(seed uint64) Exploration, report func(Exploration) bool) {
	workers = max(1, min(workers, len(seeds)))
	// Workers run at most window seeds ahead of the one reported next:
	// a slow seed cannot make the others pile up their results.
	window := 4 * workers
	done := make([]chan Exploration, len(seeds))
	for i := range done {
		done[i] = make(chan Exploration, 1)
	}
	jobs := make(chan int, window)
	var stopped atomic.Bool
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				if !stopped.Load() {
					done[i] <- explore(seeds[i])
				}
			}
		})
	}
	sent := 0
	for next := range seeds {
		for ; sent < len(seeds) && sent < next+window; sent++ {
			jobs <- sent
		}
		if !report(<-done[next]) {
			stopped.Store(true)
			break
		}
	}
	close(jobs)
	wg.Wait()
}
