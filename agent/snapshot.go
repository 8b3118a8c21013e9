package agent

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oarbank/svcrun/engine"
)

// publishEvery is how often, at most, the loop builds the status snapshot
// when no reader asks for one: it bounds how far behind the last stored
// step status and metrics are while the loop waits for a stalled disk.
const publishEvery = time.Second

// refresh asks the loop for a snapshot of its last stored step: a reader
// found the published one older.
type refresh struct{}

func (refresh) EventName() string { return "refresh" }

// snapshots is the publication of the status snapshot. Building one copies
// every service, probe, lease and pool (O(services)), so the loop builds
// it after a stored step only when a reader has asked since the last one,
// when the step answered a caller (an acquire, renew, release or reap), or
// once a publishEvery otherwise; never at every step: at 1,000 services
// that was a third of svcrun's idle CPU and made boot quadratic. Ops'
// steps (status polls, fingerprints, starts) answer nobody.
//
// A reader that finds the published snapshot older than the last stored
// step asks for a new one (wanted, and a refresh event in case the loop
// is idle) and waits for the next publication, unless a loop write has
// waited slowWrite: then it answers at once from the last published one,
// which has every step a caller was answered for, and the others up to a
// publishEvery behind. Only stored steps are published, so no reader sees
// a step that a crash could lose.
type snapshots struct {
	cur atomic.Pointer[Status]
	// stored is the number of steps stored (Agent.steps once its write
	// is done); built counts the snapshots built. Written by the loop.
	stored atomic.Uint64
	built  atomic.Uint64
	// wanted is set by a reader waiting for a publication.
	wanted atomic.Bool
	// last is when the loop last built one; answered is set when the
	// step in progress answered a caller (both owned by the loop).
	last     time.Time
	answered bool

	mu sync.Mutex
	// next is closed at the next publication; stalled once a loop write
	// has waited slowWrite (stalling says so until it ends). Both are
	// made on first use: the zero snapshots is ready.
	next     chan struct{}
	stalled  chan struct{}
	stalling bool
	// writes numbers the loop's writes; writing is the one in progress,
	// 0 when none, so that a late slow-write timer marks no later write.
	writes  uint64
	writing uint64
	// asked is set while a refresh event is posted and not yet taken.
	asked bool
}

func (s *snapshots) nextLocked() chan struct{} {
	if s.next == nil {
		s.next = make(chan struct{})
	}
	return s.next
}

func (s *snapshots) stalledLocked() chan struct{} {
	if s.stalled == nil {
		s.stalled = make(chan struct{})
	}
	return s.stalled
}

// store publishes st and wakes the readers waiting for it.
func (s *snapshots) store(st *Status) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur.Store(st)
	s.wanted.Store(false)
	if s.next != nil {
		close(s.next)
		s.next = nil
	}
}

// writeBegins marks a loop write in progress and returns its number.
func (s *snapshots) writeBegins() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	s.writing = s.writes
	return s.writing
}

// writeSlow marks write n, if still in progress, as stalled: readers
// answer from the published snapshot until it ends.
func (s *snapshots) writeSlow(n uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.writing != n || s.stalling {
		return
	}
	s.stalling = true
	close(s.stalledLocked())
}

// writeEnds marks write n done.
func (s *snapshots) writeEnds(n uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.writing == n {
		s.writing = 0
	}
	if s.stalling {
		s.stalling = false
		s.stalled = nil
	}
}

// publishStatus publishes the snapshot status and metrics answer from. It
// runs on the loop once a step is stored, never in the middle of one.
func (a *Agent) publishStatus(now time.Time) {
	a.snaps.built.Add(1)
	a.snaps.last = now
	st := &Status{
		Status: a.engine.Status(), NodeID: a.cfg.NodeID, Platform: a.cfg.Platform, Config: a.cfg.File,
		DataDir: a.cfg.DataDir, Socket: a.cfg.Socket, Sandbox: string(a.cfg.Sandbox),
		StartedAt: a.started, Steps: a.steps,
		Containers:  "process groups (cgroup containers disabled)",
		SandboxHost: a.sandboxHost, SandboxMissing: a.sandboxMissing,
	}
	if a.containers != nil {
		st.Containers = a.containers.Support().String()
	}
	a.snaps.store(st)
}

// stepStored marks the current step stored; on the loop, before its
// answers go out, so that a caller who hears of its step and asks for
// status waits for a snapshot with it.
func (a *Agent) stepStored() { a.snaps.stored.Store(a.steps) }

// maybePublish publishes the snapshot after a stored step if a reader
// wants it, the step answered a caller, or the last one is publishEvery
// old. After the step's answers, so that building it does not delay them:
// a caller who asks for status at once waits for it.
func (a *Agent) maybePublish(now time.Time) {
	answered := a.snaps.answered
	a.snaps.answered = false
	if answered || a.snaps.wanted.Load() || a.snaps.cur.Load() == nil || now.Sub(a.snaps.last) >= publishEvery {
		a.publishStatus(now)
	}
}

// refreshed takes a reader's refresh event, between steps: every step is
// stored, and the snapshot is built if a reader still waits (a step since
// it asked may have published it already).
func (a *Agent) refreshed() {
	a.snaps.mu.Lock()
	a.snaps.asked = false
	a.snaps.mu.Unlock()
	if c := a.snaps.cur.Load(); c == nil || (a.snaps.wanted.Load() && c.Steps < a.steps) {
		a.publishStatus(a.sched.Now())
	}
}

// current returns a snapshot with every step stored when it is called, as
// soon as the loop has published one; while a loop write has waited
// slowWrite, the last published one at once (before the boot step is
// stored there is none: it waits).
func (a *Agent) current(ctx context.Context) (*Status, error) {
	s := &a.snaps
	target := s.stored.Load()
	for {
		s.mu.Lock()
		c := s.cur.Load()
		if c != nil && (c.Steps >= target || s.stalling) {
			s.mu.Unlock()
			return c, nil
		}
		s.wanted.Store(true)
		next, stalled, post := s.nextLocked(), s.stalledLocked(), !s.asked
		s.asked = true
		s.mu.Unlock()
		if post {
			if err := a.post(refresh{}); err != nil {
				if c != nil {
					return c, nil
				}
				return nil, err
			}
		}
		select {
		case <-next:
		case <-stalled:
		case <-a.quit:
			// The loop takes no refresh any more; shutdown published its
			// last stored step.
			if c := s.cur.Load(); c != nil {
				return c, nil
			}
			return nil, ErrStopping
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// service finds service t in the published snapshot, with no copy of it
// (Agent.Status copies every list for its caller).
func (st *Status) service(t engine.Target) (engine.ServiceStatus, bool) {
	i := slices.IndexFunc(st.Services, func(s engine.ServiceStatus) bool { return s.Target == t })
	if i < 0 {
		return engine.ServiceStatus{}, false
	}
	return st.Services[i], true
}

// serviceNames lists the snapshot's services, for a NotFoundError.
func (st *Status) serviceNames() []string {
	var names []string
	for _, s := range st.Services {
		names = append(names, s.Name)
	}
	return names
}

// lease finds lease id in the published snapshot, with no copy of it.
func (st *Status) lease(id engine.LeaseID) (engine.LeaseStatus, bool) {
	i := slices.IndexFunc(st.Leases, func(l engine.LeaseStatus) bool { return l.ID == id })
	if i < 0 {
		return engine.LeaseStatus{}, false
	}
	return st.Leases[i], true
}
