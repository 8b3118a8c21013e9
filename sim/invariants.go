package sim

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/protocol"
)

// invariants checks a world after every step and every effect: the safety
// rules that must hold whatever happens; and, after every input once the
// node has settled, that nothing is left undone (checkSettled). Property
// tests and svcsim explore install it with watchInvariants.
type invariants struct {
	w        *World
	node     string
	specs    map[string]*manifest.Service // the latest manifest entry of every service configured so far
	failures []string
	// trace is a ring of the recent steps, shown on failure: formatted
	// only then, as most explorations never show theirs. traced counts
	// the steps seen.
	trace  [traceSteps]tracedStep
	traced int

	readySince map[string]time.Time // services in state ready, since when (continuously)
	// held holds each admitted lease of this run of svcrun with a TTL:
	// its TTL, when it was last admitted or renewed, and how long svcrun
	// was paused since; an expiry must come TTL after that, the pauses
	// not counted.
	held map[engine.LeaseID]heldLease
	// stored holds each service's failure count as last persisted (from
	// the boot's state on): a record is a new failure's only when its
	// count grew, since a record is also persisted for other reasons (a
	// yieldable service's last use, at a lease's end).
	stored map[string]int
	state  map[string]string // each service's state after the last step
	// blind holds the services whose daemon died or was started unseen
	// (no container event: a silent death, its owner's hand) and of which
	// no status, ready or fingerprint begun since has answered, nor a thaw
	// come: a lease admitted on a dead one, or a live one taken as
	// stopped, is no fault of the engine, which cannot know. Each change
	// has its number; looks maps such an op in flight to the change it
	// will tell of if it answers (the engine learns it at the op's end,
	// not its start).
	blind  map[string]int
	looks  map[engine.OpID]int
	deaths int
	// ops maps the ops in flight to their targets and ops; fpUnhealthy
	// holds the services whose latest fingerprint said healthy:false.
	ops         map[engine.OpID]opOf
	fpUnhealthy map[string]bool

	// The watch: the timers pending in the driver, by kind and subject,
	// with when they are due (a service is watched while one of its polls
	// is pending), and the
	// services of the configuration now (a service no longer configured
	// is let go of).
	timers     map[timerOf]time.Time
	configured map[string]bool
	// The memory rule of starts: memAtUnknown says a service reserved
	// host memory as it became unknown (its first fingerprint then holds
	// back the starts that reserve memory), fpFailed that a fingerprint
	// of it failed since (it then holds back nothing).
	memAtUnknown, fpFailed map[string]bool
	modEnabled             map[string]bool // the modules enabled, as the engine last heard
	// Clean runs: viaReady says a service's readiness came from a ready
	// poll (a start or an adoption), cleanStop that its stop in progress
	// began from such a readiness, for no failure. Such a stop, ended
	// without escalation, ends a clean run: the failures before it are
	// forgotten.
	viaReady, cleanStop map[string]bool
	// Slot priority: lifecycleQueued holds the services that, at the end
	// of the last step, waited for a slot for a start or a stop; polled
	// names a poll (status, fingerprint, list_owned, destroy) that took a
	// slot in this step. A poll never takes a slot before one of those.
	lifecycleQueued, lifecycleNow map[string]bool
	polled                        string

	// st is the engine's view after the step observe saw, which check
	// checks: the engine does not step between a step's trace and its
	// after, so one snapshot serves both. viewed says st is that step's.
	st     engine.Status
	viewed bool
	// checkState's counts, kept between steps so that their tables are
	// reused.
	refs, waits map[string]int
}

// traceSteps is how many steps the trace keeps: each is at least one
// line, and no failure shows more than 80.
const traceSteps = 128

// tracedStep is one step of the trace: the event and the effects it
// shows, copied, as the engine reuses its slice and its ops and cancelled
// timers, which runs and cancels hold the copies of, and the fake executor
// its completions, which done holds the copy of.
type tracedStep struct {
	now     time.Time
	ev      engine.Event
	done    engine.OpDone
	effects []engine.Effect
	runs    []engine.RunOp
	cancels []engine.CancelTimer
}

// keepEvent copies ev where the step needs one.
func (t *tracedStep) keepEvent(ev engine.Event) {
	if d, ok := ev.(*engine.OpDone); ok {
		t.done = *d
		ev = &t.done
	}
	t.ev = ev
}

// keep copies what lines shows of a step's effects, every one but the
// timers set, into storage the step reuses when the ring comes round.
func (t *tracedStep) keep(effects []engine.Effect) {
	t.runs, t.cancels = t.runs[:0], t.cancels[:0]
	for _, f := range effects {
		switch f := f.(type) {
		case *engine.RunOp:
			t.runs = append(t.runs, *f)
		case *engine.CancelTimer:
			t.cancels = append(t.cancels, *f)
		}
	}
	// Pointers into runs and cancels are taken once they stopped growing.
	t.effects = t.effects[:0]
	r, c := 0, 0
	for _, f := range effects {
		switch f.(type) {
		case *engine.SetTimer:
		case *engine.RunOp:
			t.effects = append(t.effects, &t.runs[r])
			r++
		case *engine.CancelTimer:
			t.effects = append(t.effects, &t.cancels[c])
			c++
		default:
			t.effects = append(t.effects, f)
		}
	}
}

// lines is the step as the trace shows it: the event, then every effect
// but the timers set.
func (t *tracedStep) lines(dst []string) []string {
	var ev any = t.ev
	if d, ok := ev.(*engine.OpDone); ok {
		ev = *d // shown as a value, as the other events
	}
	dst = append(dst, fmt.Sprintf("%v > %s %+v", t.now.Sub(Epoch), t.ev.EventName(), ev))
	for _, f := range t.effects {
		dst = append(dst, "    "+engine.FormatEffect(f))
	}
	return dst
}

// watchInvariants installs the checks on w.
func watchInvariants(w *World, mods []engine.ModuleSpec, node string) *invariants {
	c := &invariants{w: w, node: node, specs: map[string]*manifest.Service{}, readySince: map[string]time.Time{},
		stored: map[string]int{},
		state:  map[string]string{}, blind: map[string]int{}, looks: map[engine.OpID]int{},
		ops: map[engine.OpID]opOf{}, fpUnhealthy: map[string]bool{},
		refs: map[string]int{}, waits: map[string]int{}, timers: map[timerOf]time.Time{}, configured: map[string]bool{},
		memAtUnknown: map[string]bool{}, fpFailed: map[string]bool{}, modEnabled: map[string]bool{},
		viaReady: map[string]bool{}, cleanStop: map[string]bool{}, held: map[engine.LeaseID]heldLease{},
		lifecycleQueued: map[string]bool{}, lifecycleNow: map[string]bool{}}
	c.setModules(mods)
	w.Observe = c.observe
	w.Check = c.check
	w.Unseen = c.changedUnseen
	return c
}

// heldLease is what checkTTL knows of an admitted lease.
type heldLease struct {
	ttl     time.Duration
	renewed time.Time
	paused  time.Duration
}

// checkTTL follows the leases' renewals through the step (ev and its
// effects): a pause of svcrun is never charged to a holder, so a lease
// expires only once it went TTL without a renewal while svcrun ran.
func (c *invariants) checkTTL(now time.Time, ev engine.Event, effects []engine.Effect) {
	switch ev := ev.(type) {
	case engine.Boot:
		clear(c.held) // the restored ones' renewals are not known
	case engine.Paused:
		for id, h := range c.held {
			h.paused += ev.Length
			c.held[id] = h
		}
	}
	for _, f := range effects {
		switch f := f.(type) {
		case engine.Admitted:
			// Admitted now: its expiry is now + its TTL.
			for _, l := range c.w.Engine.Status().Leases {
				if l.ID == f.Lease && !l.Expires.IsZero() {
					c.held[f.Lease] = heldLease{ttl: l.Expires.Sub(now), renewed: now}
				}
			}
		case engine.AlreadyHeld:
			if h, ok := c.held[f.Held]; ok {
				c.held[f.Held] = heldLease{ttl: h.ttl, renewed: now}
			}
		case engine.Renewed:
			if h, ok := c.held[f.Lease]; ok {
				c.held[f.Lease] = heldLease{ttl: h.ttl, renewed: now}
			}
		case engine.Expired:
			h, ok := c.held[f.Lease]
			if ok && f.Reason == "" && now.Sub(h.renewed)-h.paused < h.ttl {
				c.Failf("lease %s expired %v after its last renewal, %v of it a pause of svcrun: its TTL is %v", f.Lease,
					now.Sub(h.renewed), h.paused, h.ttl)
			}
			delete(c.held, f.Lease)
		case engine.Released:
			delete(c.held, f.Lease)
		}
	}
}

// setModules takes the manifests of a new module set: services keep the
// entry of their latest manifest, also once gone from it, as the engine
// keeps it until they are forgotten.
func (c *invariants) setModules(mods []engine.ModuleSpec) {
	clear(c.configured)
	for _, m := range mods {
		for i := range m.Module.Services {
			s := &m.Module.Services[i]
			c.specs[s.FullName()] = s
			c.configured[s.FullName()] = true
		}
	}
}

// opOf is an op in flight: its target and op.
type opOf struct {
	engine.Target
	op protocol.Op
}

// timerOf is a pending timer's kind and subject.
type timerOf struct {
	kind    engine.TimerKind
	subject string
}

// changedUnseen records that the daemon of service died or was started
// unseen.
func (c *invariants) changedUnseen(service string) {
	c.deaths++
	c.blind[service] = c.deaths
}

// Failf records a broken invariant; the world stops at its next step.
func (c *invariants) Failf(format string, args ...any) {
	c.failures = append(c.failures, fmt.Sprintf("at %v: ", c.w.Now().Sub(Epoch))+fmt.Sprintf(format, args...))
}

// Recent is the last n lines of the trace (fewer if it holds fewer).
func (c *invariants) Recent(n int) []string {
	// Whole steps from the newest back until n lines, then the oldest
	// step's first lines cut off.
	first := c.traced
	lines := 0
	var buf []string
	for first > 0 && first > c.traced-traceSteps && lines < n {
		first--
		buf = c.trace[first%traceSteps].lines(buf[:0])
		lines += len(buf)
	}
	var out []string
	for i := first; i < c.traced; i++ {
		out = c.trace[i%traceSteps].lines(out)
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

// observe checks each step's effects against the state at that moment
// (the engine has stepped, the effects are not carried out yet).
func (c *invariants) observe(now time.Time, ev engine.Event, effects []engine.Effect) {
	c.checkTTL(now, ev, effects)
	t := &c.trace[c.traced%traceSteps]
	t.now = now
	t.keepEvent(ev)
	t.keep(effects)
	c.traced++
	cleanRun, fpFailed, unprepared := "", "", ""
	if d, ok := ev.(*engine.OpDone); ok {
		t, ok := c.ops[d.ID]
		name := t.String()
		failed := d.Outcome.Failure != engine.FailNone
		if ok && !t.Probe && d.Outcome.Failure == engine.FailPrepare {
			unprepared = name
		}
		if ok && !t.Probe {
			switch {
			case t.op == protocol.OpFingerprint && !failed:
				c.fpUnhealthy[name] = !d.Outcome.Result.Fingerprint.Healthy
			case t.op == protocol.OpFingerprint:
				fpFailed = name
			case t.op == protocol.OpStop && c.cleanStop[name] && !failed && !d.Outcome.Result.OpResult.Escalated:
				cleanRun = name
			}
		}
		// A look that failed tells nothing.
		if death, ok := c.looks[d.ID]; ok && !failed && c.blind[name] == death {
			delete(c.blind, name)
		}
		delete(c.looks, d.ID)
		delete(c.ops, d.ID)
	}
	if f, ok := ev.(engine.Fire); ok {
		delete(c.timers, timerOf{f.Timer.Kind, f.Timer.Subject})
	}
	if b, ok := ev.(engine.Boot); ok {
		// A new engine: the old one's timers and ops are gone, and every
		// service begins unknown.
		clear(c.stored)
		for _, r := range b.State.Services {
			c.stored[r.Name] = r.Failures
		}
		clear(c.timers)
		clear(c.ops)
		clear(c.looks)
		clear(c.state)
		clear(c.lifecycleQueued)
		clear(c.fpFailed)
		clear(c.cleanStop)
	}
	if b, ok := ev.(engine.Boot); ok {
		c.reloaded(b.Modules)
	}
	if r, ok := ev.(engine.Reload); ok {
		c.reloaded(r.Modules)
	}
	c.st, c.viewed = c.w.Engine.Status(), true
	st := &c.st
	if cleanRun != "" {
		c.checkCleanRun(c.service(cleanRun))
	}
	if fpFailed != "" && c.service(fpFailed).State == "unknown" {
		// Whether it runs stays unknown: its fingerprint is retried.
		c.fpFailed[fpFailed] = true
	}
	// Effects run in order: a kill or a thaw precedes what follows it.
	killed := map[string]bool{}
	thawed := map[string]bool{} // true: thawed, false: frozen, by this step
	frozen := func(name string) bool {
		if t, ok := thawed[name]; ok {
			return !t
		}
		return c.w.Exec.Frozen(name)
	}
	for _, f := range effects {
		switch f := f.(type) {
		case engine.Kill:
			if f.Service.String() == unprepared {
				c.Failf("kill of %s after an op svcrun could not prepare", unprepared)
			}
			killed[f.Service.String()] = true
			thawed[f.Service.String()] = true
		case engine.Freeze:
			thawed[f.Service.String()] = false
		case *engine.SetTimer:
			c.timers[timerOf{f.Key.Kind, f.Key.Subject}] = f.At
		case *engine.CancelTimer:
			delete(c.timers, timerOf{f.Key.Kind, f.Key.Subject})
		case engine.Thaw:
			thawed[f.Service.String()] = true
			delete(c.blind, f.Service.String())
		case *engine.RunOp:
			c.ops[f.ID] = opOf{f.Target, f.Op}
			delete(c.looks, f.ID) // op ids start again after a restart
			name := f.Target.String()
			if c.polled == "" && f.Op != protocol.OpStart && f.Op != protocol.OpStop && f.Op != protocol.OpReady {
				c.polled = fmt.Sprintf("%s of %s", f.Op, name)
			}
			if f.Target.Probe {
				if p, _ := c.probe(func(p *engine.ProbeStatus) bool { return p.Name == name }); !p.Enabled {
					c.Failf("probe %s run while its module is disabled", name)
				}
				continue
			}
			s := c.service(name)
			if frozen(name) {
				c.Failf("%s of %s while it is frozen", f.Op, name)
			}
			switch f.Op {
			case protocol.OpStatus, protocol.OpReady, protocol.OpFingerprint:
				if death := c.blind[name]; death != 0 {
					c.looks[f.ID] = death
				}
			case protocol.OpStart:
				// One its owner started unseen (a manual service made always
				// before its next fingerprint) gets a start, idempotent.
				if c.w.Exec.Running(name) && !killed[name] && c.blind[name] == 0 {
					c.Failf("start of %s while its daemon runs (a second start)", name)
				}
				if c.w.Exec.Stray(name) && !killed[name] && c.w.Exec.Behaviour(name).Contained {
					c.Failf("start of %s into a container that still holds a process", name)
				}
				if now.Before(s.BackoffUntil) {
					c.Failf("start of %s at %v, before its backoff ends at %v", name, now, s.BackoffUntil)
				}
				if s.Unhealthy {
					c.Failf("start of unhealthy %s", name)
				}
				if !s.Enabled {
					c.Failf("start of %s while it is not enabled", name)
				}
			case protocol.OpStop:
				if s.Refs > 0 && s.StopReason != "cleanup after failure" && s.StopReason != "module disabled" &&
					s.StopReason != "its process container is not empty" {
					c.Failf("stop of %s with %d lease(s) for %q", name, s.Refs, s.StopReason)
				}
			case protocol.OpDestroy:
				c.checkDestroy(name, f.Args, st.LiveAttempts)
			}
		case engine.Admitted:
			for _, name := range f.Services {
				if s := c.service(name); !s.Ready {
					c.Failf("lease %s admitted while %s is %s", f.Lease, name, s.State)
				}
				if !c.w.Exec.Running(name) && c.blind[name] == 0 {
					c.Failf("lease %s admitted while the daemon of %s is down", f.Lease, name)
				}
				if frozen(name) {
					c.Failf("lease %s admitted while %s is frozen", f.Lease, name)
				}
			}
			// Capacity may drop later (a crash withdraws it); at the
			// admission, the lease's own pools must fit, and the probes
			// it needs must report healthy.
			var mine engine.LeaseStatus
			for _, l := range st.Leases {
				if l.ID == f.Lease {
					mine = l
				}
			}
			for _, p := range st.Pools {
				if _, ok := mine.Pools[p.Name]; ok && p.Reserved > p.Capacity {
					c.Failf("pool %s: %d reserved of %d at the admission of %s", p.Name, p.Reserved, p.Capacity, f.Lease)
				}
			}
			for _, cp := range mine.Capabilities {
				// A capability one of its services declares is not the
				// probe's of the same name in a disabled module.
				if slices.ContainsFunc(mine.Services,
					func(s string) bool { return c.specs[s] != nil && slices.Contains(c.specs[s].Capabilities, cp) }) {
					continue
				}
				if p, ok := c.probe(func(p *engine.ProbeStatus) bool { return p.Capability == cp }); ok &&
					(!p.Enabled || !p.Reported || !p.Healthy) {
					c.Failf("lease %s admitted while probe %s (capability %s) is enabled=%v reported=%v healthy=%v", f.Lease,
						p.Name, cp, p.Enabled, p.Reported, p.Healthy)
				}
			}
		case engine.PutService:
			r := f.Service
			spec := c.specs[r.Name]
			// A failure counted marks it unhealthy at max_failures; the mark
			// then stays until a reset, also when a reload raises
			// max_failures. Without failures it has none.
			grew := r.Failures > c.stored[r.Name]
			if grew && r.Unhealthy != (r.Failures >= spec.Restart.MaxFailures) || r.Failures == 0 && r.Unhealthy {
				c.Failf("%s: %d failure(s) of %d, unhealthy=%v", r.Name, r.Failures, spec.Restart.MaxFailures, r.Unhealthy)
			}
			// Failures are forgotten by reset_after_s only after that long
			// of continuous readiness.
			if fire, ok := ev.(engine.Fire); ok && fire.Timer.Kind == engine.TimerResetAfter && r.Failures == 0 {
				since, ready := c.readySince[r.Name]
				if !ready || now.Sub(since) < spec.Restart.ResetAfter {
					c.Failf("%s: failures forgotten after %v of readiness (ready=%v), reset_after_s is %v", r.Name,
						now.Sub(since), ready, spec.Restart.ResetAfter)
				}
			}
			counted := r.Failures > c.stored[r.Name]
			c.stored[r.Name] = r.Failures
			if counted && r.Name == unprepared {
				c.Failf("%s: a failure counted for an op svcrun could not prepare", r.Name)
			}
			if _, isFail := ev.(*engine.OpDone); counted && (isFail || isFailureEvent(ev)) {
				if !r.Unhealthy {
					if want := now.Add(engine.Backoff(spec.Restart, r.Failures)); !r.BackoffUntil.Equal(want) {
						c.Failf("%s: backoff after failure %d ends %v, want %v", r.Name, r.Failures, r.BackoffUntil, want)
					}
				}
			}
		}
	}
}

// service is the step's view of the named service; the zero value if
// the engine has none. A scan: a node holds a few dozen services, and
// most steps look none up.
func (c *invariants) service(name string) engine.ServiceStatus {
	for i := range c.st.Services {
		if c.st.Services[i].Name == name {
			return c.st.Services[i]
		}
	}
	return engine.ServiceStatus{}
}

// probe is the step's view of the last probe that match takes (a shadow
// module may offer a capability again), and whether there is one.
func (c *invariants) probe(match func(*engine.ProbeStatus) bool) (engine.ProbeStatus, bool) {
	for i := len(c.st.Probes) - 1; i >= 0; i-- {
		if match(&c.st.Probes[i]) {
			return c.st.Probes[i], true
		}
	}
	return engine.ProbeStatus{}, false
}

func isFailureEvent(ev engine.Event) bool {
	switch ev.(type) {
	case engine.ContainerEmptied, engine.Fire:
		return true
	}
	return false
}

// checkDestroy checks a destroy of object id of service; live is sorted.
//
// A forced one must have been an orphan for force_after reap periods of
// time: at least that long since it was made.
func (c *invariants) checkDestroy(service string, args []string, live []string) {
	id := args[0]
	force := len(args) > 1 && args[1] == "--force"
	cfg := c.w.cfg
	forceAge := time.Duration(cmp.Or(cfg.ForceAfter, 3)) * cmp.Or(cfg.ReapPeriod, time.Minute) // the engine's defaults
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
		case slices.Contains(live, l[protocol.LabelAttemptID]):
			c.Failf("destroy of %s/%s of live attempt %s", service, id, l[protocol.LabelAttemptID])
		}
		if force && c.w.Now().Sub(o.CreatedAt) < forceAge {
			c.Failf("destroy --force of %s/%s %v after it was made: an orphan is forced only after force_after reap "+
				"periods (%v)", service, id, c.w.Now().Sub(o.CreatedAt), forceAge)
		}
	}
}

// check runs after every step: the state-wide invariants.
func (c *invariants) check(w *World) error {
	if !c.viewed {
		c.st = w.Engine.Status()
	}
	c.viewed = false
	c.checkState(c.st)
	return c.err()
}

// checkState checks the engine's view st against itself, the store and
// the world.
func (c *invariants) checkState(st engine.Status) {
	w := c.w
	refs, waits := c.refs, c.waits
	clear(refs)
	clear(waits)
	admitted := 0
	for _, l := range st.Leases {
		c.checkNeeds(st, l)
		for _, s := range l.Services {
			if l.Admitted {
				refs[s]++
			} else {
				waits[s]++
			}
		}
		if l.Admitted {
			admitted++
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
			c.Failf("%s: refcount %d/%d, but %d admitted and %d waiting leases need it", s.Name, s.Refs, s.Waiting,
				refs[s.Name], waits[s.Name])
		}
		// Freezing: only an idle service between ops is frozen, and the
		// engine and the world agree on which.
		if s.Frozen && s.Refs > 0 {
			c.Failf("%s frozen while %d lease(s) hold it", s.Name, s.Refs)
		}
		if s.Frozen && s.OpInFlight != "" {
			c.Failf("%s frozen while its %s runs", s.Name, s.OpInFlight)
		}
		if s.Frozen != w.Exec.Frozen(s.Name) {
			c.Failf("%s: the engine says frozen=%v, its container frozen=%v", s.Name, s.Frozen, w.Exec.Frozen(s.Name))
		}
		// What the agent starts must fit the budget: checked as the start
		// is decided (the account may grow later, by a fingerprint).
		if s.State == "starting" && c.state[s.Name] != "starting" && s.Charged && st.MemoryUsedGB > st.MemoryBudgetGB+1e-9 {
			c.Failf("%s started with %v GB reserved of a budget of %v GB", s.Name, st.MemoryUsedGB, st.MemoryBudgetGB)
		}
		c.transition(&s)
		c.checkWatched(&st, &s)
	}
	c.checkSlotPriority(&st)
	c.checkStarts(&st)
	c.checkTokens(&st)
	if !w.Store.holdsLeases(st.Leases, admitted) {
		var ids []string
		for _, l := range st.Leases {
			if l.Admitted {
				ids = append(ids, string(l.ID))
			}
		}
		c.Failf("store holds leases %v, the engine %v", w.Store.Leases(), ids)
	}
}

// err is the broken invariants with the end of the trace, or nil.
func (c *invariants) err() error {
	if len(c.failures) == 0 {
		return nil
	}
	return fmt.Errorf("%s\nrecent trace:\n%s", strings.Join(c.failures, "\n"), strings.Join(c.Recent(80), "\n"))
}

// settled says the node has nothing left to do now: no op in flight and
// no event due at this instant.
func (c *invariants) settled() bool {
	if c.w.Engine.OpsInFlight() > 0 {
		return false
	}
	at, ok := c.w.Sched.Peek()
	return !ok || at.After(c.w.Now())
}

// checkNeeds checks that a lease needs exactly what offers what it asked
// for now: each pool and capability is declared by one of its services (a
// capability may be a probe's), and each of its services declares one.
func (c *invariants) checkNeeds(st engine.Status, l engine.LeaseStatus) {
	declares := func(name string, list func(*manifest.Service) []string) bool {
		for _, s := range l.Services {
			if sp := c.specs[s]; sp != nil && slices.Contains(list(sp), name) {
				return true
			}
		}
		return false
	}
	pools := func(sp *manifest.Service) []string { return sp.Pools }
	caps := func(sp *manifest.Service) []string { return sp.Capabilities }
	for name := range l.Pools {
		if !declares(name, pools) {
			c.Failf("lease %s asked for pool %s, which none of its services %v offers", l.ID, name, l.Services)
		}
	}
	for _, name := range l.NeedsPools {
		if !declares(name, pools) {
			c.Failf("lease %s needs pool %s, which none of its services %v offers", l.ID, name, l.Services)
		}
	}
	for _, name := range l.Capabilities {
		probe := slices.ContainsFunc(st.Probes, func(p engine.ProbeStatus) bool { return p.Capability == name })
		if !probe && !declares(name, caps) {
			c.Failf("lease %s asked for capability %s, which none of its services %v offers", l.ID, name, l.Services)
		}
	}
	for _, s := range l.Services {
		sp := c.specs[s]
		used := sp != nil &&
			(slices.ContainsFunc(sp.Capabilities, func(x string) bool { return slices.Contains(l.Capabilities, x) }) ||
				slices.ContainsFunc(sp.Pools,
					func(x string) bool { _, ok := l.Pools[x]; return ok || slices.Contains(l.NeedsPools, x) }))
		if !used {
			c.Failf("lease %s needs %s, which offers nothing it asked for", l.ID, s)
		}
	}
}

// checkSettled runs after every input, once the node has settled: nothing
// of a disabled module runs or is charged but its manual services, every probe of an enabled
// module has reported, every enabled service has been fingerprinted (or
// waits for the retry of a failed fingerprint), and
// no wanted service sits stopped while it could start: its memory fits, or
// idle yieldable services could make room (unless it backs off, is
// unhealthy, or its latest fingerprint says unhealthy).
func (c *invariants) checkSettled() {
	if c.settled() {
		c.checkSettledState(c.w.Engine.Status())
	}
}

// checkSettledState is checkSettled on the engine's view st of a settled
// node.
func (c *invariants) checkSettledState(st engine.Status) {
	for _, p := range st.Probes {
		if p.Enabled && !p.Reported {
			c.Failf("settled, and probe %s of an enabled module has never reported", p.Name)
		}
	}
	for _, s := range st.Services {
		spec := c.specs[s.Name]
		if !s.Enabled {
			// A manual service runs on in a disabled module, charged, until
			// its owner stops it.
			manualUp := s.Lifecycle == manifest.Manual && s.State == "ready"
			// Whether one whose fingerprint failed runs is unknown until
			// a retry answers.
			retried := s.State == "unknown" && c.fpFailed[s.Name]
			// A stop svcrun could not prepare is tried again later.
			unprepared := s.State == "stopping" && s.PrepareRetry.After(st.Now)
			if s.State != "stopped" && !manualUp && !retried && !unprepared {
				c.Failf("settled, and %s, not enabled, is %s (charged=%v)", s.Name, s.State, s.Charged)
			}
			// (Nor one its owner started unseen: svcrun watches no stopped
			// service of a disabled module.)
			if s.Lifecycle != manifest.Manual && c.w.Exec.Running(s.Name) && !retried && !unprepared && c.blind[s.Name] == 0 {
				c.Failf("settled, and the daemon of %s runs while it is not enabled", s.Name)
			}
			continue
		}
		if s.State == "unknown" {
			// One whose fingerprint failed waits for its retry (the
			// watch checks that one is pending).
			if !c.fpFailed[s.Name] {
				c.Failf("settled, and %s has never been fingerprinted", s.Name)
			}
			continue
		}
		wanted := s.Lifecycle == manifest.Always || s.Lifecycle == manifest.OnDemand && s.Refs+s.Waiting > 0
		// A service whose latest fingerprint says unhealthy may be
		// withheld from starts until one says healthy.
		if !wanted || s.Unhealthy || s.State != "stopped" || s.BackoffUntil.After(st.Now) ||
			s.PrepareRetry.After(st.Now) || c.fpUnhealthy[s.Name] {
			continue
		}
		if !spec.ReservesHostMemory || st.MemoryUsedGB+s.MemGB <= st.MemoryBudgetGB+1e-9 {
			c.Failf("settled, and %s is wanted (%d lease(s), %s) but stopped, though its %v GB fit (%v of %v GB in use)",
				s.Name, s.Refs+s.Waiting, s.Lifecycle, s.MemGB, st.MemoryUsedGB, st.MemoryBudgetGB)
			continue
		}
		need := st.MemoryUsedGB + s.MemGB - st.MemoryBudgetGB
		var yieldable []string
		freeing := 0.0
		for _, o := range st.Services {
			os := c.specs[o.Name]
			if o.Name != s.Name && o.State == "ready" && o.Refs+o.Waiting == 0 && os.ReservesHostMemory &&
				os.Yieldable && o.Lifecycle == manifest.OnDemand && o.MemGB > 0 {
				freeing += o.MemGB
				yieldable = append(yieldable, o.Name)
			}
		}
		if freeing >= need-1e-9 {
			c.Failf("settled, and %s is wanted but waits for memory (%v GB more needed), though idle yieldable %v "+
				"hold %v GB", s.Name, need, yieldable, freeing)
		}
	}
}
