package engine

import (
	"maps"
	"slices"
	"time"

	"github.com/oarbank/svcrun/manifest"
)

// Status is a read-only view of the engine, for `svcrun status`, the API
// and invariant checks. It is a copy: later steps do not change it.
type Status struct {
	Now            time.Time
	MemoryBudgetGB float64
	MemoryUsedGB   float64
	OpsInFlight    int
	Services       []ServiceStatus
	Probes         []ProbeStatus
	Leases         []LeaseStatus
	Pools          []PoolStatus
	Skipped        []string // not loaded on this platform
	LiveAttempts   []string
}

// ServiceStatus is one service as the engine sees it.
type ServiceStatus struct {
	Name         string
	Module       string
	Target       Target `json:"-"` // Name, for the driver's effects
	Enabled      bool
	Lifecycle    manifest.Lifecycle
	State        string // unknown, stopped, starting, waiting-ready, ready, stopping
	StateSince   time.Time
	Ready        bool // usable by leases now
	Refs         int
	Waiting      int
	Failures     int
	Unhealthy    bool
	Reason       string
	BackoffUntil time.Time
	// PrepareRetry: the latest op svcrun could not prepare (a fault of
	// the node) is tried again then; none waits once it is past.
	PrepareRetry time.Time
	Frozen       bool
	StopReason   string // why the current stop, while stopping
	MemGB        float64
	Charged      bool // counted against the memory budget
	Pools        map[string]int64
	Capabilities []string
	OpInFlight   string
	// Contained: its process container holds a process outside its ops,
	// so its death is an event and status is only a slow safety net.
	Contained bool
	// From the latest fingerprint that answered (a failed fingerprint op
	// changes nothing): its health, message and attrs, and when it came,
	// zero before any. Healthy is the service's own word, not Unhealthy's
	// count of failures: a service may run and say it cannot serve.
	Healthy         bool
	Message         string
	Attrs           map[string]any
	FingerprintedAt time.Time
}

// ProbeStatus is one probe.
type ProbeStatus struct {
	Name       string
	Capability string
	Enabled    bool
	Reported   bool
	Healthy    bool
	Message    string
	Attrs      map[string]any // of the last run; none when it failed
	CheckedAt  time.Time      // when the last result came; zero before any
}

// LeaseStatus is one lease, admitted or waiting.
type LeaseStatus struct {
	ID       LeaseID
	Job      string
	Attempt  string
	Admitted bool
	Services []string
	Requirements
	Expires time.Time
	// AskedAt is when the acquire came and WaitUntil its deadline: while
	// it waits (zero once admitted, and for leases restored at boot).
	AskedAt   time.Time
	WaitUntil time.Time
	// WaitingFor is what it waits for, in the words of the rejection
	// it gets if its wait ends first; "" once admitted.
	WaitingFor string
}

// PoolStatus is one pool's capacity and reservations.
type PoolStatus struct {
	Name    string
	Service string
	// Capacity is what can be reserved now: the offer while the service is
	// usable (started, ready, healthy), else 0.
	Capacity int64
	// Offered is the offer of the service's latest healthy fingerprint,
	// also while it is stopped (an admission then starts it); 0 before
	// any. A request for more is rejected once the service runs.
	Offered  int64
	Reserved int64
}

// Status returns the engine's current view.
func (e *Engine) Status() Status {
	// Sized at once, nil when empty as before: growing them was a third
	// of a snapshot's allocations at 1,000 services, and most of the cost
	// of the view the simulator's invariants take after every step.
	st := Status{Now: e.now, MemoryBudgetGB: e.cfg.MemoryBudgetGB, MemoryUsedGB: e.memUsed, OpsInFlight: e.ops.len(),
		Services: sized[ServiceStatus](len(e.svcOrder)), Probes: sized[ProbeStatus](len(e.prbOrder)),
		Leases: sized[LeaseStatus](len(e.leases)), Pools: sized[PoolStatus](len(e.pools)),
		LiveAttempts: sized[string](len(e.attempts))}
	for _, s := range e.svcOrder {
		st.Services = append(st.Services, serviceStatus(s))
	}
	for _, p := range e.prbOrder {
		st.Probes = append(st.Probes, probeStatus(p))
	}
	ids := make([]LeaseID, 0, len(e.leases))
	for id := range e.leases {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		l := e.leases[id]
		ls := LeaseStatus{ID: l.id, Job: l.job, Attempt: l.attempt, Admitted: l.admitted, Requirements: l.req,
			Expires: l.expires}
		if !l.admitted {
			ls.AskedAt, ls.WaitUntil, ls.WaitingFor = l.askedAt, l.waitUntil, e.waitingReason(l)
		}
		ls.Services = sized[string](len(l.services))
		for _, s := range l.services {
			ls.Services = append(ls.Services, s.name)
		}
		st.Leases = append(st.Leases, ls)
	}
	for _, name := range e.poolNames() {
		s := e.pools[name]
		var offered int64
		if s.fpKnown && s.fpHealthy {
			offered = s.pools[name]
		}
		st.Pools = append(st.Pools, PoolStatus{Name: name, Service: s.name, Capacity: e.capacity(name), Offered: offered,
			Reserved: s.reserved[name]})
	}
	st.Skipped = append(st.Skipped, e.skipped...)
	for a := range e.attempts {
		st.LiveAttempts = append(st.LiveAttempts, a)
	}
	slices.Sort(st.LiveAttempts)
	return st
}

// sized is an empty slice with room for n, or nil for none, as appending
// nothing to nil leaves it.
func sized[T any](n int) []T {
	if n == 0 {
		return nil
	}
	return make([]T, 0, n)
}

// OpsInFlight is Status().OpsInFlight without the rest of Status: svcrun's
// shutdown asks it after every step it drains.
func (e *Engine) OpsInFlight() int { return e.ops.len() }

// StatusOf is the part of Status that a lease depends on: the named
// services and the probes establishing the named capabilities, in Status's
// order. It costs no copy of the other services, so the agent can answer an
// admission with it at every acquire.
func (e *Engine) StatusOf(services, capabilities []string) ([]ServiceStatus, []ProbeStatus) {
	var svcs []ServiceStatus
	var prbs []ProbeStatus
	for _, s := range e.svcOrder {
		if slices.Contains(services, s.name) {
			svcs = append(svcs, serviceStatus(s))
		}
	}
	for _, p := range e.prbOrder {
		if slices.Contains(capabilities, p.spec.Name) {
			prbs = append(prbs, probeStatus(p))
		}
	}
	return svcs, prbs
}

func serviceStatus(s *service) ServiceStatus {
	ss := ServiceStatus{
		Name: s.name, Module: s.mod.name, Target: s.target, Enabled: s.enabled(), Lifecycle: s.spec.Lifecycle,
		State: s.state.String(), StateSince: s.stateSince,
		Ready: s.usable(), Refs: s.refs, Waiting: s.waiting, Failures: s.failures, Unhealthy: s.unhealthy,
		Reason: s.reason, BackoffUntil: s.backoffUntil, PrepareRetry: s.prepUntil, Frozen: s.frozen, MemGB: s.memGB,
		Contained: s.contained,
		Charged:   s.spec.ReservesHostMemory && s.state.charged(), Capabilities: s.spec.Capabilities,
		Healthy: s.fpHealthy, Message: s.fpMessage, Attrs: maps.Clone(s.fpAttrs), FingerprintedAt: s.fpAt,
	}
	if s.state == sStopping {
		ss.StopReason = s.stopReason
	}
	if len(s.pools) > 0 {
		ss.Pools = maps.Clone(s.pools)
	}
	if s.op != nil {
		ss.OpInFlight = string(s.op.op)
	}
	return ss
}

func probeStatus(p *probe) ProbeStatus {
	return ProbeStatus{Name: p.name, Capability: p.spec.Name, Enabled: p.mod.enabled, Reported: p.reported,
		Healthy: p.healthy, Message: p.message, Attrs: maps.Clone(p.attrs), CheckedAt: p.checked}
}
