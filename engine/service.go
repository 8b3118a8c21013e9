package engine

import (
	"fmt"
	"maps"
	"time"

	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/protocol"
)

// svcState is where a service is in its lifecycle, as the engine last knew.
type svcState uint8

const (
	sUnknown   svcState = iota // not fingerprinted since load: adoption pending
	sStopped                   // not running
	sStarting                  // start owed or in flight
	sWaitReady                 // running, polling ready
	sReady                     // running and ready: usable
	sStopping                  // stop owed or in flight
)

var stateNames = [...]string{"unknown", "stopped", "starting", "waiting-ready", "ready", "stopping"}

func (s svcState) String() string { return stateNames[s] }

// charged reports whether a service in this state holds its memory
// reservation.
func (s svcState) charged() bool { return s >= sStarting }

type service struct {
	actorBase
	spec *manifest.Service

	state      svcState
	stateSince time.Time // when it took its state

	refs, waiting int       // admitted and waiting leases that need it
	idleTimer     bool      // the idle timer is pending
	idleExpired   bool      // idle_timeout_s passed with no user
	idleSince     time.Time // when the idle timer was armed: the stop note and a reload count from it
	stopReason    string
	// cleanStop: the stop in progress began while the service was ready
	// and not for a failure; ended gracefully, it forgets the failures.
	cleanStop bool
	lastUsed  time.Time

	failures     int
	unhealthy    bool
	reason       string
	backoffUntil time.Time
	backoffTimer bool // TimerBackoff is pending

	frozen bool
	// thawCheck: thawed while ready, and no status since. A daemon may die
	// silently while frozen, so no lease is admitted on it until a status
	// says it still runs and is ready.
	thawCheck     bool
	startDeadline time.Time // zero when not starting
	// emptiedInOp: the process container emptied while the start op, or
	// a fingerprint, ran. A ready saying not running is then a crash, not
	// a daemon slow to come up; a fingerprint saying running looked
	// before the daemon died.
	emptiedInOp bool
	readySince  time.Time
	adopting    bool
	// contained: its process container holds a process outside its ops
	// (ContainerPopulated, until ContainerEmptied), so its death is an
	// event and status polls are a safety net.
	contained bool
	// occupied: a process of its container ended while it was stopped
	// (MemberExited), so others still live there, which no op of it runs:
	// it is stopped (emptied) before any start (rule-occupied). Cleared
	// by the emptying and by a stop.
	occupied bool

	fpDue, statusDue, readyDue, reapDue bool
	readyTimer                          bool
	// prepFailures counts the consecutive ops of the service that svcrun
	// could not prepare (FailPrepare), a fault of the node: its start or
	// stop is tried again at prepUntil, which counts no failure of it;
	// prepWhy is the latest reason, for the notes and the waiting leases.
	prepFailures int
	prepUntil    time.Time
	prepWhy      string

	// fpFailures counts the failed fingerprints of a service still
	// unknown: its daemon may run, so the fingerprint is retried, with the
	// backoff of a failure, until one answers.
	fpFailures int
	fpRan      time.Time // when the latest fingerprint op began

	// From the latest fingerprint.
	fpKnown bool
	// fpRunning: the latest fingerprint was taken in this run of the
	// daemon and says it runs. Only such an offer is the whole offer of a
	// pool: a stopped service may offer nothing until it is started.
	fpRunning bool
	fpHealthy bool
	fpMessage string
	fpAttrs   map[string]any
	fpAt      time.Time // when it came; zero before any
	pools     map[string]int64
	reserved  map[string]int64 // tokens of its pools granted to admitted leases
	memGB     float64
	chargedGB float64 // what memUsed holds for this service
	// memUnknown: it reserved host memory as it became unknown (see
	// holdsStarts).
	memUnknown bool
	memNoted   bool

	// withheldNoted: the start withheld by the latest (unhealthy)
	// fingerprint was noted.
	withheldNoted bool

	reap    *reapSnap
	orphans map[string]time.Time // object id -> snapshot of the round that first found it an orphan
	destroy []destroyReq
	// reapWhy says why the next periodic reap round lists the service
	// (see reapMark); "" when its last listing left nothing to reap.
	reapWhy string
	// forgotten: gone from the engine's services (see forget).
	forgotten bool
}

func (s *service) idle() bool { return s.refs == 0 && s.waiting == 0 }

func (s *service) enabled() bool { return s.mod.enabled && !s.removed }

// gone says the service leaves once stopped and unused: removed from its
// manifest, or its module from the configuration.
func (s *service) gone() bool { return s.removed || s.mod.removed }

// disabledReason is why a service that is not enabled is stopped.
func (s *service) disabledReason() string {
	switch {
	case s.removed:
		return "removed from its module's manifest"
	case s.mod.stopReason != "":
		return s.mod.stopReason
	}
	return "module disabled"
}

// wantUp says the service should be running.
func (s *service) wantUp() bool {
	if !s.enabled() || s.unhealthy {
		return false
	}
	switch s.spec.Lifecycle {
	case manifest.Always:
		return true
	case manifest.OnDemand:
		return !s.idle()
	}
	return false
}

// noNeedReason says why a service that is not wanted up is not.
func (s *service) noNeedReason() string {
	switch {
	case !s.enabled():
		return s.disabledReason()
	case s.unhealthy:
		return "unhealthy"
	}
	return "no lease needs it any more"
}

// unhealthyReason says why an unhealthy service serves no lease.
func (s *service) unhealthyReason() string {
	return fmt.Sprintf("service %s is unhealthy after %d consecutive failures (last: %s)", s.name, s.failures, s.reason)
}

// usable says the service is ready and offers its capabilities and
// pools. A frozen one is usable: its offer stands (status, over-offer
// rejections), but admitting a lease on it needs a check first.
func (s *service) usable() bool {
	return s.enabled() && !s.unhealthy && s.state == sReady && (!s.fpKnown || s.fpHealthy)
}

// admissible says a lease may be admitted on this service now.
func (s *service) admissible() bool { return s.usable() && !s.frozen && !s.thawCheck }

// checking says the service is usable but an admission on it waits for
// the status that follows its thaw.
func (s *service) checking() bool { return s.usable() && (s.frozen || s.thawCheck) }

// startWithheld says the service is stopped and its latest fingerprint
// says unhealthy: it is not started (a start would fail, or hand leases a
// service that says it is not usable, and count failures for it) and is
// fingerprinted every period until it says healthy. Manual services are
// never started anyway.
func (s *service) startWithheld() bool {
	return s.state == sStopped && s.spec.Lifecycle != manifest.Manual && s.fpKnown && !s.fpHealthy
}

// fpWatched says the service is watched by fingerprint: every
// fingerprint_period_s, at reloads of its module and at doctor events. A
// frozen service's polls pause.
func (s *service) fpWatched() bool {
	switch {
	case s.frozen:
		return false
	case s.state == sReady, s.state == sWaitReady:
		return true
	case s.state == sStopped:
		return s.enabled() && (s.spec.Lifecycle == manifest.Manual || s.startWithheld())
	}
	return false
}

// freezable says the service may be frozen when idle.
func (s *service) freezable() bool {
	return s.spec.FreezeOK && s.spec.Lifecycle == manifest.OnDemand
}

// holdsStarts says the service reserves host memory and its first
// fingerprint since load or enable is due or running: it may run and hold
// memory, so every start that reserves memory waits for it (see
// maybeStart); no other start does. One whose fingerprint failed holds
// nothing back while it is retried: a fingerprint that never answers must
// not stop the node. memUnknown is what it reserved as it became unknown,
// so that a reload changing reserves_host_memory meanwhile cannot make the
// count drift.
func (s *service) holdsStarts() bool { return s.state == sUnknown && s.fpFailures == 0 && s.memUnknown }

// heldChanged keeps the count of services holding back starts.
func (e *Engine) heldChanged(before, after bool) {
	switch {
	case after && !before:
		e.memUnknown++
	case before && !after:
		if e.memUnknown--; e.memUnknown == 0 {
			// Every memory is counted: the starts held back may go.
			for _, x := range e.svcOrder {
				if x.state == sStopped && x.spec.ReservesHostMemory {
					e.markDirty(x)
				}
			}
		}
	}
}

// setState moves the service and keeps the memory account.
func (s *service) setState(e *Engine, st svcState) {
	held := s.holdsStarts()
	// A new state ends a fingerprint retry; entering unknown begins a
	// fingerprint first afresh (a module enabled again).
	s.fpFailures = 0
	if st == sUnknown && s.state != sUnknown {
		s.memUnknown = s.spec.ReservesHostMemory
	}
	switch st {
	case sUnknown, sStopped, sStarting:
		s.fpRunning = false // a new run of the daemon, if any, is not fingerprinted yet
		s.emptiedInOp = false
	}
	// The amount charged is remembered, so that a reload changing
	// reserves_host_memory cannot make the account drift.
	switch {
	case s.state.charged() && !st.charged():
		e.memUsed -= s.chargedGB
		s.chargedGB = 0
		e.unblockMemory()
	case !s.state.charged() && st.charged() && s.spec.ReservesHostMemory:
		s.chargedGB = s.memGB
		e.memUsed += s.chargedGB
	}
	if st != sReady {
		s.thawCheck = false // the check is of a ready service only
	}
	if st == sReady && s.state != sReady {
		// A ready service may be an idle yieldable one: a start waiting
		// for memory can now make it yield (adopted, its lease gone while
		// it started, or ready again after a status said not ready).
		e.unblockMemory()
	}
	if st != s.state {
		s.stateSince = e.now
	}
	if st != sReady {
		s.readySince = time.Time{} // readiness is continuous or not at all
	}
	s.state = st
	e.heldChanged(held, s.holdsStarts())
}

func (s *service) setMem(e *Engine, gb float64) {
	if s.state.charged() {
		charge := 0.0
		if s.spec.ReservesHostMemory {
			charge = gb
		}
		if charge < s.chargedGB {
			// Room was freed: starts waiting for memory may fit now.
			e.unblockMemory()
		}
		e.memUsed += charge - s.chargedGB
		s.chargedGB = charge
	}
	s.memGB = gb
}

// reconcile starts the one op the service needs most, if any.
func (s *service) reconcile(e *Engine) {
	if s.state == sStarting && s.op == nil && !s.wantUp() {
		// Its start still queues for an op slot: nothing needs it any
		// more, so it never runs, and its memory is free at once.
		e.leaveSlotQueue(s)
		s.setState(e, sStopped)
		e.note(s.name, "start dropped before it ran: %s", s.noNeedReason())
		e.watchManual(s)
	}
	if s.op != nil || s.waitSlot && s.waitFirst {
		return
	}
	// One queued for a slot for a poll is reconciled on: what it needs
	// now may be a lifecycle op (it crashed while its status waited),
	// which runOp moves up to the lifecycle ops' place in the queue.
	if !s.enabled() && (s.state == sReady || s.state == sWaitReady || s.state == sStarting) {
		switch {
		case s.spec.Lifecycle != manifest.Manual:
			e.beginStop(s, s.disabledReason())
		case s.gone():
			// svcrun lets go of it: nothing of it is configured any more.
			s.setState(e, sStopped)
		}
		// A manual service of a disabled module runs on (svcrun never
		// stops it), so it stays charged and fingerprinted until it stops.
	}
	switch s.state {
	case sUnknown:
		// Fingerprinted even when disabled or removed meanwhile: a
		// service found running is then stopped, and the count of
		// services not yet fingerprinted, which holds back starts, drops.
		if s.fpDue {
			e.serviceOp(s, protocol.OpFingerprint, "")
		}
	case sStopped:
		if s.gone() && s.idle() {
			e.forget(s)
			return
		}
		if (s.spec.Lifecycle == manifest.Manual || s.startWithheld()) && s.fpDue && s.enabled() {
			e.serviceOp(s, protocol.OpFingerprint, "")
			return
		}
		e.maybeStart(s)
	case sStarting:
		e.serviceOp(s, protocol.OpStart, "")
	case sStopping:
		if e.waitRetry(s, s.prepUntil) {
			return // its stop could not be prepared: the daemon runs on
		}
		if s.frozen {
			e.thaw(s)
		}
		e.serviceOp(s, protocol.OpStop, "")
	case sWaitReady:
		if e.idleStop(s) {
			return
		}
		if s.readyDue {
			e.serviceOp(s, protocol.OpReady, "")
		}
	case sReady:
		if e.idleStop(s) {
			return
		}
		if !s.idle() {
			// A lease needs it: thawed, and checked before it is admitted,
			// by a status, or the fingerprint of a manual service, which
			// gets no status.
			e.thaw(s)
			switch {
			case !s.thawCheck || s.prepUntil.After(e.now):
				// Checked, or its check waits for the retry of one
				// svcrun could not prepare: no busy loop on a full disk.
			case s.spec.Lifecycle == manifest.Manual:
				s.fpDue = true
			default:
				s.statusDue = true
			}
		}
		if s.frozen && !s.reapDue && len(s.destroy) == 0 {
			return // watch polls pause while frozen; reaping thaws it
		}
		switch {
		case s.fpDue:
			e.serviceOp(s, protocol.OpFingerprint, "")
		case s.statusDue && s.spec.Lifecycle != manifest.Manual:
			e.serviceOp(s, protocol.OpStatus, "")
		case e.nextDestroy(s):
			e.serviceOp(s, protocol.OpDestroy, "")
		case s.reapDue:
			e.serviceOp(s, protocol.OpListOwned, "")
		case s.idle() && s.freezable():
			s.frozen = true
			e.emit(Freeze{Service: s.target})
			e.cancelTimer(s.slot, TimerStatus, s.name)
			e.cancelTimer(s.slot, TimerFingerprint, s.name)
			s.statusDue, s.fpDue = false, false
		}
	}
}

// nextDestroy drops queued destroys whose attempt became live again since
// the listing, and reports whether one is left to run.
func (e *Engine) nextDestroy(s *service) bool {
	for len(s.destroy) > 0 && e.attempts[s.destroy[0].attempt] > 0 {
		e.note(s.name, "kept %s: attempt %s is live again", s.destroy[0].id, s.destroy[0].attempt)
		e.reapKeptLive(s, s.destroy[0].id)
		delete(s.orphans, s.destroy[0].id)
		s.destroy = s.destroy[1:]
	}
	return len(s.destroy) > 0
}

// idleStop manages the idle timer of a running on_demand service and
// stops it when idle long enough or asked to yield. It reports whether a
// stop began.
func (e *Engine) idleStop(s *service) bool {
	if s.spec.Lifecycle != manifest.OnDemand {
		return false
	}
	if !s.idle() {
		if s.idleTimer {
			s.idleTimer = false
			e.cancelTimer(s.slot, TimerIdle, s.name)
		}
		s.idleExpired = false
		return false
	}
	if s.idleExpired {
		// How long it was idle, not its idle_timeout_s: a reload may have
		// changed that since. In milliseconds: a real timer fires a little
		// late, and nanoseconds of it would only be noise in the log.
		e.beginStop(s, fmt.Sprintf("idle for %v", e.now.Sub(s.idleSince).Truncate(time.Millisecond)))
		e.reconcileNow(s)
		return true
	}
	if !s.idleTimer {
		s.idleTimer = true
		s.idleSince = e.now
		e.setTimer(s.slot, TimerIdle, s.name, e.now.Add(s.spec.IdleTimeout))
	}
	return false
}

// reconcileNow reconciles s within the current reconcile: used after a
// state change that owes an op at once.
func (e *Engine) reconcileNow(s *service) {
	if s.op == nil && !s.waitSlot {
		s.reconcile(e)
	}
}

// maybeStart starts a stopped service that should be up, unless backoff or
// the memory budget says to wait.
func (e *Engine) maybeStart(s *service) {
	if !s.wantUp() {
		return
	}
	if s.spec.ReservesHostMemory && e.memUnknown > 0 {
		// A service starts once its own fingerprint has answered (it is
		// stopped, not unknown); one that reserves memory also waits for
		// those of the others that reserve it, which may run and hold it.
		// Nothing else waits for another service's op.
		return
	}
	if s.startWithheld() {
		if !s.withheldNoted {
			s.withheldNoted = true
			e.warn(s.name, "not started: its latest fingerprint reports unhealthy: %s", s.fpMessage)
		}
		return
	}
	// Also after an agent restart, which restores the backoff but not
	// its timer.
	if e.waitRetry(s, later(s.backoffUntil, s.prepUntil)) {
		return
	}
	if !e.memoryFor(s) {
		return
	}
	if s.occupied {
		e.warn(s.name, "its process container still holds processes no op runs: stopped first, so that no start joins them")
		s.setState(e, sReady)
		e.beginStop(s, "its process container is not empty")
		return
	}
	s.adopting = false
	s.setState(e, sStarting)
	e.note(s.name, "starting (%s)", e.startReason(s))
	e.serviceOp(s, protocol.OpStart, "")
}

func (e *Engine) startReason(s *service) string {
	switch {
	case s.spec.Lifecycle == manifest.Always:
		return "lifecycle always"
	case s.failures > 0:
		return fmt.Sprintf("retry after failure %d/%d", s.failures, s.spec.Restart.MaxFailures)
	default:
		return fmt.Sprintf("%d lease(s) need it", s.refs+s.waiting)
	}
}

// beginStop asks for a graceful stop of a running service. One that
// begins while it is ready (readySince is set only by becoming ready, so
// not for a daemon found running and stopped at once) ends a clean run,
// unless fail asks for it.
func (e *Engine) beginStop(s *service, reason string) {
	s.occupied = false // what the stop leaves in the container is killed
	s.cleanStop = !s.readySince.IsZero()
	e.leftRunning(s)
	s.stopReason = reason
	s.setState(e, sStopping)
	e.note(s.name, "stopping: %s", reason)
	e.markDirty(s)
}

func (e *Engine) cancelWatch(s *service) {
	e.cancelTimer(s.slot, TimerStatus, s.name)
	e.cancelTimer(s.slot, TimerFingerprint, s.name)
	e.cancelTimer(s.slot, TimerResetAfter, s.name)
	if s.readyTimer {
		s.readyTimer = false
		e.cancelTimer(s.slot, TimerReadyPoll, s.name)
	}
	e.cancelTimer(s.slot, TimerStartDeadline, s.name)
	s.statusDue, s.reapDue = false, false
	s.reap = nil
	s.destroy = s.destroy[:0]
}

// serviceOp runs op on s; object is destroy's argument.
func (e *Engine) serviceOp(s *service, op protocol.Op, object string) {
	// One op at a time per service: its opRun is reused, not allocated.
	r := &s.run
	*r = opRun{op: op, svc: s, stopReason: s.stopReason}
	var args []string
	timeout := protocol.DefaultTimeout(op)
	switch op {
	case protocol.OpStart:
		timeout = s.spec.StartTimeout
	case protocol.OpDestroy:
		d := s.destroy[0]
		r.object = d.id
		args = []string{d.id}
		if d.force {
			args = append(args, "--force")
		}
	case protocol.OpListOwned:
		r.snap = s.reap
	}
	if s.frozen {
		e.thaw(s)
	}
	if e.runOp(s, r, s.target, args, timeout) {
		s.op = r
		switch op {
		case protocol.OpStart:
			// start_timeout_s covers start and waiting for ready, from the
			// moment the op runs, not from when it queued for a slot.
			s.startDeadline = e.now.Add(s.spec.StartTimeout)
		case protocol.OpFingerprint:
			s.fpDue = false
			s.fpRan = e.now
		case protocol.OpStatus:
			s.statusDue = false
		case protocol.OpReady:
			s.readyDue = false
		case protocol.OpListOwned:
			s.reapDue = false
		case protocol.OpDestroy:
			s.destroy = s.destroy[1:]
		}
	}
}

func (e *Engine) thaw(s *service) {
	if !s.frozen {
		return
	}
	s.frozen = false
	e.emit(Thaw{Service: s.target})
	if s.state == sReady {
		s.thawCheck = true
		e.armWatch(s, false)
	}
}

// armWatch sets the status timer of a running service (a manual one gets
// no status) and its fingerprint's, or with fpNow has its fingerprint due
// at once.
func (e *Engine) armWatch(s *service, fpNow bool) {
	if s.spec.Lifecycle != manifest.Manual {
		e.setTimer(s.slot, TimerStatus, s.name, e.now.Add(e.statusPeriod(s)))
	}
	if fpNow {
		s.fpDue = true
		return
	}
	e.setTimer(s.slot, TimerFingerprint, s.name, e.now.Add(e.cfg.FingerprintPeriod))
}

// statusPeriod is the pause between two status ops of a ready service.
func (e *Engine) statusPeriod(s *service) time.Duration {
	if s.contained {
		return e.cfg.WatchedStatusPeriod
	}
	return e.cfg.StatusPeriod
}

// setContained records whether the service's container tells its death.
// A ready service's pending status timer moves to the new period, counted
// from now: the long one once a death is an event, the short one again
// once it is not (a daemon living outside its container).
func (e *Engine) setContained(s *service, contained bool) {
	if s.contained == contained {
		return
	}
	s.contained = contained
	statusRuns := s.op != nil && s.op.op == protocol.OpStatus
	// A manual service is only fingerprinted: it has no status timer.
	if s.state == sReady && s.spec.Lifecycle != manifest.Manual && !s.statusDue && !statusRuns {
		e.setTimer(s.slot, TimerStatus, s.name, e.now.Add(e.statusPeriod(s)))
	}
}

func (e *Engine) serviceTimer(s *service, k TimerKind) {
	switch k {
	case TimerIdle:
		s.idleTimer = false
		if s.idle() && (s.state == sReady || s.state == sWaitReady) {
			s.idleExpired = true
		}
	case TimerBackoff:
		s.backoffTimer = false // maybeStart checks the time
	case TimerReadyPoll:
		s.readyTimer = false
		if s.state == sWaitReady {
			s.readyDue = true
		}
	case TimerStartDeadline:
		if s.state == sWaitReady && !s.startDeadline.IsZero() && !e.now.Before(s.startDeadline) {
			if s.prepFailures > 0 {
				// Its latest ready could not be prepared: whether it is
				// ready is unknown through no fault of the module, so
				// the next ready that runs judges it (rule-prepare).
				e.warn(s.name, "start_timeout_s (%v) passed while svcrun could not prepare its ready (%s): the next ready that "+
					"runs decides", s.spec.StartTimeout, s.prepWhy)
				break
			}
			e.fail(s, fmt.Sprintf("not ready within start_timeout_s (%v)", s.spec.StartTimeout))
		}
	case TimerStatus:
		if s.state == sReady && !s.frozen {
			s.statusDue = true
		}
	case TimerFingerprint:
		if s.fpWatched() || s.state == sUnknown && s.fpFailures > 0 {
			s.fpDue = true
		}
	case TimerResetAfter:
		if s.forgetting() && !e.now.Before(s.readySince.Add(s.spec.Restart.ResetAfter)) {
			e.note(s.name, "ready for %v: %d failure(s) forgotten", s.spec.Restart.ResetAfter, s.failures)
			e.clearFailures(s)
		}
	}
	e.markDirty(s)
}

func (e *Engine) serviceOpDone(s *service, r *opRun, o Outcome) {
	s.op = nil
	e.markDirty(s)
	if o.Failure == FailPrepare {
		s.prepFailures++
		s.prepWhy = o.Message
		if e.prepareFailed(s, r, o) {
			return
		}
	} else {
		s.prepFailures, s.prepWhy = 0, ""
	}
	failed := o.Failure != FailNone
	switch r.op {
	case protocol.OpFingerprint:
		e.fingerprinted(s, o)
	case protocol.OpStart:
		if s.state != sStarting {
			return
		}
		if failed {
			e.fail(s, fmt.Sprintf("start %s: %s", o.Failure, o.Message))
			return
		}
		s.setState(e, sWaitReady)
		s.readyDue = true
		e.setTimer(s.slot, TimerStartDeadline, s.name, s.startDeadline)
	case protocol.OpReady:
		if s.state != sWaitReady {
			return
		}
		if !failed && o.Result.Status.Ready {
			e.becameReady(s)
			return
		}
		if !failed && !s.startDeadline.IsZero() && !e.now.Before(s.startDeadline) {
			// The deadline passed while its ready could not be
			// prepared: this first answer after it decides.
			e.fail(s, fmt.Sprintf("not ready within start_timeout_s (%v)", s.spec.StartTimeout))
			return
		}
		if !failed && !o.Result.Status.Running {
			// The start op has ended, so whatever it launched is up or
			// gone: ready answering not running is a failure now, not
			// a daemon slow to come up worth polling until
			// start_timeout_s (docs/decisions.md, rule-ready-not-running).
			switch {
			case s.adopting:
				e.fail(s, "crashed: adopted, and ready reports not running")
			case s.emptiedInOp:
				e.fail(s, "crashed during its start: its process container emptied and ready reports not running")
			default:
				e.fail(s, "ready reports not running")
			}
			return
		}
		s.readyTimer = true
		at := e.now.Add(e.cfg.ReadyPoll)
		if o.Failure == FailPrepare {
			at = e.now.Add(max(e.cfg.ReadyPoll, PrepareRetry(s.prepFailures))) // no busy loop on a full disk
		}
		e.setTimer(s.slot, TimerReadyPoll, s.name, at)
	case protocol.OpStatus:
		if s.state != sReady {
			return
		}
		e.setTimer(s.slot, TimerStatus, s.name, e.now.Add(e.statusPeriod(s)))
		if s.thawCheck {
			// A failed status proves no death, here as for any ready
			// service: admissions go on.
			s.thawCheck = false
			e.admitDirty = true
		}
		switch {
		case failed:
			e.warn(s.name, "status %s", failText(o))
		case !o.Result.Status.Running:
			e.fail(s, "crashed: status reports not running")
		case !o.Result.Status.Ready:
			e.note(s.name, "not ready any more: admissions wait")
			s.setState(e, sWaitReady)
			s.readyDue = false
			s.readyTimer = true
			e.setTimer(s.slot, TimerReadyPoll, s.name, e.now.Add(e.cfg.ReadyPoll))
		}
	case protocol.OpStop:
		if failed {
			e.emit(Kill{Service: s.target})
			e.warn(s.name, "stop %s (%s): escalated to a kill of its process container", o.Failure, o.Message)
		} else if o.Result.OpResult.Escalated {
			e.warn(s.name, "stopped: the service escalated to its forceful path")
		} else if s.cleanStop && s.failures > 0 && !s.unhealthy {
			// Ready until svcrun stopped it gracefully, for no failure: it
			// recovered and served until nobody needed it. Failures days
			// apart, each followed by such a run, are not consecutive,
			// though the run was shorter than reset_after_s (docs/decisions.md,
			// Failures and backoff).
			e.note(s.name, "stopped gracefully after a clean run: %d failure(s) forgotten", s.failures)
			e.clearFailures(s)
		}
		s.cleanStop = false
		e.stopped(s)
	case protocol.OpListOwned:
		if failed {
			e.warn(s.name, "list_owned %s: %s", o.Failure, o.Message)
			return
		}
		for _, w := range o.Result.Warnings {
			e.note(s.name, "list_owned: %s", w)
		}
		e.reapListed(s, r.snap, o.Result.OwnedList)
	case protocol.OpDestroy:
		if failed {
			e.warn(s.name, "destroy %s %s: %s", r.object, o.Failure, o.Message)
			return
		}
		// Its age as an orphan stays until the object is gone from a
		// listing: an object that survives a plain destroy must reach
		// the --force one.
		if o.Result.OpResult.Changed {
			e.note(s.name, "reaped %s", r.object)
		} else {
			e.note(s.name, "destroy %s changed nothing", r.object)
		}
	}
}

func (e *Engine) fingerprinted(s *service, o Outcome) {
	if o.Failure != FailNone {
		if s.state == sUnknown {
			// Nothing is known: its daemon may run, unwatched and not
			// charged, so it is neither started nor taken as stopped
			// until a fingerprint answers.
			held := s.holdsStarts()
			s.fpFailures++
			s.emptiedInOp = false
			d := Backoff(s.spec.Restart, s.fpFailures)
			if o.Failure == FailPrepare {
				d = PrepareRetry(s.prepFailures)
			}
			e.setTimer(s.slot, TimerFingerprint, s.name, e.now.Add(d))
			e.warn(s.name, "fingerprint %s; whether it runs is unknown: not started, fingerprinted again in %v", failText(o), d)
			e.heldChanged(held, s.holdsStarts())
			return
		}
		e.warn(s.name, "fingerprint %s", failText(o))
		if s.spec.Lifecycle == manifest.Manual || s.state == sReady || s.state == sWaitReady {
			e.setTimer(s.slot, TimerFingerprint, s.name, e.now.Add(e.cfg.FingerprintPeriod))
		}
		if s.thawCheck && s.spec.Lifecycle == manifest.Manual {
			// A failed fingerprint proves no death, as a failed status
			// does not: admissions go on.
			s.thawCheck = false
			e.admitDirty = true
		}
		e.watchWithheld(s) // the latest fingerprint that answered still holds
		return
	}
	fp := o.Result.Fingerprint
	if fp.Healthy != s.fpHealthy || (!fp.Healthy && fp.Message != s.fpMessage) {
		if !fp.Healthy {
			e.warn(s.name, "fingerprint unhealthy: %s", fp.Message)
		} else if s.fpKnown {
			e.note(s.name, "fingerprint healthy again")
		}
		e.admitDirty = true
		s.withheldNoted = false
	}
	s.fpKnown, s.fpHealthy, s.fpMessage, s.fpAttrs, s.fpAt = true, fp.Healthy, fp.Message, fp.Attrs, e.now
	if !maps.Equal(s.pools, fp.Pools) {
		s.pools = fp.Pools
		e.admitDirty = true
	}
	mem := 0.0
	if fp.Reserve != nil {
		mem = fp.Reserve.MemGB
	}
	s.setMem(e, mem)
	running := fp.Running != nil && *fp.Running
	// Its container emptied while the fingerprint ran: the daemon it saw
	// is dead.
	died := running && s.emptiedInOp
	s.emptiedInOp = false
	if died {
		running = false
	}
	if running != s.fpRunning {
		// Its offer is now, or no longer, the pool's whole offer.
		e.admitDirty = true
	}
	s.fpRunning = running
	// Processes no op runs in the container of a service the module sees
	// no daemon of: whenever it is next started, it is emptied first.
	s.occupied = s.occupied || (!running && o.Occupied)
	if s.thawCheck && running && s.spec.Lifecycle == manifest.Manual {
		// A manual service gets no status: its fingerprint is the check.
		s.thawCheck = false
		e.admitDirty = true
	}
	switch s.state {
	case sUnknown:
		switch {
		case died && s.enabled() && !s.unhealthy && s.spec.Lifecycle != manifest.Manual:
			// It would have been adopted: an adopted daemon that dies
			// crashed, as a ready service's would.
			e.countFailure(s, "crashed: its process container emptied while its first fingerprint ran")
			s.setState(e, sStopped)
		case s.spec.Lifecycle == manifest.Manual && !s.enabled():
			// Never stopped by svcrun, nor offered while disabled; one that
			// runs is charged and watched until it stops.
			if running && !s.gone() {
				s.setState(e, sReady)
				e.setTimer(s.slot, TimerFingerprint, s.name, e.now.Add(e.cfg.FingerprintPeriod))
			} else {
				s.setState(e, sStopped)
			}
		case s.spec.Lifecycle == manifest.Manual:
			e.setTimer(s.slot, TimerFingerprint, s.name, e.now.Add(e.cfg.FingerprintPeriod))
			if running {
				e.note(s.name, "%s", manualRunning(s))
				e.manualReady(s)
			} else {
				s.setState(e, sStopped)
			}
		case running && !s.enabled():
			// Disabled or removed while its fingerprint ran: stop it.
			s.setState(e, sReady)
			e.beginStop(s, s.disabledReason())
		case running && s.unhealthy:
			// The previous agent marked it unhealthy, and its cleanup
			// stop may have died with it: finish the cleanup.
			s.setState(e, sReady)
			e.beginStop(s, "cleanup after failure")
		case running:
			// Adopted services get start_timeout_s to be ready, as a
			// start would: one that never is fails like one.
			e.note(s.name, "adopted: already running")
			s.adopting = true
			s.setState(e, sWaitReady)
			s.readyDue = true
			s.startDeadline = e.now.Add(s.spec.StartTimeout)
			e.setTimer(s.slot, TimerStartDeadline, s.name, s.startDeadline)
		case o.Occupied || s.contained:
			// The module sees no daemon (its pid file gone, say), but
			// its container holds processes: a start would run a second
			// daemon beside them. The stop empties it (what a stop
			// leaves is killed), then it starts as usual.
			e.warn(s.name, "its fingerprint says not running, but its process container holds processes no op runs: stopped "+
				"first, so that no start joins them")
			s.setState(e, sReady)
			e.beginStop(s, "its process container is not empty")
		default:
			s.setState(e, sStopped)
		}
	case sReady, sWaitReady:
		e.setTimer(s.slot, TimerFingerprint, s.name, e.now.Add(e.cfg.FingerprintPeriod))
		if !running {
			if s.spec.Lifecycle == manifest.Manual && !s.enabled() {
				e.note(s.name, "not running (manual, module disabled): no longer charged")
				s.setState(e, sStopped)
				return
			}
			if s.spec.Lifecycle == manifest.Manual {
				e.note(s.name, "not running (manual): unusable until it runs again")
				s.setState(e, sStopped)
				e.admitDirty = true
				return
			}
			e.fail(s, "crashed: fingerprint reports not running")
		}
	case sStopped:
		if s.spec.Lifecycle == manifest.Manual {
			// Fingerprinted only, forever: it may come back.
			e.setTimer(s.slot, TimerFingerprint, s.name, e.now.Add(e.cfg.FingerprintPeriod))
			if running {
				e.note(s.name, "%s", manualRunning(s))
				e.manualReady(s)
			}
		}
	}
	e.watchWithheld(s)
}

// manualReady makes usable a manual service a fingerprint found running.
// Its readiness is counted from now, as a started one's from its ready:
// failures it carries (counted under another lifecycle, or stored across
// a restart) are forgotten after reset_after_s of it, and never sooner.
func (e *Engine) manualReady(s *service) {
	s.setState(e, sReady)
	s.readySince = e.now
	if s.forgetting() {
		e.setTimer(s.slot, TimerResetAfter, s.name, e.now.Add(s.spec.Restart.ResetAfter))
	}
	e.admitDirty = true
}

// forgetting says whether s is counting readiness towards forgetting its
// failures: it has failures, no unhealthy mark, and readiness of its own
// (readySince is set only by becoming ready, and cleared by leaving
// sReady). A service in sReady with none (a disabled module's manual one,
// still watched) counts none.
func (s *service) forgetting() bool {
	return s.failures > 0 && !s.unhealthy && !s.readySince.IsZero()
}

// manualRunning is the note of a manual service found running. Its
// unhealthy mark (failures counted while it had another lifecycle, stored
// across a restart) still withdraws it until svcrun reset: "usable" would
// then lie to the operator reading the log.
func manualRunning(s *service) string {
	if s.unhealthy {
		return "running (manual), but unhealthy: not offered until svcrun reset or re-enabling its module clears the mark"
	}
	return "running (manual): usable"
}

// watchManual fingerprints a stopped manual service again in a period. A
// fingerprint that finds one stopped arms its next; this is for one a
// reload made manual while svcrun still started or stopped it, stopped
// by that op's end (or its start dropped from the op queue): its owner
// may start it, and only a fingerprint can tell.
func (e *Engine) watchManual(s *service) {
	if s.state == sStopped && s.spec.Lifecycle == manifest.Manual && s.enabled() {
		e.setTimer(s.slot, TimerFingerprint, s.name, e.now.Add(e.cfg.FingerprintPeriod))
	}
}

// watchWithheld fingerprints a service whose start is withheld again in a
// period: only a fingerprint can say it is healthy again.
func (e *Engine) watchWithheld(s *service) {
	if s.startWithheld() && s.enabled() {
		e.setTimer(s.slot, TimerFingerprint, s.name, e.now.Add(e.cfg.FingerprintPeriod))
	}
}

func (e *Engine) becameReady(s *service) {
	e.cancelTimer(s.slot, TimerStartDeadline, s.name)
	s.startDeadline = time.Time{}
	if s.adopting {
		e.note(s.name, "ready (adopted)")
	} else {
		e.note(s.name, "ready")
	}
	s.adopting = false
	s.setState(e, sReady)
	s.readySince = e.now
	reapMark(s, "not listed since it became ready")
	// Fingerprinted after each start: what it offers running may differ
	// from what it offered stopped. An adopted one was, at adoption.
	e.armWatch(s, !s.fpRunning)
	if s.failures > 0 {
		e.setTimer(s.slot, TimerResetAfter, s.name, e.now.Add(s.spec.Restart.ResetAfter))
	}
	e.admitDirty = true
}

// stopped records the end of a stop and what follows it.
func (e *Engine) stopped(s *service) {
	reason := s.stopReason
	s.stopReason = ""
	s.frozen = false
	s.setState(e, sStopped)
	e.cancelWatch(s)
	e.note(s.name, "stopped (%s)", reason)
	e.watchWithheld(s)
	e.watchManual(s)
	if s.gone() && s.idle() {
		e.forget(s)
		return
	}
	e.admitDirty = true
}

// forget drops a service removed from its manifest, or of a module
// removed from the configuration, once it is stopped and unused.
func (e *Engine) forget(s *service) {
	if e.services[s.name] != s {
		return // forgotten already: its stop's end and a reconcile both get here
	}
	delete(e.services, s.name)
	s.forgotten = true
	e.leaveSlotQueue(s)
	for i, x := range s.mod.services {
		if x == s {
			s.mod.services = append(s.mod.services[:i], s.mod.services[i+1:]...)
			break
		}
	}
	e.note(s.name, "forgotten: stopped, and no longer configured")
	e.rebuildIndex()
	e.forgetModuleIfEmpty(s.mod)
}

func (e *Engine) containerEmptied(s *service) {
	e.emptied(s)
	if s.op != nil && s.op.op == protocol.OpFingerprint {
		// What the fingerprint in flight saw running is gone, whatever
		// the state its answer finds: a manual service taken for
		// stopped must not become usable on it.
		s.emptiedInOp = true
	}
}

func (e *Engine) emptied(s *service) {
	if s.state == sUnknown {
		return // the fingerprint in flight, or the next one, tells
	}
	if s.spec.Lifecycle == manifest.Manual {
		// The agent never starts or stops a manual service: it is
		// unusable until a fingerprint sees it running again.
		if s.state == sReady || s.state == sWaitReady {
			e.warn(s.name, "not running (manual): its process container emptied; unusable until it runs again")
			s.setState(e, sStopped)
			e.admitDirty = true
			// A fingerprint due (a reload made it manual while it waited
			// for readiness, whose poll never runs it) runs now, not at
			// whatever marks it next.
			e.markDirty(s)
		}
		return
	}
	switch s.state {
	case sStarting:
		// The start op may still be launching the daemon: its ready
		// decides, once the op is done.
		s.emptiedInOp = true
	case sReady, sWaitReady:
		e.crashedEmpty(s, "crashed: its process container emptied")
	}
}

// crashedEmpty takes the crash of a service whose process container is
// empty (or emptied by a Kill just emitted).
func (e *Engine) crashedEmpty(s *service, reason string) {
	// Thaw the empty container too, or the next start would be cloned
	// into a frozen cgroup and hang.
	e.thaw(s)
	e.countFailure(s, reason)
	// Nothing of it is left to stop: every process of the service is
	// gone, so the next start begins clean without a cleanup stop (a stop
	// op would only delay the restart by a fork and a script).
	e.leftRunning(s)
	s.setState(e, sStopped)
	e.watchWithheld(s)
	e.markDirty(s)
}

// leftRunning drops what belongs to a running service: its idle timer,
// its watch and its start deadline.
func (e *Engine) leftRunning(s *service) {
	if s.idleTimer {
		s.idleTimer = false
		e.cancelTimer(s.slot, TimerIdle, s.name)
	}
	s.idleExpired = false
	s.readyDue = false
	s.startDeadline = time.Time{}
	e.cancelWatch(s)
}

// fail counts a failure: after a cleanup stop the service backs off, or at
// max_failures becomes unhealthy.
func (e *Engine) fail(s *service, reason string) {
	e.countFailure(s, reason)
	// A failed start or a crash not seen as the container emptying (the
	// daemon may live on, hung, or have left processes) is followed by
	// a stop so that the next attempt begins clean.
	e.beginStop(s, "cleanup after failure")
	s.cleanStop = false
}

// countFailure counts a failure and stores it: the service backs off, or
// at max_failures becomes unhealthy.
func (e *Engine) countFailure(s *service, reason string) {
	s.failures++
	s.reason = reason
	max := s.spec.Restart.MaxFailures
	if s.failures >= max {
		s.unhealthy = true
		s.backoffUntil = time.Time{}
		e.alarm(s.name, "failure %d/%d: %s; unhealthy: capabilities and pools withdrawn until reset", s.failures, max, reason)
		e.failWaitingFor(s, nil, s.unhealthyReason())
	} else {
		d := Backoff(s.spec.Restart, s.failures)
		s.backoffUntil = e.now.Add(d)
		s.backoffTimer = true
		e.setTimer(s.slot, TimerBackoff, s.name, s.backoffUntil)
		e.warn(s.name, "failure %d/%d: %s; next start not before %v (backoff %v)", s.failures, max, reason,
			s.backoffUntil.Format(time.RFC3339Nano), d)
	}
	e.persistService(s)
	e.admitDirty = true
}

// Backoff is the delay before the n-th retry: min(initial*2^(n-1), max);
// with a zero initial delay, the first retry at once and every later one
// after max (doubling nothing would never back off).
func Backoff(r manifest.Restart, n int) time.Duration {
	d := r.BackoffInitial
	for i := 1; i < n; i++ {
		d *= 2
		if d >= r.BackoffMax || d <= 0 {
			return r.BackoffMax
		}
	}
	return min(d, r.BackoffMax)
}

// memberExited takes the end of a long-lived process of a service's
// container while others live on (a master whose workers remain): the
// container will not empty, so the status the watch would run at its next
// period runs now (a manual service's fingerprint: it gets no status). A
// status running or already due is enough; a service that is not up is
// judged by the op it runs or waits for. killed: that process was the
// daemon's topmost (svcrun's child) and a signal killed it, a crash
// without asking (rule-member-exited): the rest of the daemon is killed
// with its container and the service restarted as after an emptied
// container, with no status and no cleanup stop between.
func (e *Engine) memberExited(s *service, killed bool) {
	statusRuns := s.op != nil && (s.op.op == protocol.OpStatus || s.op.op == protocol.OpFingerprint)
	switch {
	case s.state == sStopped && s.op == nil:
		// Others still live in the container (the event says so):
		// a start must not join them.
		s.occupied = true
		e.note(s.name, "a process of its container ended while it is stopped: the container still holds processes, emptied "+
			"before any start")
	case s.state != sReady:
		e.note(s.name, "a process of its container ended while it is %s: ignored, the op it runs or waits for judges it",
			s.state)
	case killed && s.op == nil && s.spec.Lifecycle != manifest.Manual:
		e.emit(Kill{Service: s.target})
		e.crashedEmpty(s, "crashed: its master was killed by a signal; what was left in its process container killed")
	case statusRuns || s.statusDue || s.fpDue:
		e.note(s.name, "a process of its container ended: the status already running or due checks it")
	case s.spec.Lifecycle == manifest.Manual:
		e.note(s.name, "a process of its container ended: fingerprinted now")
		s.fpDue = true
		e.markDirty(s)
	default:
		e.note(s.name, "a process of its container ended: status now")
		s.statusDue = true
		e.markDirty(s)
	}
}

// prepareFailed takes an op of s that svcrun could not prepare: nothing of
// the module ran, so nothing is counted against it (docs/decisions.md,
// rule-prepare). A start leaves the service stopped, with nothing to clean
// up, and a stop leaves it running and managed: each is tried again after
// PrepareRetry. It reports whether the op's end is fully taken; the others
// (fingerprint, status, ready, reaping) go on as any failed op of theirs,
// which counts no failure either.
func (e *Engine) prepareFailed(s *service, r *opRun, o Outcome) bool {
	d := PrepareRetry(s.prepFailures)
	switch {
	case r.op == protocol.OpStart && s.state == sStarting:
		s.startDeadline = time.Time{}
		s.adopting = false
		s.setState(e, sStopped)
		s.prepUntil = e.now.Add(d)
		e.warn(s.name, "start %s: nothing started, no failure counted; tried again in %v", failText(o), d)
		e.admitDirty = true
		return true
	case r.op == protocol.OpStop: // never a kill, whatever its state
		s.prepUntil = e.now.Add(d)
		e.warn(s.name, "stop %s: nothing killed, it runs on, still managed; stop tried again in %v", failText(o), d)
		return true
	case s.thawCheck && s.state == sReady &&
		(r.op == protocol.OpStatus || r.op == protocol.OpFingerprint && s.spec.Lifecycle == manifest.Manual):
		// The check of a thawed service (a manual one's is its
		// fingerprint) looked at nothing: still owed, its leases wait,
		// and it is tried again.
		s.prepUntil = e.now.Add(d)
		kind := TimerStatus
		if r.op == protocol.OpFingerprint {
			kind = TimerFingerprint
		}
		e.setTimer(s.slot, kind, s.name, s.prepUntil)
		e.warn(s.name, "%s %s", r.op, failText(o))
		return true
	}
	return false
}

// PrepareRetry is the delay before an op that could not be prepared is
// tried again, the n-th time in a row: 5 s doubling to at most 5 min, so
// that a full disk is neither hammered nor forgotten.
func PrepareRetry(n int) time.Duration {
	d := 5 * time.Second
	for i := 1; i < n && d < 5*time.Minute; i++ {
		d *= 2
	}
	return min(d, 5*time.Minute)
}

// failText says how an op failed, for notes; one svcrun could not prepare
// says whose fault it is.
func failText(o Outcome) string {
	if o.Failure == FailPrepare {
		return fmt.Sprintf("could not be prepared by svcrun (%s): a fault of this node, not of the module", o.Message)
	}
	return fmt.Sprintf("%s: %s", o.Failure, o.Message)
}

// waitRetry reports whether a start or stop of s waits until at, arming
// the timer that wakes it.
func (e *Engine) waitRetry(s *service, at time.Time) bool {
	if !at.After(e.now) {
		return false
	}
	if !s.backoffTimer {
		s.backoffTimer = true
		e.setTimer(s.slot, TimerBackoff, s.name, at)
	}
	return true
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func (e *Engine) reset(t Target) {
	name := t.String()
	s := e.services[name]
	if s == nil {
		e.note(name, "reset: no such service")
		return
	}
	s.backoffTimer = false
	e.cancelTimer(s.slot, TimerBackoff, s.name)
	s.prepUntil, s.prepFailures = time.Time{}, 0
	e.clearFailures(s)
	e.note(s.name, "reset: failures cleared")
	e.markDirty(s)
	e.admitDirty = true
}

// clearFailures forgets a service's failures and its unhealthy mark, in
// the store too.
func (e *Engine) clearFailures(s *service) {
	s.failures, s.unhealthy, s.reason, s.backoffUntil = 0, false, "", time.Time{}
	e.persistService(s)
}

func (e *Engine) persistService(s *service) {
	r := ServiceRecord{Name: s.name, Failures: s.failures, Unhealthy: s.unhealthy, Reason: s.reason,
		BackoffUntil: s.backoffUntil}
	if s.yieldsByLRU() {
		r.LastUsed = s.lastUsed
	}
	e.emit(PutService{Service: r})
}
