package sim

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/protocol"
)

// Exploration is one seeded run of svcsim explore.
type Exploration struct {
	Seed   uint64
	Steps  int      // inputs of the safety phase
	Inputs []string // the timeline, in scenario syntax
	Err    error    // the first broken invariant or liveness failure
	// Without: the kinds of input left out (see ExploreWithout).
	Without []string
	Recent  []string // the end of the trace when Err is set
}

const exploreNode = "n1"

// Explore runs a random node from seed: a safety phase of steps random
// inputs with faults (failing and hanging ops, crashes and silent deaths,
// frozen daemons that die, agent restarts and daemons dying at boot,
// configurations edited while svcrun is down, stops that need a kill,
// leaked objects and reap bursts, fingerprints that change, fail or time
// out, module reloads that change lifecycles and move capabilities and
// pools, enables, disables and removals; one node in six lives for days),
// every invariant checked after every step and the settled node after
// every input; then a liveness phase without faults, every module back
// and enabled, in which every service must become usable for a lease,
// every orphan of a running service must be reaped, and every idle
// on_demand service must stop.
func Explore(seed uint64, steps int) Exploration { return ExploreWithout(seed, steps) }

// ExploreWithout is Explore with the kinds of input named left out (a
// journal's pause, say, which no scenario replays), and with "contained"
// no daemon in a container that tells of it. Left out, they are not
// drawn: without every kind issue 25 added, a seed draws the history it
// drew before them.
func ExploreWithout(seed uint64, steps int, without ...string) Exploration {
	draw := seededDraw(seed)
	n := genNode(draw, exploreNode, without...)
	kinds := slices.DeleteFunc(slices.Clone(actionKinds), func(k string) bool { return slices.Contains(without, k) })
	w := Build(n.Config, n.Modules, n.Behaviours)
	inv := watchInvariants(w, n.Modules, exploreNode)
	w.Boot()
	w.RunFor(0)
	a := newActor(w, n, inv)
	x := Exploration{Seed: seed, Steps: steps, Without: without}
	finish := func(err error) Exploration {
		x.Inputs = a.Inputs
		if err == nil {
			err = inv.err()
		}
		x.Err = err
		if err != nil {
			x.Recent = inv.Recent(60)
		}
		return x
	}
	failed := func() bool { return w.Err() != nil || len(inv.failures) > 0 }
	for i := 0; i < steps && !failed(); i++ {
		kind := pick(draw, "action", kinds)
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
	if failed() {
		return finish(w.Err())
	}

	// Liveness: no more faults, and every module back with its latest
	// manifest, enabled, but the shadow, which would clash.
	for _, name := range a.Services {
		b := n.Behaviours[name]
		b.Ops, b.CrashAfter, b.StopIgnored, b.Healthy = nil, 0, false, nil
		// Every pool it declares now has a token, so that a lease needing
		// one (all a service offering no capability serves) is admitted.
		pools := maps.Clone(b.Pools)
		if spec := inv.specs[name]; spec != nil {
			for _, p := range spec.Pools {
				pools[p] = max(pools[p], 1)
			}
		}
		b.Pools = pools
		var args []string
		for _, p := range slices.Sorted(maps.Keys(pools)) {
			args = append(args, fmt.Sprintf("%s:%d", p, pools[p]))
		}
		line := fmt.Sprintf(
			"behaviour %s op=start duration=0s outcomes=ok crash_after=0s stop_ignored=false healthy=true", name)
		if len(args) > 0 {
			line += " pools=" + strings.Join(args, ",")
		}
		a.record("%s", line)
		a.record("behaviour %s op=fingerprint duration=0s outcomes=ok", name)
		// A node fault (an op svcrun cannot prepare) is over too.
		a.record("behaviour %s op=stop duration=0s outcomes=ok", name)
		a.record("behaviour %s op=status duration=0s outcomes=ok", name)
	}
	if b := n.Behaviours["m0/cap-probe"]; b.Healthy != nil {
		b.Healthy = nil
		a.record("behaviour m0/cap-probe healthy=true")
	}
	for _, id := range a.Leases {
		a.record("release %s", id)
		w.Do(engine.Release{Lease: id})
	}
	a.Leases = nil
	// The shadow goes first, so that the module it shadows can come back.
	for pass := 0; pass < 2; pass++ {
		for i, m := range a.mods {
			shadow := m.Name == shadowModule
			if shadow != (pass == 0) {
				continue
			}
			switch {
			case shadow && a.enabled[i] && !a.removed[i]:
				a.enabled[i] = false
				a.record("disable %s", m.Name)
			case !shadow && (!a.enabled[i] || a.removed[i]) && !a.clashes(i, m):
				// One that would declare what an enabled module took
				// meanwhile stays as it is: the configuration refuses it.
				a.enabled[i], a.removed[i] = true, false
				a.record("enable %s", m.Name)
			default:
				continue
			}
			inv.setModules(a.moduleSet())
			w.Do(engine.Reload{Modules: a.moduleSet()})
		}
	}
	// Ops begun under faults (a start that hangs to its timeout) end
	// first; then failures are cleared.
	w.RunFor(10 * time.Minute)
	var configured []engine.ServiceStatus
	for _, s := range w.Engine.Status().Services {
		if s.Enabled {
			configured = append(configured, s)
		}
	}
	for _, s := range configured {
		a.record("reset %s", s.Name)
		w.Do(engine.Reset{Service: s.Target})
	}
	a.record("doctor liveness phase")
	w.Do(engine.Doctor{Reason: "liveness phase"})
	w.RunFor(10 * time.Minute)
	if failed() {
		return finish(w.Err())
	}
	for i, s := range configured {
		name := s.Name
		spec := inv.specs[name]
		if spec.Lifecycle == manifest.Manual && !w.Exec.Running(name) {
			continue // nobody starts it
		}
		// What it offers now: a capability, else a pool (needed, not
		// reserved: its capacity may be 0); one that offers neither
		// serves no lease.
		id := engine.LeaseID(fmt.Sprintf("live-%d", i))
		var req engine.Requirements
		switch {
		case len(spec.Capabilities) > 0:
			req.Capabilities = spec.Capabilities[:1]
			a.record("acquire %s attempt=live cap=%s wait=15m", id, spec.Capabilities[0])
		case len(spec.Pools) > 0:
			req.NeedsPools = spec.Pools[:1]
			a.record("acquire %s attempt=live needs=%s wait=15m", id, spec.Pools[0])
		default:
			continue
		}
		w.Do(engine.Acquire{Lease: id, Attempt: "live", Wait: 15 * time.Minute, Requirements: req})
		w.RunFor(16 * time.Minute)
		if failed() {
			return finish(w.Err())
		}
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
		// Held through a sweep (an object may be labelled with a service
		// no lease of its attempt used, which only a sweep lists) and then
		// enough reap rounds for --force, every orphan must go; but a
		// manual service's, which svcrun only fingerprints.
		periods := n.Config.ReapSweepPeriod + time.Duration(2+4)*n.Config.ReapPeriod
		w.RunFor(periods)
		for _, o := range w.Exec.Objects(name) {
			if spec.Lifecycle == manifest.Manual {
				break
			}
			l := o.Labels
			if l[protocol.LabelNode] == exploreNode && l[protocol.LabelService] == name &&
				l[protocol.LabelAttemptID] != "" && l[protocol.LabelAttemptID] != "live" {
				return finish(fmt.Errorf("liveness: orphan %s of %s (attempt %s) survived %v of reap rounds and a sweep",
					o.ID, name, l[protocol.LabelAttemptID], periods))
			}
		}
		a.record("release %s", id)
		w.Do(engine.Release{Lease: id})
		w.RunFor(spec.IdleTimeout + 5*time.Minute)
		// A broken invariant stops the world's time: it is the failure.
		if failed() {
			return finish(w.Err())
		}
		if spec.Lifecycle == manifest.OnDemand && w.Exec.Running(name) {
			return finish(fmt.Errorf("liveness: %s still runs %v after its last lease", name, spec.IdleTimeout+5*time.Minute))
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
// configuration, modules (with their later manifests) and the behaviours
// of their services.
func (x Exploration) Node() Node {
	return genNode(seededDraw(x.Seed), exploreNode, x.Without...)
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
