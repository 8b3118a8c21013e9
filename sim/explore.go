package sim

import (
	"fmt"
	"strings"
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
