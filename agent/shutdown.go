package agent

import (
	"context"
	"errors"
	"sync"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/errdefs"
	"github.com/oarbank/svcrun/manifest"
)

// ErrStopping, errdefs.ErrStopping, is returned to requests that arrive
// while svcrun stops.
var ErrStopping = errdefs.ErrStopping

// stopping is shutdown's state, with a lock of its own: whether the loop
// still takes requests (post), and the acquires withdrawn by callers that
// gave up, not yet stepped as releases; settled is set once shutdown has
// stepped the last of them.
type stopping struct {
	mu        sync.Mutex
	stopped   bool
	withdrawn []engine.LeaseID
	settled   bool
}

// withdrawAll adds the acquires that shutdown told to stop waiting.
func (s *stopping) withdrawAll(ids []engine.LeaseID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.withdrawn = append(s.withdrawn, ids...)
}

// shutdown ends Run: no more requests; ops in flight may finish within the
// grace; waiters are told the agent is stopping. An acquire told so is
// withdrawn: the engine still holds it, and the ops drain steps (the start
// it waits for) could admit it, storing a lease for a caller told it failed.
func (a *Agent) shutdown(cause error) error {
	if cause == nil && a.engine != nil {
		a.publishStatus(a.sched.Now()) // for the readers told to stop waiting
	}
	// Stopped before the waiters close: a call that registers after
	// them finds its post refused.
	a.stop.mu.Lock()
	a.stop.stopped = true
	a.stop.mu.Unlock()
	a.stop.withdrawAll(a.waiters.close())
	close(a.quit)
	if cause == nil {
		a.stepWithdrawals() // before drain admits them
		a.drain()
		if a.opts.StopServicesOnExit {
			a.stopAll()
		}
	}
	a.stop.mu.Lock()
	a.stop.settled = true
	a.stop.mu.Unlock()
	a.stepWithdrawals()
	a.thawAll()
	a.exec.Close()
	a.pauses.Stop()
	if a.containers != nil {
		// The containers stay, with their daemons, for the next svcrun.
		a.containers.Close()
	}
	if a.metricsSrv != nil {
		a.metricsSrv.close()
	} else if a.metricsLn != nil {
		a.metricsLn.Close()
	}
	a.loud.Close()
	jerr := a.jour.Close()
	derr := a.db.Close()
	if err := errors.Join(cause, jerr, derr); err != nil {
		a.log.Error("svcrun stopped", "error", err)
		return err
	}
	a.log.Info("svcrun stopped")
	return nil
}

// drain keeps stepping (without new requests) until no op is in flight or
// the grace is over.
func (a *Agent) drain() {
	ctx, cancel := context.WithTimeout(context.Background(), a.opts.ShutdownGrace)
	defer cancel()
	for a.engine.OpsInFlight() > 0 {
		ev, ok := a.sched.Next(ctx)
		if !ok {
			a.log.Warn("ops still in flight at shutdown: killed", "ops", a.engine.OpsInFlight())
			return
		}
		switch ev.(type) {
		case *engine.OpDone:
		default:
			continue // timers and requests wait for the next start
		}
		if err := a.driver.Step(ev); err != nil {
			a.log.Error("persist at shutdown", "error", err)
			return
		}
	}
}

// thawAll resumes frozen services before svcrun exits: the next svcrun
// does not know they were frozen, and a service frozen with SIGSTOP (the
// process-group fallback) whose group is orphaned by svcrun's exit would be
// sent SIGHUP by the kernel and die.
func (a *Agent) thawAll() {
	if a.engine == nil {
		return
	}
	for _, s := range a.engine.Status().Services {
		if s.Frozen {
			a.exec.Thaw(s.Target)
			a.log.Info("thawed before exit", "subject", s.Name)
		}
	}
}

// stopAll disables every module so the engine stops their services, and
// steps until they are stopped or the grace is over. A stop may take its
// spec timeout (120 s), longer than the grace: a service not stopped when
// the grace ends gets the escalation of a stop that times out, a kill of
// its process container, so that none is left running.
func (a *Agent) stopAll() {
	var specs []engine.ModuleSpec
	for _, s := range a.specs() {
		s.Enabled = false
		specs = append(specs, s)
	}
	if err := a.driver.Step(engine.Reload{Modules: specs,
		Reason: "svcrun is stopping (--stop-services-on-exit)"}); err != nil {
		a.log.Error("stop services at exit", "error", err)
		return
	}
	a.drain()
	for _, s := range a.engine.Status().Services {
		switch {
		case s.Lifecycle == manifest.Manual, s.State == "stopped":
		case s.State == "unknown": // not fingerprinted: perhaps not running, perhaps not ours to kill
			a.log.Warn("not stopped at exit: its state is not known yet", "service", s.Name)
		default:
			a.log.Warn("not stopped within the shutdown grace: killing its process container",
				"service", s.Name, "state", s.State, "grace", a.opts.ShutdownGrace)
			a.exec.Kill(s.Target)
		}
	}
}

// withdraw ends an acquire whose caller gave up: the engine drops the
// waiting request, or releases the lease if it was admitted meanwhile (its
// answer then reached nobody). The loop takes no events once svcrun stops,
// so a withdrawal that comes then waits for shutdown, which steps it before
// the store closes: otherwise a lease admitted in the loop's last steps
// would be stored, and held across restarts, for a caller that is gone.
func (a *Agent) withdraw(id engine.LeaseID) {
	a.stop.mu.Lock()
	defer a.stop.mu.Unlock()
	if a.stop.settled {
		a.log.Warn("acquire withdrawn after svcrun stopped: if it was admitted, its lease stays "+
			"held until released or expired", "lease", id)
		return
	}
	a.stop.withdrawn = append(a.stop.withdrawn, id)
	if !a.stop.stopped {
		a.sched.Post(loopFn{fn: a.stepWithdrawals})
	}
}

// stepWithdrawals steps the pending withdrawals as releases, on the loop
// or, once it has ended, in shutdown.
func (a *Agent) stepWithdrawals() {
	a.stop.mu.Lock()
	ids := a.stop.withdrawn
	a.stop.withdrawn = nil
	a.stop.mu.Unlock()
	if a.engine == nil {
		return
	}
	for _, id := range ids {
		if err := a.step(engine.Release{Lease: id}); err != nil {
			a.log.Error("withdraw an acquire", "lease", id, "error", err)
			return
		}
	}
}
