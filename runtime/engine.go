package runtime

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/protocol"
)

// Engine is the service manager's state machine. It is not safe for
// concurrent use: one driver loop owns it.
type Engine struct {
	cfg    Config
	now    time.Time
	booted bool
	out    []Effect
	nextOp OpID

	modules  map[string]*module
	modOrder []*module // sorted by name
	services map[string]*service
	svcOrder []*service // sorted by full name
	probes   map[string]*probe
	prbOrder []*probe // sorted by full name
	caps     map[string]provider
	pools    map[string]*service
	skipped  []string // services and probes not loaded on this platform, for status
	// offPlatform says, for a capability or pool ("capability x", "pool
	// y") of a service or probe not loaded here, why: rejections name it.
	offPlatform map[string]string
	// offline says why a capability or pool of a disabled module or a
	// removed service is not offered.
	offline map[string]string

	leases   map[LeaseID]*lease
	waiting  []*lease // FIFO
	attempts map[string]int
	reserved map[string]int64

	ops       map[OpID]*opRun
	inflight  int
	slotQueue []actor

	dirty      []actor
	admitDirty bool
	memBlocked []*service
	memUsed    float64
	unknown    int // services not fingerprinted since load

	nextBase  uint32   // the last timer slot base handed out
	freeBases []uint32 // bases of forgotten leases

	// ended says why the engine ended an admitted lease itself (its
	// module was removed): the holder's next renew or release is told,
	// once.
	ended map[LeaseID]string

	doctorPending bool
}

// provider establishes a capability: a service or a probe.
type provider struct {
	svc *service
	prb *probe
}

type module struct {
	name     string
	spec     *manifest.Module
	enabled  bool
	services []*service
	probes   []*probe
	// stopWhy is why its services stop when it is disabled.
	stopWhy string
	// removed: gone from the configuration. Disabled, it stays until its
	// services have stopped, then it is forgotten.
	removed bool
}

// actor is something that runs ops: a service or a probe. Its reconcile
// looks at what is due and starts at most one op.
type actor interface {
	reconcile(e *Engine)
	base() *actorBase
}

// actorBase is what services and probes share: their names, their timer
// slots, and their place in the reconcile and op-slot queues.
type actorBase struct {
	name   string // module/name
	mod    *module
	target Target
	slot   uint32 // timer slot base

	op       *opRun // in flight: &run, or nil
	run      opRun  // one op at a time: reused, not allocated
	dirty    bool   // queued for a reconcile
	waitSlot bool   // queued for a global op slot
	removed  bool   // gone from its manifest
}

func (b *actorBase) base() *actorBase { return b }

// opRun is an op in flight.
type opRun struct {
	id      OpID
	op      protocol.Op
	svc     *service
	prb     *probe
	stopWhy string
	object  string    // destroy
	snap    *reapSnap // list_owned
}

// New returns an engine that waits for its Boot event.
func New() *Engine {
	return &Engine{
		modules:  map[string]*module{},
		services: map[string]*service{},
		probes:   map[string]*probe{},
		caps:     map[string]provider{},
		pools:    map[string]*service{},
		leases:   map[LeaseID]*lease{},
		attempts: map[string]int{},
		reserved: map[string]int64{},
		ops:      map[OpID]*opRun{},
		ended:    map[LeaseID]string{},

		offPlatform: map[string]string{},
		offline:     map[string]string{},
	}
}

// Now is the time of the last step.
func (e *Engine) Now() time.Time { return e.now }

// Step applies one event at time now and returns the effects, in the order
// they must be carried out (see the package doc for the persistence rule).
// The returned slice is reused by the next Step.
func (e *Engine) Step(now time.Time, ev Event) []Effect {
	e.out = e.out[:0]
	if now.After(e.now) {
		e.now = now
	}
	if _, isBoot := ev.(Boot); !isBoot && !e.booted {
		e.note("engine", "%s before boot ignored", ev.EventName())
		return e.out
	}
	switch ev := ev.(type) {
	case Boot:
		e.boot(ev)
	case Reload:
		e.reload(ev.Modules, ev.Why)
	case Acquire:
		e.acquire(ev)
	case Renew:
		e.renew(ev.Lease)
	case Release:
		e.release(ev.Lease)
	case OpDone:
		e.opDone(ev)
	case Fire:
		e.fire(ev.Timer)
	case ContainerEmptied:
		if s := e.services[ev.Service]; s != nil {
			e.containerEmptied(s)
		}
	case Doctor:
		e.doctor(ev.Reason)
	case MemoryPressure:
		e.memoryPressure()
	case Reset:
		e.reset(ev.Service)
	case ReapNow:
		e.startReap()
	default:
		e.note("engine", "unknown event %T ignored", ev)
	}
	e.settle()
	return e.out
}

// settle runs reconciles and admissions until nothing more changes.
func (e *Engine) settle() {
	// The dirty list is consumed by index so that its array is reused
	// from step to step.
	for i := 0; i < len(e.dirty) || e.admitDirty; {
		if e.admitDirty {
			e.admitDirty = false
			e.admitWaiting()
			continue
		}
		a := e.dirty[i]
		e.dirty[i] = nil
		i++
		a.base().dirty = false
		a.reconcile(e)
	}
	e.dirty = e.dirty[:0]
}

func (e *Engine) markDirty(a actor) {
	if b := a.base(); !b.dirty {
		b.dirty = true
		e.dirty = append(e.dirty, a)
	}
}

func (e *Engine) emit(f Effect) { e.out = append(e.out, f) }

func (e *Engine) note(subject, format string, args ...any) {
	e.emit(Note{Subject: subject, Text: fmt.Sprintf(format, args...)})
}

func (e *Engine) setTimer(base uint32, kind TimerKind, subject string, at time.Time) {
	e.emit(SetTimer{Key: TimerKey{Kind: kind, Subject: subject, Slot: base + uint32(kind)}, At: at})
}

func (e *Engine) cancelTimer(base uint32, kind TimerKind, subject string) {
	e.emit(CancelTimer{Key: TimerKey{Kind: kind, Subject: subject, Slot: base + uint32(kind)}})
}

// slotBase gives an owner (service, probe, lease) its range of timer slots;
// 0 belongs to the node-wide timers. Lease bases are recycled.
func (e *Engine) slotBase() uint32 {
	if n := len(e.freeBases); n > 0 {
		b := e.freeBases[n-1]
		e.freeBases = e.freeBases[:n-1]
		return b
	}
	e.nextBase += timerKinds
	return e.nextBase
}

// ----- Loading modules. -----

func (e *Engine) boot(b Boot) {
	if e.booted {
		e.note("engine", "second boot ignored")
		return
	}
	e.booted = true
	e.cfg = b.Config
	e.cfg.withDefaults()
	var enable []*module
	for _, ms := range sortedSpecs(b.Modules) {
		if m := e.addModule(ms); ms.Enabled {
			enable = append(enable, m)
		}
	}
	e.rebuildIndex()
	for _, r := range b.State.Services {
		s := e.services[r.Name]
		if s == nil {
			continue
		}
		s.failures, s.unhealthy, s.reason, s.backoffUntil = r.Failures, r.Unhealthy, r.Reason, r.BackoffUntil
		if s.unhealthy {
			e.note(s.name, "unhealthy since before the restart: %s", s.reason)
		}
	}
	for _, m := range enable {
		e.enableModule(m)
	}
	e.rebuildIndex()
	for _, r := range b.State.Leases {
		e.restoreLease(r)
	}
	e.setTimer(0, TimerReap, "", e.now.Add(e.cfg.ReapPeriod))
}

func sortedSpecs(specs []ModuleSpec) []ModuleSpec {
	out := append([]ModuleSpec(nil), specs...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Module.Name < out[j].Module.Name })
	return out
}

// addModule creates the module's services and probes, disabled.
func (e *Engine) addModule(ms ModuleSpec) *module {
	m := &module{name: ms.Module.Name, spec: ms.Module}
	e.modules[m.name] = m
	for i := range ms.Module.Services {
		spec := &ms.Module.Services[i]
		if !spec.RunsOn(e.cfg.Platform) {
			e.skipped = append(e.skipped, spec.FullName())
			e.note(spec.FullName(), "not loaded: platforms %v exclude %s", spec.Platforms, e.cfg.Platform)
			why := fmt.Sprintf("service %s is not loaded on %s (platforms %v)", spec.FullName(), e.cfg.Platform, spec.Platforms)
			for _, c := range spec.Capabilities {
				e.offPlatform["capability "+c] = why
			}
			for _, p := range spec.Pools {
				e.offPlatform["pool "+p] = why
			}
			continue
		}
		e.newService(m, spec)
	}
	for i := range ms.Module.Probes {
		spec := &ms.Module.Probes[i]
		name := m.name + "/" + spec.Name
		if !spec.RunsOn(e.cfg.Platform) {
			e.skipped = append(e.skipped, name)
			e.note(name, "not loaded: platforms %v exclude %s", spec.Platforms, e.cfg.Platform)
			e.offPlatform["capability "+spec.Name] = fmt.Sprintf("probe %s is not loaded on %s (platforms %v)", name, e.cfg.Platform, spec.Platforms)
			continue
		}
		e.newProbe(m, spec)
	}
	return m
}

// newService adds a service to its module, stopped, with its own timer
// slots.
func (e *Engine) newService(m *module, spec *manifest.Service) *service {
	s := &service{
		actorBase: actorBase{name: spec.FullName(), mod: m, target: Target{Module: m.name, Name: spec.Name}, slot: e.slotBase()},
		spec:      spec,
		state:     sStopped,
	}
	m.services = append(m.services, s)
	e.services[s.name] = s
	return s
}

// newProbe adds a probe to its module, not due, with its own timer slots.
func (e *Engine) newProbe(m *module, spec *manifest.Probe) *probe {
	p := &probe{
		actorBase: actorBase{name: m.name + "/" + spec.Name, mod: m, target: Target{Module: m.name, Name: spec.Name, Probe: true}, slot: e.slotBase()},
		spec:      spec,
	}
	m.probes = append(m.probes, p)
	e.probes[p.name] = p
	return p
}

// rebuildIndex recomputes the sorted orders and the capability and pool
// indexes after modules change.
func (e *Engine) rebuildIndex() {
	e.modOrder = e.modOrder[:0]
	e.svcOrder = e.svcOrder[:0]
	e.prbOrder = e.prbOrder[:0]
	for _, m := range e.modules {
		e.modOrder = append(e.modOrder, m)
	}
	sort.Slice(e.modOrder, func(i, j int) bool { return e.modOrder[i].name < e.modOrder[j].name })
	for _, s := range e.services {
		e.svcOrder = append(e.svcOrder, s)
	}
	sort.Slice(e.svcOrder, func(i, j int) bool { return e.svcOrder[i].name < e.svcOrder[j].name })
	for _, p := range e.probes {
		e.prbOrder = append(e.prbOrder, p)
	}
	sort.Slice(e.prbOrder, func(i, j int) bool { return e.prbOrder[i].name < e.prbOrder[j].name })
	// Only enabled providers are indexed: names are unique among enabled
	// modules only, so a disabled or removed one must not hide the live
	// one. Why the others offer nothing is kept for rejections.
	clear(e.caps)
	clear(e.pools)
	clear(e.offline)
	for _, s := range e.svcOrder {
		why := ""
		switch {
		case s.removed:
			why = fmt.Sprintf("service %s was removed from its module", s.name)
		case s.mod.removed:
			why = fmt.Sprintf("service %s: module %s was removed from the configuration", s.name, s.mod.name)
		case !s.mod.enabled:
			why = fmt.Sprintf("service %s: module %s is disabled", s.name, s.mod.name)
		}
		for _, c := range s.spec.Capabilities {
			if why != "" {
				e.offline["capability "+c] = why
				continue
			}
			e.caps[c] = provider{svc: s}
		}
		for _, p := range s.spec.Pools {
			if why != "" {
				e.offline["pool "+p] = why
				continue
			}
			e.pools[p] = s
		}
	}
	for _, p := range e.prbOrder {
		if !p.mod.enabled {
			e.offline["capability "+p.spec.Name] = fmt.Sprintf("capability %q: module %s is disabled", p.spec.Name, p.mod.name)
			continue
		}
		e.caps[p.spec.Name] = provider{prb: p}
	}
	sort.Strings(e.skipped)
}

// enableModule and disableModule change what the index offers: their
// callers rebuild it once, after all the modules of the event.
func (e *Engine) enableModule(m *module) {
	m.enabled = true
	for _, s := range m.services {
		s.setState(e, sUnknown)
		s.fpDue = true
		e.markDirty(s)
	}
	for _, p := range m.probes {
		p.due = true
		e.markDirty(p)
	}
}

// disableModule stops a module's services and fails the requests waiting
// for them with why.
func (e *Engine) disableModule(m *module, why string) {
	m.enabled = false
	for _, s := range m.services {
		// A service still unknown is fingerprinted all the same: if it runs,
		// it is stopped (fingerprinted), else it is stopped already.
		e.failWaitingFor(s, nil, why)
		e.markDirty(s)
	}
	for _, p := range m.probes {
		p.due = false
		p.reported, p.healthy, p.message, p.checked = false, false, "", time.Time{}
		e.cancelTimer(p.slot, TimerProbe, p.name)
		e.failWaitingFor(nil, p, why)
	}
}

// removeModule takes a module out of the configuration. It is a disable:
// its services get their stop op (escalating only if that fails), and the
// admitted leases that need it end, their holders told why, since nothing
// will serve them again. Its probes go at once; its services, and then the
// module, are forgotten once stopped.
func (e *Engine) removeModule(m *module) {
	why := fmt.Sprintf("module %s was removed from the configuration", m.name)
	e.note("module "+m.name, "removed from the configuration: its services stop, then leave")
	m.removed = true
	m.stopWhy = "module removed from the configuration"
	if m.enabled {
		e.disableModule(m, why)
	}
	e.endLeasesNeeding(func(s *service) bool { return s.mod == m }, func(p *probe) bool { return p.mod == m }, why)
	for _, p := range m.probes {
		p.removed = true
		e.cancelTimer(p.slot, TimerProbe, p.name)
		delete(e.probes, p.name)
	}
	m.probes = nil
	for _, s := range m.services {
		e.markDirty(s)
	}
	e.forgetModuleIfEmpty(m)
}

// endLeasesNeeding ends the admitted leases that need a service or probe
// matched by svc or prb: nothing will serve them again. Their holders get
// Expired with why, and their next renew or release is told why too.
func (e *Engine) endLeasesNeeding(svc func(*service) bool, prb func(*probe) bool, why string) {
	var ids []LeaseID
	for id, l := range e.leases {
		if l.admitted && (slices.ContainsFunc(l.services, svc) || slices.ContainsFunc(l.probes, prb)) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		e.note("lease "+string(id), "ended: %s", why)
		e.endLease(e.leases[id])
		e.ended[id] = why
		e.emit(Expired{Lease: id, Reason: why})
	}
}

// unknownLease answers a renew or release of a lease the engine does not
// hold, saying why the first time if the engine ended it itself.
func (e *Engine) unknownLease(id LeaseID) {
	why := e.ended[id]
	delete(e.ended, id)
	e.emit(LeaseUnknown{Lease: id, Reason: why})
}

// forgetModuleIfEmpty drops a removed module once it has no services left.
func (e *Engine) forgetModuleIfEmpty(m *module) {
	if m.removed && len(m.services) == 0 && e.modules[m.name] == m {
		delete(e.modules, m.name)
		e.note("module "+m.name, "forgotten: its services have stopped")
		e.rebuildIndex()
	}
}

// reload applies a new module set: enabling, disabling, adding modules,
// and updating the manifests of loaded ones in place. why is Reload.Why.
func (e *Engine) reload(specs []ModuleSpec, why string) {
	disabled, stopWhy := "disabled", "module disabled"
	if why != "" {
		disabled, stopWhy = "disabled: "+why, why
	}
	seen := map[string]bool{}
	for _, ms := range sortedSpecs(specs) {
		seen[ms.Module.Name] = true
		m := e.modules[ms.Module.Name]
		if m != nil && m.removed {
			// Back before its services had all stopped: it is read
			// again whole, since some of them may be forgotten already.
			m.removed, m.spec = false, nil
			e.note("module "+m.name, "back in the configuration")
		}
		if m == nil {
			m = e.addModule(ms)
			e.rebuildIndex()
			if ms.Enabled {
				e.note("module "+m.name, "added and enabled")
				e.enableModule(m)
			}
			continue
		}
		e.updateModule(m, ms.Module)
		switch {
		case ms.Enabled && !m.enabled:
			e.note("module "+m.name, "enabled")
			// Re-enabling a module is, like an explicit reset, a fresh
			// start for its services' failure records.
			for _, s := range m.services {
				if s.failures > 0 || s.unhealthy {
					e.note(s.name, "module re-enabled: %d failure(s) forgotten", s.failures)
					e.clearFailures(s)
				}
			}
			e.enableModule(m)
		case !ms.Enabled && m.enabled:
			e.note("module "+m.name, "%s", disabled)
			m.stopWhy = stopWhy
			e.disableModule(m, fmt.Sprintf("module %s was disabled", m.name))
		}
	}
	for _, m := range append([]*module(nil), e.modOrder...) {
		if !seen[m.name] && !m.removed {
			e.removeModule(m)
		}
	}
	e.rebuildIndex()
	if why == "" {
		e.doctor("configuration reloaded")
	}
}

// updateModule takes a new manifest for a loaded module. Services and probes
// keep their state and take their new settings; ones that appear are added
// (disabled until the module is enabled); ones that disappear are disabled.
func (e *Engine) updateModule(m *module, spec *manifest.Module) {
	if spec == m.spec {
		return
	}
	m.spec = spec
	known := map[string]bool{}
	for i := range spec.Services {
		sp := &spec.Services[i]
		if !sp.RunsOn(e.cfg.Platform) {
			continue
		}
		known[sp.FullName()] = true
		if s := e.services[sp.FullName()]; s != nil {
			e.respec(s, sp)
			if s.removed {
				s.removed = false
				e.note(s.name, "back in the manifest")
				e.markDirty(s)
			}
			continue
		}
		s := e.newService(m, sp)
		if m.enabled {
			s.fpDue = true
			e.markDirty(s)
		}
	}
	for _, s := range m.services {
		if !known[s.name] && !s.removed {
			s.removed = true
			e.note(s.name, "removed from the manifest: stopping it")
			e.failWaitingFor(s, nil, "the service was removed from its module")
			e.endLeasesNeeding(func(x *service) bool { return x == s }, func(*probe) bool { return false },
				fmt.Sprintf("service %s was removed from its module's manifest", s.name))
			e.markDirty(s)
		}
	}
	knownProbes := map[string]bool{}
	for i := range spec.Probes {
		sp := &spec.Probes[i]
		name := m.name + "/" + sp.Name
		if !sp.RunsOn(e.cfg.Platform) {
			continue
		}
		knownProbes[name] = true
		if p := e.probes[name]; p != nil {
			p.spec = sp
			continue
		}
		p := e.newProbe(m, sp)
		p.due = m.enabled
		e.markDirty(p)
	}
	kept := m.probes[:0]
	for _, p := range m.probes {
		if knownProbes[p.name] {
			kept = append(kept, p)
			continue
		}
		e.note(p.name, "removed from the manifest: capability %s withdrawn", p.spec.Name)
		p.removed = true
		e.cancelTimer(p.slot, TimerProbe, p.name)
		e.failWaitingFor(nil, p, fmt.Sprintf("probe %s was removed from its module", p.name))
		delete(e.probes, p.name)
	}
	m.probes = kept
	e.rebuildIndex()
}

// respec gives a service its new manifest entry; memory already charged
// stays accounted by what was charged (see setState).
func (e *Engine) respec(s *service, sp *manifest.Service) { s.spec = sp }

// ----- Ops. -----

// runOp starts op for a service or probe if a global slot is free;
// otherwise the actor queues for one and false is returned.
func (e *Engine) runOp(a actor, r *opRun, target Target, args []string, timeout time.Duration) bool {
	if e.inflight >= e.cfg.MaxConcurrentOps {
		if b := a.base(); !b.waitSlot {
			b.waitSlot = true
			e.slotQueue = append(e.slotQueue, a)
		}
		return false
	}
	e.nextOp++
	r.id = e.nextOp
	e.ops[r.id] = r
	e.inflight++
	e.emit(RunOp{ID: r.id, Target: target, Op: r.op, Args: args, Timeout: timeout})
	return true
}

func (e *Engine) opDone(d OpDone) {
	r := e.ops[d.ID]
	if r == nil {
		e.note("engine", "completion of unknown op %d ignored", d.ID)
		return
	}
	delete(e.ops, d.ID)
	e.inflight--
	e.freeSlots()
	d.Outcome = checkOutcome(r.op, d.Outcome)
	if r.svc != nil {
		e.serviceOpDone(r.svc, r, d.Outcome)
	} else {
		e.probeOpDone(r.prb, d.Outcome)
	}
}

// checkOutcome turns a success without the result its op returns into a
// protocol failure: the executor never reports one, but the engine must
// not act on a missing result (a hand-edited journal replayed, a driver
// bug).
func checkOutcome(op protocol.Op, o Outcome) Outcome {
	if o.Failure != FailNone {
		return o
	}
	r := o.Result
	var ok bool
	switch op {
	case protocol.OpFingerprint:
		ok = r.Fingerprint != nil
	case protocol.OpStart, protocol.OpStop, protocol.OpDestroy:
		ok = r.OpResult != nil
	case protocol.OpStatus, protocol.OpReady:
		ok = r.Status != nil
	case protocol.OpListOwned:
		ok = r.OwnedList != nil
	}
	if ok && r.Op == op {
		return o
	}
	return Outcome{Failure: FailProtocol, Message: fmt.Sprintf("%s: succeeded without a %s result (the executor's result is for %q)", op, op, r.Op)}
}

// freeSlots hands free global slots to the actors queued for them, in order.
func (e *Engine) freeSlots() {
	for len(e.slotQueue) > 0 && e.inflight < e.cfg.MaxConcurrentOps {
		a := e.slotQueue[0]
		e.slotQueue = e.slotQueue[1:]
		a.base().waitSlot = false
		a.reconcile(e)
	}
}

func (e *Engine) fire(k TimerKey) {
	switch k.Kind {
	case TimerReap:
		e.startReap()
	case TimerDoctor:
		e.doctorPending = false
		for _, p := range e.prbOrder {
			if p.mod.enabled {
				p.due = true
				e.markDirty(p)
			}
		}
	case TimerProbe:
		if p := e.probes[k.Subject]; p != nil && p.mod.enabled {
			p.due = true
			e.markDirty(p)
		}
	case TimerLeaseWait:
		e.leaseWaitOver(LeaseID(k.Subject))
	case TimerLeaseTTL:
		e.leaseTTLOver(LeaseID(k.Subject))
	default:
		if s := e.services[k.Subject]; s != nil {
			e.serviceTimer(s, k.Kind)
		}
	}
}

func (e *Engine) doctor(reason string) {
	e.note("doctor", "%s: probes run again", reason)
	if e.doctorPending {
		return
	}
	e.doctorPending = true
	e.setTimer(0, TimerDoctor, "", e.now.Add(e.cfg.DoctorDebounce))
}

func (e *Engine) reset(name string) {
	s := e.services[name]
	if s == nil {
		e.note(name, "reset: no such service")
		return
	}
	s.backoffTimer = false
	e.cancelTimer(s.slot, TimerBackoff, s.name)
	e.clearFailures(s)
	e.note(s.name, "reset: failures cleared")
	e.markDirty(s)
	e.admitDirty = true
}

func (e *Engine) memoryPressure() {
	n := 0
	for _, s := range e.svcOrder {
		if s.idle() && s.spec.Yieldable && s.state == sReady && s.spec.Lifecycle == manifest.OnDemand {
			e.beginStop(s, "memory pressure")
			n++
		}
	}
	e.note("memory", "host memory pressure: %d idle yieldable service(s) stopped", n)
}

// clearFailures forgets a service's failures and its unhealthy mark, in
// the store too.
func (e *Engine) clearFailures(s *service) {
	s.failures, s.unhealthy, s.reason, s.backoffUntil = 0, false, "", time.Time{}
	e.persistService(s)
}

func (e *Engine) persistService(s *service) {
	e.emit(PutService{Service: ServiceRecord{Name: s.name, Failures: s.failures, Unhealthy: s.unhealthy, Reason: s.reason, BackoffUntil: s.backoffUntil}})
}
