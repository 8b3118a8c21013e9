package executor

import (
	"errors"
	"time"

	"fmt"
	"strings"
	"sync"

	"github.com/oarbank/svcrun/cgroup"
	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/internal/loglimit"
	"github.com/oarbank/svcrun/nodeconfig"
)

// containers is the Executor's side of the cgroup process containers
// (Config.Containers): which services fell back to process groups, and the
// limits to apply.
type containers struct {
	cg       *cgroup.Manager // nil: none configured
	cmu      sync.Mutex
	limits   nodeconfig.Limits
	fallback map[engine.Target]error // service -> why its ops run in process groups
	// unsubDeaths ends the reaper's word of orphans' deaths to cg.
	unsubDeaths func()
}

func (x *Executor) initContainers(cfg Config, post func(engine.Event)) {
	x.cg = cfg.Containers
	x.limits = cfg.Node.Limits
	x.fallback = map[engine.Target]error{}
	if x.cgUsable() {
		x.cg.SetOnEmptied(func(name string) { post(engine.ContainerEmptied{Service: serviceOf(name)}) })
		x.cg.SetOnArmed(func(name string) { post(engine.ContainerPopulated{Service: serviceOf(name)}) })
		x.cg.SetOnMemberExited(func(name string, killed bool) {
			post(engine.MemberExited{Service: serviceOf(name), Killed: killed})
		})
		x.unsubDeaths = subscribeOrphanDeaths(x.cg.NoteChildExit)
	}
}

func (x *Executor) cgUsable() bool { return x.cg != nil && x.cg.Err() == nil }

// updateContainers takes the new limits, lets the services that fell back
// try their container again, and removes the empty containers of services
// that are gone.
func (x *Executor) updateContainers(cfg Config, targets map[engine.Target]*target) {
	x.cmu.Lock()
	x.limits = cfg.Node.Limits
	x.fallback = map[engine.Target]error{}
	x.cmu.Unlock()
	if !x.cgUsable() {
		return
	}
	for _, name := range x.cg.Services() {
		if targets[serviceOf(name)] == nil {
			x.cg.Remove(name) // ErrBusy: a daemon still runs there; kept
		}
	}
}

// closeContainers stops the emptied, populated and member-exited events
// (Close).
func (x *Executor) closeContainers() {
	if x.cgUsable() {
		x.cg.SetOnEmptied(nil)
		x.cg.SetOnArmed(nil)
		x.cg.SetOnMemberExited(nil)
		x.unsubDeaths()
	}
}

// serviceName is the node-wide name of a service, "module/name", by which
// the cgroup Manager knows its container and the records of ops in flight
// name it; serviceOf is its inverse, for the Manager's events, its list of
// containers, the records and the string arguments of ContainerMode and
// Groups. Every target crosses to a name and back here and nowhere else.
func serviceName(service engine.Target) string { return service.String() }

func serviceOf(name string) engine.Target {
	var t engine.Target
	t.Module, t.Name, _ = strings.Cut(name, "/")
	return t
}

// ContainerMode says how the service's processes are contained: "cgroup"
// (its cgroup v2, which its ops are cloned into), or "process-group: " and
// why not. For svcrun status.
func (x *Executor) ContainerMode(service string) string {
	switch {
	case x.cg == nil:
		return "process-group: no cgroup v2 process containers configured"
	case x.cg.Err() != nil:
		return "process-group: " + x.cg.Err().Error()
	}
	x.cmu.Lock()
	defer x.cmu.Unlock()
	if err := x.fallback[serviceOf(service)]; err != nil {
		return "process-group: " + err.Error()
	}
	return "cgroup"
}

func (x *Executor) setFallback(service engine.Target, err error) {
	x.cmu.Lock()
	x.fallback[service] = err
	x.cmu.Unlock()
}

// spawnIn runs the op of t: a service's in its cgroup when it has one, with
// the op counted by the Manager (the arming rule of emptied events);
// probes, and services without a container, in a tracked process group.
// An op whose clone into the cgroup fails is cloned once more, into the
// container re-created if it was removed under svcrun
// (cgroup.Manager.Recover). If that fails too it is run again without it;
// if it then starts, the cgroup was at fault and the service falls back
// to process groups (until Update). After a stop (any outcome), what is
// left in the container is killed while the op still counts, so the next
// start begins in an empty one and the emptying is not a crash.
func (x *Executor) spawnIn(t engine.Target, spec Spec, stop bool) Result {
	if t.Probe {
		return x.spawnGrouped(t, spec, false)
	}
	fd, removed, ok := x.opStart(t)
	if !ok {
		return x.spawnGrouped(t, spec, stop)
	}
	name := serviceName(t)
	defer x.cg.OpEnd(name)
	hooks := spec.Hooks
	// ran ends the op: after a stop, what is left in the container is
	// killed first.
	ran := func(res Result) Result {
		if stop {
			res.Left = x.killContainerLeft(t)
		}
		return res
	}
	// spawnFD runs the op cloned into the container's descriptor fd, which
	// is closed once the op is spawned.
	spawnFD := func(fd int) Result {
		spec.Hooks.SysProcAttr = withCgroupFD(hooks.SysProcAttr, fd)
		res := Spawn(x.ctx, spec)
		closeCgroupFD(fd)
		return res
	}
	// A container removed under svcrun, found by OpStart (removed) or
	// by the clone's ENOENT, is re-created for the op.
	var res Result
	cause := removed
	if removed == nil {
		if res = spawnFD(fd); !cloneFailed(res) {
			return ran(res)
		}
		cause = res.SpawnErr
	}
	if fd, err := x.cg.Recover(name); fd >= 0 {
		if res = spawnFD(fd); !cloneFailed(res) {
			return ran(res)
		}
		cause = res.SpawnErr
	} else if err != nil {
		cause = err // the ENOENT of the clone blames the executable
	}
	spec.Hooks = hooks
	if again := x.spawnGrouped(t, spec, stop); again.Pid != 0 {
		path, _ := x.cg.Path(name)
		x.setFallback(t, fmt.Errorf("clone into %s failed: %v", path, cause))
		return again
	}
	return res
}

// cloneFailed says nothing of the op ran.
func cloneFailed(res Result) bool { return res.SpawnErr != nil && res.Pid == 0 && !res.Canceled }

// killContainerLeft kills what a stop left in the service's cgroup and
// waits (bounded) for it to be empty; it returns what it found there.
func (x *Executor) killContainerLeft(service engine.Target) []int {
	name := serviceName(service)
	pids, err := x.cg.Procs(name)
	if err != nil || len(pids) == 0 {
		return nil
	}
	left := living(pids)
	x.log.Warn("the stop left processes in the service's container: killed",
		"service", name, "processes", len(pids), "pids", loglimit.Few(pids))
	if err := x.cg.Kill(name, killWait); err != nil {
		x.log.Warn("the container is not empty after the stop", "service", name, "error", err)
	}
	return left
}

// cgroupOf is the cgroup directory an op of the service is cloned into;
// "" when it runs in a process group.
func (x *Executor) cgroupOf(service engine.Target) string {
	if !x.cgUsable() {
		return ""
	}
	x.cmu.Lock()
	fallback := x.fallback[service]
	x.cmu.Unlock()
	if fallback != nil {
		return ""
	}
	p, err := x.cg.Path(serviceName(service))
	if err != nil {
		return ""
	}
	return p
}

// opStart readies the service's container for an op: the descriptor to
// clone into (the caller's to close), ErrRemoved when the container was
// removed under svcrun (the op is counted: Recover it), and false when the
// service runs in process groups.
func (x *Executor) opStart(service engine.Target) (fd int, removed error, ok bool) {
	if !x.cgUsable() {
		return -1, nil, false
	}
	x.cmu.Lock()
	fallback, lim := x.fallback[service], x.limits
	x.cmu.Unlock()
	if fallback != nil {
		return -1, nil, false
	}
	name := serviceName(service)
	fd, err := x.cg.OpStart(name)
	if err != nil && !errors.Is(err, cgroup.ErrRemoved) {
		x.setFallback(service, err)
		return -1, nil, false
	}
	// Missing controllers are recorded, not errors; a failed write shows
	// in the container's status. Unchanged limits are not rewritten. A
	// removed container gets them again when Recover re-creates it.
	x.cg.Limits(name, lim.MemGB, lim.Pids)
	if err != nil {
		return -1, err, true // counted: spawnIn recovers the container
	}
	return fd, nil, true
}

// containerKill kills the service's cgroup, without waiting: Kill runs on
// the driver's loop.
func (x *Executor) containerKill(service engine.Target) {
	if x.cgUsable() {
		// The driver contract: a Kill is done before the next event, or
		// the kill would also hit the next op cloned into the container
		// (a retry's start). Bounded: cgroup.kill empties a container in
		// milliseconds.
		x.cg.Kill(serviceName(service), killWait)
	}
}

// killWait and freezeWait bound how long the driver loop waits for the
// cgroup to settle after a kill, a freeze or a thaw.
const (
	killWait   = 2 * time.Second
	freezeWait = time.Second
)

// containerFreeze freezes or thaws the service's cgroup and waits (bounded)
// for the freezer to settle, as the driver contract asks.
func (x *Executor) containerFreeze(service engine.Target, freeze bool) {
	if !x.cgUsable() {
		return
	}
	if freeze {
		x.cg.Freeze(serviceName(service), freezeWait)
	} else {
		x.cg.Thaw(serviceName(service), freezeWait)
	}
}
