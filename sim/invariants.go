package sim

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/protocol"
)

// invariants checks a world after every step and every effect: the safety
// rules that must hold whatever happens. Property tests and
// svcsim explore install it with watchInvariants.
type invariants struct {
	w        *World
	node     string
	specs    map[string]*manifest.Service
	failures []string
	log      []string // the recent trace, shown on failure

	readySince map[string]time.Time // services in state ready, since when (continuously)
}

// watchInvariants installs the checks on w.
func watchInvariants(w *World, mods []engine.ModuleSpec, node string) *invariants {
	c := &invariants{w: w, node: node, specs: map[string]*manifest.Service{}, readySince: map[string]time.Time{}}
	for _, m := range mods {
		for i := range m.Module.Services {
			s := &m.Module.Services[i]
			c.specs[s.FullName()] = s
		}
	}
	w.Observe = c.observe
	w.Check = c.check
	return c
}

// ServiceNames lists the services, sorted.
func (c *invariants) ServiceNames() []string {
	names := make([]string, 0, len(c.specs))
	for n := range c.specs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Failf records a broken invariant; the world stops at its next step.
func (c *invariants) Failf(format string, args ...any) {
	c.failures = append(c.failures, fmt.Sprintf("at %v: ", c.w.Now().Sub(Epoch))+fmt.Sprintf(format, args...))
}

// Recent is the tail of the trace.
func (c *invariants) Recent(n int) []string {
	if len(c.log) > n {
		return c.log[len(c.log)-n:]
	}
	return c.log
}

// observe checks each step's effects against the state at that moment
// (the engine has stepped, the effects are not carried out yet).
func (c *invariants) observe(now time.Time, ev engine.Event, effects []engine.Effect) {
	c.log = append(c.log, fmt.Sprintf("%v > %s %+v", now.Sub(Epoch), ev.EventName(), ev))
	for _, f := range effects {
		if _, isTimer := f.(engine.SetTimer); !isTimer {
			c.log = append(c.log, "    "+engine.FormatEffect(f))
		}
	}
	if len(c.log) > 400 {
		c.log = c.log[len(c.log)-200:]
	}
	st := c.w.Engine.Status()
	svc := map[string]engine.ServiceStatus{}
	for _, s := range st.Services {
		svc[s.Name] = s
	}
	live := map[string]bool{}
	for _, a := range st.LiveAttempts {
		live[a] = true
	}
	killed := map[string]bool{} // effects run in order: a kill precedes what follows it
	for _, f := range effects {
		switch f := f.(type) {
		case engine.Kill:
			killed[f.Service.String()] = true
		case engine.RunOp:
			name := f.Target.String()
			s := svc[name]
			switch f.Op {
			case protocol.OpStart:
				if c.w.Exec.Running(name) && !killed[name] {
					c.Failf("start of %s while its daemon runs (a second start)", name)
				}
				if now.Before(s.BackoffUntil) {
					c.Failf("start of %s at %v, before its backoff ends at %v", name, now, s.BackoffUntil)
				}
				if s.Unhealthy {
					c.Failf("start of unhealthy %s", name)
				}
			case protocol.OpStop:
				if s.Refs > 0 && s.StopReason != "cleanup after failure" && s.StopReason != "module disabled" {
					c.Failf("stop of %s with %d lease(s) for %q", name, s.Refs, s.StopReason)
				}
			case protocol.OpDestroy:
				c.checkDestroy(name, f.Args[0], live)
			}
		case engine.Admitted:
			for _, name := range f.Services {
				if s := svc[name]; !s.Ready {
					c.Failf("lease %s admitted while %s is %s", f.Lease, name, s.State)
				}
				if !c.w.Exec.Running(name) {
					c.Failf("lease %s admitted while the daemon of %s is down", f.Lease, name)
				}
			}
			// Capacity may drop later (a crash withdraws it); at the
			// admission, the lease's own pools must fit.
			var mine map[string]int64
			for _, l := range st.Leases {
				if l.ID == f.Lease {
					mine = l.Pools
				}
			}
			for _, p := range st.Pools {
				if _, ok := mine[p.Name]; ok && p.Reserved > p.Capacity {
					c.Failf("pool %s: %d reserved of %d at the admission of %s", p.Name, p.Reserved, p.Capacity, f.Lease)
				}
			}
		case engine.PutService:
			r := f.Service
			spec := c.specs[r.Name]
			if r.Unhealthy != (r.Failures >= spec.Restart.MaxFailures) {
				c.Failf("%s: %d failure(s) of %d, unhealthy=%v", r.Name, r.Failures, spec.Restart.MaxFailures, r.Unhealthy)
			}
			// Failures are forgotten by reset_after_s only after that long
			// of continuous readiness.
			if fire, ok := ev.(engine.Fire); ok && fire.Timer.Kind == engine.TimerResetAfter && r.Failures == 0 {
				since, ready := c.readySince[r.Name]
				if !ready || now.Sub(since) < spec.Restart.ResetAfter {
					c.Failf("%s: failures forgotten after %v of readiness (ready=%v), reset_after_s is %v", r.Name, now.Sub(since), ready, spec.Restart.ResetAfter)
				}
			}
			if _, isFail := ev.(engine.OpDone); isFail || isFailureEvent(ev) {
				if r.Failures > 0 && !r.Unhealthy {
					if want := now.Add(engine.Backoff(spec.Restart, r.Failures)); !r.BackoffUntil.Equal(want) {
						c.Failf("%s: backoff after failure %d ends %v, want %v", r.Name, r.Failures, r.BackoffUntil, want)
					}
				}
			}
		}
	}
}

func isFailureEvent(ev engine.Event) bool {
	switch ev.(type) {
	case engine.ContainerEmptied, engine.Fire:
		return true
	}
	return false
}

func (c *invariants) checkDestroy(service, id string, live map[string]bool) {
	for _, o := range c.w.Exec.Objects(service) {
		if o.ID != id {
			continue
		}
		l := o.Labels
		switch {
		case l[protocol.LabelAttemptID] == "" || l[protocol.LabelNode] == "" || l[protocol.LabelService] == "":
			c.Failf("destroy of unlabelled %s/%s", service, id)
		case l[protocol.LabelNode] != c.node:
			c.Failf("destroy of %s/%s of node %s", service, id, l[protocol.LabelNode])
		case l[protocol.LabelService] != service:
			c.Failf("destroy of %s/%s of service %s", service, id, l[protocol.LabelService])
		case live[l[protocol.LabelAttemptID]]:
			c.Failf("destroy of %s/%s of live attempt %s", service, id, l[protocol.LabelAttemptID])
		}
	}
}

// check runs after every step: the state-wide invariants.
func (c *invariants) check(w *World) error {
	st := w.Engine.Status()
	refs, waits := map[string]int{}, map[string]int{}
	var admitted []string
	for _, l := range st.Leases {
		for _, s := range l.Services {
			if l.Admitted {
				refs[s]++
			} else {
				waits[s]++
			}
		}
		if l.Admitted {
			admitted = append(admitted, string(l.ID))
		}
	}
	for _, s := range st.Services {
		if s.State == "ready" {
			if _, ok := c.readySince[s.Name]; !ok {
				c.readySince[s.Name] = st.Now
			}
		} else {
			delete(c.readySince, s.Name)
		}
		if s.Refs != refs[s.Name] || s.Waiting != waits[s.Name] {
			c.Failf("%s: refcount %d/%d, but %d admitted and %d waiting leases need it", s.Name, s.Refs, s.Waiting, refs[s.Name], waits[s.Name])
		}
	}
	if stored := w.Store.Leases(); strings.Join(stored, ",") != strings.Join(admitted, ",") {
		c.Failf("store holds leases %v, the engine %v", stored, admitted)
	}
	// Manual services run whether the agent likes it or not; what the
	// agent starts must fit the budget.
	started := 0.0
	for _, s := range st.Services {
		if s.Charged && s.Lifecycle != manifest.Manual {
			started += s.MemGB
		}
	}
	if started > st.MemoryBudgetGB+1e-9 {
		c.Failf("services the agent started reserve %v GB, budget %v GB", started, st.MemoryBudgetGB)
	}
	if len(c.failures) > 0 {
		tail := c.log
		if len(tail) > 80 {
			tail = tail[len(tail)-80:]
		}
		return fmt.Errorf("%s\nrecent trace:\n%s", strings.Join(c.failures, "\n"), strings.Join(tail, "\n"))
	}
	return nil
}
