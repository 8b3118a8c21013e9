package sim

import (
	"slices"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/manifest"
)

// transition follows a service's state from the last step to this one:
// what it reserved as it became unknown, whether its readiness came from
// a ready poll, and whether the stop it is in ends a clean run.
func (c *invariants) transition(s *engine.ServiceStatus) {
	prev, known := c.state[s.Name]
	if s.State != prev || !known {
		switch s.State {
		case "unknown":
			// Its first fingerprint is due afresh (a module enabled
			// again): the failures of an earlier one are past.
			c.memAtUnknown[s.Name] = c.specs[s.Name].ReservesHostMemory
			if known {
				delete(c.fpFailed, s.Name)
			}
		case "ready":
			c.viaReady[s.Name] = prev == "waiting-ready"
		case "stopping":
			c.cleanStop[s.Name] = prev == "ready" && c.viaReady[s.Name] && s.StopReason != "cleanup after failure"
		}
	}
	if s.State != "unknown" {
		delete(c.fpFailed, s.Name)
	}
	c.state[s.Name] = s.State
}

// slotsFull says every global op slot is taken: an op due now queues.
func (c *invariants) slotsFull(st *engine.Status) bool {
	limit := c.w.cfg.MaxConcurrentOps
	if limit <= 0 {
		limit = 8 // the engine's default
	}
	return st.OpsInFlight >= limit
}

// checkSlotPriority checks that a start or a stop waiting for an op slot
// goes ahead of the polls: no poll takes a slot in a step that began with
// a service waiting for one of those and ends with it still waiting.
func (c *invariants) checkSlotPriority(st *engine.Status) {
	clear(c.lifecycleNow)
	for i := range st.Services {
		s := &st.Services[i]
		_, retry := c.timers[timerOf{engine.TimerBackoff, s.Name}]
		if (s.State == "starting" || s.State == "stopping" && !retry) && s.OpInFlight == "" {
			c.lifecycleNow[s.Name] = true
		}
	}
	if c.polled != "" {
		for name := range c.lifecycleNow {
			if c.lifecycleQueued[name] {
				c.Failf("%s took an op slot while %s, %s, waited for one since an earlier step", c.polled, name,
					c.state[name])
			}
		}
	}
	c.polled = ""
	c.lifecycleQueued, c.lifecycleNow = c.lifecycleNow, c.lifecycleQueued
}

// checkWatched checks that svcrun keeps an eye on every service it may
// have to act on: a running daemon is never taken as stopped (so it is
// watched and charged, or still unknown with its fingerprint in flight,
// queued or pending as a retry), and every state that waits for news has
// its look in flight, queued for a slot, or pending as a timer.
func (c *invariants) checkWatched(st *engine.Status, s *engine.ServiceStatus) {
	name := s.Name
	looking := s.OpInFlight != "" || c.slotsFull(st)
	pending := func(k engine.TimerKind) bool {
		_, ok := c.timers[timerOf{k, name}]
		return ok
	}
	switch s.State {
	case "unknown":
		if !looking && !pending(engine.TimerFingerprint) {
			c.Failf("%s is unknown, and no fingerprint of it runs, queues or is pending", name)
		}
	case "stopped":
		if c.w.Exec.Running(name) && c.blind[name] == 0 && c.configured[name] {
			c.Failf("the daemon of %s runs, but svcrun has it stopped: unwatched and not charged", name)
		}
		withheld := !s.FingerprintedAt.IsZero() && !s.Healthy && s.Lifecycle != manifest.Manual
		if s.Enabled && (s.Lifecycle == manifest.Manual || withheld) && !looking && !pending(engine.TimerFingerprint) {
			c.Failf("%s is stopped (%s), and no fingerprint of it runs, queues or is pending", name, s.Lifecycle)
		}
	case "starting", "stopping":
		// A stop svcrun could not prepare waits for its retry.
		if !looking && !(s.State == "stopping" && pending(engine.TimerBackoff)) {
			c.Failf("%s is %s, and no op of it runs or queues", name, s.State)
		}
	case "waiting-ready":
		if !looking && !pending(engine.TimerReadyPoll) {
			c.Failf("%s waits for readiness, and no ready poll of it runs, queues or is pending", name)
		}
	case "ready":
		if s.Frozen || looking {
			break // the polls of a frozen service pause
		}
		if !pending(engine.TimerFingerprint) {
			c.Failf("%s is ready, and no fingerprint of it is pending", name)
		}
		if s.Lifecycle != manifest.Manual && !pending(engine.TimerStatus) {
			c.Failf("%s is ready, and no status of it is pending", name)
		}
	}
	// An idle timer counts the idle_timeout_s the manifest says now: a
	// reload shortening it re-arms it.
	if at, ok := c.timers[timerOf{engine.TimerIdle, name}]; ok && at.Sub(st.Now) > c.specs[name].IdleTimeout {
		c.Failf("the idle timer of %s is due in %v, beyond its idle_timeout_s of %v", name, at.Sub(st.Now),
			c.specs[name].IdleTimeout)
	}
	if s.Frozen {
		if sp := c.specs[name]; !sp.FreezeOK || sp.Lifecycle != manifest.OnDemand {
			c.Failf("%s is frozen, though its manifest (%s, freeze_ok=%v) lets nothing thaw it when idle", name,
				sp.Lifecycle, sp.FreezeOK)
		}
	}
}

// checkStarts checks, after every step, that no wanted service sits
// stopped while nothing holds its start back: no backoff, no unhealthy
// mark or fingerprint, no op of its own, its memory fits and no
// fingerprint it must wait for is due (a start that reserves memory waits
// for the first fingerprint of every other service that reserved memory
// as it became unknown, unless that fingerprint failed). Another
// service's op never delays it, beyond the global op cap (a service
// queued for a slot for another op stays stopped until it gets one).
func (c *invariants) checkStarts(st *engine.Status) {
	if c.slotsFull(st) {
		return
	}
	for i := range st.Services {
		s := &st.Services[i]
		wanted := s.Lifecycle == manifest.Always || s.Lifecycle == manifest.OnDemand && s.Refs+s.Waiting > 0
		withheld := !s.FingerprintedAt.IsZero() && !s.Healthy
		// A backoff ending now ends with its timer, which may be due
		// after the event stepped at this instant.
		_, backoffTimer := c.timers[timerOf{engine.TimerBackoff, s.Name}]
		backoff := s.BackoffUntil.After(st.Now) || backoffTimer
		if s.State != "stopped" || !wanted || !s.Enabled || s.Unhealthy || withheld || s.OpInFlight != "" || backoff {
			continue
		}
		if c.specs[s.Name].ReservesHostMemory {
			if st.MemoryUsedGB+s.MemGB > st.MemoryBudgetGB+1e-9 {
				continue // waits for memory, or makes room: checkSettled's
			}
			if c.holdsMemoryStarts(st, s.Name) {
				continue
			}
		}
		var ops []string
		for _, o := range st.Services {
			if o.OpInFlight != "" {
				ops = append(ops, o.Name+":"+o.OpInFlight)
			}
		}
		c.Failf("%s is wanted (%d lease(s), %s) and stopped, though nothing holds its start back (ops in flight: "+
			"%v)", s.Name, s.Refs+s.Waiting, s.Lifecycle, ops)
	}
}

// holdsMemoryStarts says a service other than name holds back the starts
// that reserve memory: unknown, reserving memory as it became so, and
// its first fingerprint not failed.
func (c *invariants) holdsMemoryStarts(st *engine.Status, name string) bool {
	for i := range st.Services {
		o := &st.Services[i]
		if o.Name != name && o.State == "unknown" && c.memAtUnknown[o.Name] && !c.fpFailed[o.Name] {
			return true
		}
	}
	return false
}

// checkTokens checks that the tokens reserved on the service that offers
// a pool now are those of the admitted leases that use it: tokens belong
// to the service that granted them, not to the pool's name.
func (c *invariants) checkTokens(st *engine.Status) {
	for _, p := range st.Pools {
		var want int64
		for _, l := range st.Leases {
			if l.Admitted && slices.Contains(l.Services, p.Service) {
				want += l.Pools[p.Name]
			}
		}
		if p.Reserved != want {
			c.Failf("pool %s of %s: %d token(s) reserved, but its admitted leases hold %d", p.Name, p.Service, p.Reserved, want)
		}
	}
}

// checkCleanRun checks s once a stop that ends a clean run of it ended:
// failures separated by clean runs are not consecutive, so it keeps none
// (but an unhealthy mark, which only a reset clears).
func (c *invariants) checkCleanRun(s engine.ServiceStatus) {
	if s.Failures > 0 && !s.Unhealthy {
		c.Failf("%s stopped gracefully after a clean run, and keeps %d failure(s)", s.Name, s.Failures)
	}
}

// reloaded follows the modules a reload enables: the services of a module
// enabled again begin their first fingerprint afresh, those with no op in
// flight (which goes on) unknown again, a failed fingerprint before it
// forgotten.
func (c *invariants) reloaded(mods []engine.ModuleSpec) {
	was := c.modEnabled
	c.modEnabled = map[string]bool{}
	for _, m := range mods {
		c.modEnabled[m.Module.Name] = m.Enabled
		if !m.Enabled || was[m.Module.Name] {
			continue
		}
		for _, sp := range m.Module.Services {
			busy := false
			for _, o := range c.ops {
				busy = busy || !o.Probe && o.String() == sp.FullName()
			}
			if !busy {
				delete(c.fpFailed, sp.FullName())
			}
		}
	}
}
