package engine

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/oarbank/svcrun/manifest"
)

type module struct {
	name     string
	spec     *manifest.Module
	enabled  bool
	services []*service
	probes   []*probe
	// stopWhy is why its services stop when it is disabled.
	stopReason string
	// removed: gone from the configuration. Disabled, it stays until its
	// services have stopped, then it is forgotten.
	removed bool
}

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
		m := e.addModule(ms)
		if ms.Enabled {
			enable = append(enable, m)
			continue
		}
		e.fingerprintFirst(m.services)
	}
	e.rebuildIndex()
	for _, r := range b.State.Services {
		s := e.services[r.Name]
		if s == nil {
			continue
		}
		s.failures, s.unhealthy, s.reason, s.backoffUntil = r.Failures, r.Unhealthy, r.Reason, r.BackoffUntil
		s.lastUsed = r.LastUsed
		if s.unhealthy {
			e.alarm(s.name, "unhealthy since before the restart: %s", s.reason)
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

// fingerprintFirst has services fingerprinted before they start: the
// last svcrun, an earlier configuration or its owner may have left one
// running, which is then adopted and charged against the budget, or, in a
// disabled module, stopped (see fingerprinted). Starts that reserve memory
// wait for them too (see maybeStart).
func (e *Engine) fingerprintFirst(services []*service) {
	for _, s := range services {
		s.setState(e, sUnknown)
		s.fpDue = true
		e.markDirty(s)
	}
}

func sortedSpecs(specs []ModuleSpec) []ModuleSpec {
	out := append([]ModuleSpec(nil), specs...)
	slices.SortStableFunc(out, func(a, b ModuleSpec) int { return strings.Compare(a.Module.Name, b.Module.Name) })
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
			reason := fmt.Sprintf("service %s is not loaded on %s (platforms %v)", spec.FullName(), e.cfg.Platform,
				spec.Platforms)
			for _, c := range spec.Capabilities {
				e.offPlatform["capability "+c] = reason
			}
			for _, p := range spec.Pools {
				e.offPlatform["pool "+p] = reason
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
			e.offPlatform["capability "+spec.Name] = fmt.Sprintf("probe %s is not loaded on %s (platforms %v)", name,
				e.cfg.Platform, spec.Platforms)
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
		actorBase: actorBase{name: spec.FullName(), mod: m, target: Target{Module: m.name, Name: spec.Name},
			slot: e.slotBase()},
		spec:  spec,
		state: sStopped,
	}
	m.services = append(m.services, s)
	e.services[s.name] = s
	i := int(s.slot / timerKinds)
	for len(e.slotServices) <= i {
		e.slotServices = append(e.slotServices, nil)
	}
	e.slotServices[i] = s
	return s
}

// newProbe adds a probe to its module, not due, with its own timer slots.
func (e *Engine) newProbe(m *module, spec *manifest.Probe) *probe {
	p := &probe{
		actorBase: actorBase{name: m.name + "/" + spec.Name, mod: m,
			target: Target{Module: m.name, Name: spec.Name, Probe: true}, slot: e.slotBase()},
		spec: spec,
	}
	m.probes = append(m.probes, p)
	e.probes[p.name] = p
	return p
}

// sortedByName refills dst, reusing its array, with the values of m in
// name order.
func sortedByName[T any](dst []*T, m map[string]*T, name func(*T) string) []*T {
	dst = dst[:0]
	for _, x := range m {
		dst = append(dst, x)
	}
	slices.SortFunc(dst, func(a, b *T) int { return strings.Compare(name(a), name(b)) })
	return dst
}

// rebuildIndex recomputes the sorted orders and the capability and pool
// indexes after modules change.
func (e *Engine) rebuildIndex() {
	e.modOrder = sortedByName(e.modOrder, e.modules, func(m *module) string { return m.name })
	e.svcOrder = sortedByName(e.svcOrder, e.services, func(s *service) string { return s.name })
	e.prbOrder = sortedByName(e.prbOrder, e.probes, func(p *probe) string { return p.name })
	// Only enabled providers are indexed: names are unique among enabled
	// modules only, so a disabled or removed one must not hide the live
	// one. Why the others offer nothing is kept for rejections.
	clear(e.caps)
	clear(e.pools)
	clear(e.offline)
	for _, s := range e.svcOrder {
		reason := ""
		switch {
		case s.removed:
			reason = fmt.Sprintf("service %s was removed from its module", s.name)
		case s.mod.removed:
			reason = fmt.Sprintf("service %s: module %s was removed from the configuration", s.name, s.mod.name)
		case !s.mod.enabled:
			reason = fmt.Sprintf("service %s: module %s is disabled", s.name, s.mod.name)
		}
		for _, c := range s.spec.Capabilities {
			if reason != "" {
				e.offline["capability "+c] = reason
				continue
			}
			e.caps[c] = provider{svc: s}
		}
		for _, p := range s.spec.Pools {
			if reason != "" {
				e.offline["pool "+p] = reason
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
		s.fpDue = true
		e.markDirty(s)
		if s.op != nil {
			// Its op (a start, a stop, a poll) goes on: its end says where
			// the service is, it stays charged meanwhile, and the
			// fingerprint follows.
			continue
		}
		s.setState(e, sUnknown)
	}
	for _, p := range m.probes {
		p.due = true
		e.markDirty(p)
	}
}

// disableModule stops a module's services and fails the requests waiting
// for them with reason.
func (e *Engine) disableModule(m *module, reason string) {
	m.enabled = false
	for _, s := range m.services {
		// A service still unknown is fingerprinted all the same: if it runs,
		// it is stopped (fingerprinted), else it is stopped already.
		e.failWaitingFor(s, nil, reason)
		e.markDirty(s)
	}
	for _, p := range m.probes {
		p.due = false
		p.reported, p.healthy, p.message, p.checked = false, false, "", time.Time{}
		e.cancelTimer(p.slot, TimerProbe, p.name)
		e.failWaitingFor(nil, p, reason)
	}
}

// removeModule takes a module out of the configuration. It is a disable:
// its services get their stop op (escalating only if that fails), and the
// admitted leases that need it end, their holders told why, since nothing
// will serve them again. Its probes go at once; its services, and then the
// module, are forgotten once stopped.
func (e *Engine) removeModule(m *module) {
	reason := fmt.Sprintf("module %s was removed from the configuration", m.name)
	e.note("module "+m.name, "removed from the configuration: its services stop, then leave")
	m.removed = true
	m.stopReason = "module removed from the configuration"
	if m.enabled {
		e.disableModule(m, reason)
	}
	e.endLeasesNeeding(func(s *service) bool { return s.mod == m }, func(p *probe) bool { return p.mod == m }, reason)
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

// forgetModuleIfEmpty drops a removed module once it has no services left.
func (e *Engine) forgetModuleIfEmpty(m *module) {
	if m.removed && len(m.services) == 0 && e.modules[m.name] == m {
		delete(e.modules, m.name)
		e.note("module "+m.name, "forgotten: its services have stopped")
		e.rebuildIndex()
	}
}

// reload applies a new module set: enabling, disabling, adding modules,
// and updating the manifests of loaded ones in place. reason is Reload.Reason.
func (e *Engine) reload(specs []ModuleSpec, reason string) {
	disabled, stopReason := "disabled", "module disabled"
	if reason != "" {
		disabled, stopReason = "disabled: "+reason, reason
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
			} else {
				e.fingerprintFirst(m.services)
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
			m.stopReason = stopReason
			e.disableModule(m, fmt.Sprintf("module %s was disabled", m.name))
		}
	}
	for _, m := range append([]*module(nil), e.modOrder...) {
		if !seen[m.name] && !m.removed {
			e.removeModule(m)
		}
	}
	e.rebuildIndex()
	e.reresolve()
	if reason == "" {
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
		// As at boot: it may already run (left by an earlier
		// configuration or its owner), so it is fingerprinted before it
		// starts, to be adopted and its memory counted, or, in a disabled
		// module, stopped.
		e.fingerprintFirst([]*service{e.newService(m, sp)})
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
func (e *Engine) respec(s *service, sp *manifest.Service) {
	old, oldLifecycle, oldIdle := s.spec.Restart.ResetAfter, s.spec.Lifecycle, s.spec.IdleTimeout
	s.spec = sp
	if sp.IdleTimeout != oldIdle && (s.idleTimer || s.idleExpired) {
		e.rearmIdle(s)
	}
	// What it should do may have changed with it (a lifecycle now always,
	// an idle timeout, a reservation): it is reconsidered.
	e.markDirty(s)
	if s.frozen && !s.freezable() {
		// Nothing would thaw it while idle: no poll runs on a frozen
		// service, and a manual one is never reaped.
		e.thaw(s)
	}
	if oldLifecycle == manifest.Manual && sp.Lifecycle != manifest.Manual && s.state == sReady {
		// Only fingerprinted until now: watched by status from now on.
		e.setTimer(s.slot, TimerStatus, s.name, e.now.Add(e.statusPeriod(s)))
	}
	if sp.Lifecycle != oldLifecycle && s.fpWatched() {
		// A lifecycle change takes effect at once: a service made manual
		// is usable as soon as a fingerprint says it runs. (Every other
		// fingerprint of a configuration reload comes with its doctor
		// event.)
		s.fpDue = true
	}
	if sp.Restart.ResetAfter != old && s.forgetting() {
		// The timer set when it became ready is for the old reset_after_s:
		// after a lengthening it would find the failures not yet due and
		// they would never be forgotten.
		e.setTimer(s.slot, TimerResetAfter, s.name, s.readySince.Add(sp.Restart.ResetAfter))
	}
}

// rearmIdle moves the idle timer of an idle service to the new
// idle_timeout_s, counted from when it became idle: the timer set then is
// for the old value, and would stop it too early or keep it too long. A
// timeout already past stops it at once.
func (e *Engine) rearmIdle(s *service) {
	at := s.idleSince.Add(s.spec.IdleTimeout)
	if at.After(e.now) {
		s.idleTimer, s.idleExpired = true, false
		e.setTimer(s.slot, TimerIdle, s.name, at)
		return
	}
	if s.idleTimer {
		s.idleTimer = false
		e.cancelTimer(s.slot, TimerIdle, s.name)
	}
	s.idleExpired = true
}
