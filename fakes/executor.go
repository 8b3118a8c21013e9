// Package fakes holds the simulator's stand-ins for the world: an executor
// whose services and probes do what data says, on virtual time.
//
// A Behaviour describes one service or probe: how long each op takes and
// how it ends (a sequence of outcomes, the last repeating), when it becomes
// ready, when it crashes, whether its stop needs escalation, what its
// fingerprint reports, and the objects it owns. Nothing here is code a
// scenario writes: scenarios are data.
package fakes

import (
	"fmt"
	"sort"
	"time"

	"github.com/oarbank/svcrun/clockwork"
	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/protocol"
)

// Outcome names how a scripted op ends.
type Outcome string

const (
	OK       Outcome = "ok"
	Fail     Outcome = "fail"     // non-zero exit
	Protocol Outcome = "protocol" // garbage output
	Timeout  Outcome = "timeout"  // overruns its timeout and is killed
	Hang     Outcome = "hang"     // never answers: killed at its timeout too
	NotReady Outcome = "not-ready"
	// Escalated: a stop that needed the service's own forceful path; it
	// succeeds and says so.
	Escalated Outcome = "escalated"
	// Prepare: svcrun could not prepare the op (a full disk): nothing of
	// the module ran, nothing changed.
	Prepare Outcome = "prepare"
	// Exited: a start that succeeds but whose daemon exits at once (a
	// port already taken): ready answers not running.
	Exited Outcome = "exited"
)

// OpScript is how one op of a service behaves.
type OpScript struct {
	Duration time.Duration `json:"duration,omitempty"`
	// Durations, when set, are the durations of the calls in turn (the
	// last repeats), instead of Duration: a journal replayed as a
	// scenario gives each op the time it took in production.
	Durations []time.Duration `json:"durations,omitempty"`
	Outcomes  []Outcome       `json:"outcomes,omitempty"` // in turn; the last repeats; empty means ok
}

// Object is an object a fake service owns.
type Object struct {
	ID        string            `json:"id"`
	Kind      string            `json:"kind,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
	CreatedAt time.Time         `json:"created_at,omitzero"`
	Busy      bool              `json:"busy,omitempty"`
	// Stubborn objects survive destroy without --force.
	Stubborn bool `json:"stubborn,omitempty"`
}

// Behaviour is what one fake service or probe does.
type Behaviour struct {
	Ops map[protocol.Op]OpScript `json:"ops,omitempty"`
	// ReadyAfterPolls: ready answers true from the N+1-th poll after a
	// start; ReadyAfter: not before this long after the start.
	ReadyAfterPolls int           `json:"ready_after_polls,omitempty"`
	ReadyAfter      time.Duration `json:"ready_after,omitempty"`
	// CrashAfter: the daemon dies this long after each start (0: never).
	CrashAfter time.Duration `json:"crash_after,omitempty"`
	// StopIgnored: the daemon survives stop, which hangs to its timeout:
	// only a kill of its container ends it.
	StopIgnored bool `json:"stop_ignored,omitempty"`
	// Contained: the daemon lives in a process container that tells of
	// it, as a cgroup does: an op that ends with the daemon running posts
	// ContainerPopulated (once until it dies), its end (crash, stop,
	// kill) ContainerEmptied. Without it only Crash posts the emptying.
	Contained bool `json:"contained,omitempty"`
	// Running at the beginning (an adopted service).
	Running bool `json:"running,omitempty"`
	// Stray: at the beginning its process container holds a process its
	// ops do not see (a daemon whose pid file is gone, left by an agent
	// whose state was lost): fingerprint and status say not running, the
	// fingerprint's outcome says Occupied when the service is Contained.
	// A stop or a kill ends it; a start beside it is a second daemon
	// (DoubleStarts).
	Stray   bool              `json:"stray,omitempty"`
	Healthy *bool             `json:"healthy,omitempty"` // default true
	Pools   map[string]int64  `json:"pools,omitempty"`
	MemGB   float64           `json:"mem_gb,omitempty"`
	Objects []Object          `json:"objects,omitempty"`
	Attrs   map[string]string `json:"attrs,omitempty"`
}

// proc is the simulated state of one service or probe.
type proc struct {
	name    string
	target  engine.Target
	b       *Behaviour
	running bool
	frozen  bool
	stray   bool // see Behaviour.Stray
	doubles int  // starts while stray
	// populated: ContainerPopulated was posted, ContainerEmptied not yet.
	populated bool
	gen       int // bumps at every start and stop, so stale crashes are ignored
	startAt   time.Time
	polls     int
	calls     [8]int // ops run so far, by opIndex
	objects   []Object
	starts    int
	kills     int
}

// Executor is a engine.Executor on virtual time.
type Executor struct {
	sched    *clockwork.Virtual[engine.Event]
	procs    map[string]*proc
	byTarget map[engine.Target]*proc // Kill's, Freeze's and Thaw's lookup, without building names
	// byIndex is Run's, by RunOp.Index, whose target says whether the
	// engine's number is still that target's.
	byIndex []indexed
	// free holds completions whose steps are over (Reuse), for Run to
	// fill again instead of allocating one per op.
	free []*engine.OpDone
}

// NewExecutor returns an executor whose services and probes (by full name,
// module/name) behave as given; unknown ones behave with defaults.
func NewExecutor(sched *clockwork.Virtual[engine.Event], behaviours map[string]*Behaviour) *Executor {
	x := &Executor{sched: sched, procs: map[string]*proc{}, byTarget: map[engine.Target]*proc{}}
	names := make([]string, 0, len(behaviours))
	for n := range behaviours {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		x.procs[n] = newProc(behaviours[n])
	}
	return x
}

func newProc(b *Behaviour) *proc {
	if b == nil {
		b = &Behaviour{}
	}
	p := &proc{b: b, running: b.Running, stray: b.Stray}
	p.objects = append(p.objects, b.Objects...)
	return p
}

func (x *Executor) proc(name string) *proc {
	p := x.procs[name]
	if p == nil {
		p = newProc(nil)
		x.procs[name] = p
	}
	if p.name != name {
		// A name that is no service's gives the zero target, which the
		// engine ignores as it does any unknown service.
		p.name = name
		p.target, _ = engine.ServiceTarget(name)
	}
	return p
}

// indexed is a target's proc by the engine's number of it.
type indexed struct {
	target engine.Target
	p      *proc
}

// procOfOp is the proc an op runs on.
func (x *Executor) procOfOp(op *engine.RunOp) *proc {
	if i := int(op.Index); i < len(x.byIndex) && x.byIndex[i].p != nil && x.byIndex[i].target == op.Target {
		return x.byIndex[i].p
	}
	p := x.procOf(op.Target)
	if i := int(op.Index); i >= len(x.byIndex) {
		x.byIndex = append(x.byIndex, make([]indexed, i+1-len(x.byIndex)+64)...)
	}
	x.byIndex[op.Index] = indexed{target: op.Target, p: p}
	return p
}

func (x *Executor) procOf(t engine.Target) *proc {
	if p := x.byTarget[t]; p != nil {
		return p
	}
	p := x.proc(t.String())
	x.byTarget[t] = p
	return p
}

// Running reports whether the fake service's daemon is up.
func (x *Executor) Running(name string) bool { return x.proc(name).running }

// Stray reports whether the service's container holds a process its ops
// do not see (Behaviour.Stray, or the workers of a master that died).
func (x *Executor) Stray(name string) bool { return x.proc(name).stray }

// DoubleStarts is how many start ops ran while a stray process of the
// service still lived in its container: two daemons.
func (x *Executor) DoubleStarts(name string) int { return x.proc(name).doubles }

// MemberExit ends the daemon's master while its workers live on: its
// ops see no daemon, its container stays populated, and svcrun's watch of
// the container's long-lived processes tells (MemberExited), with killed:
// the master was svcrun's child and a signal killed it.
func (x *Executor) MemberExit(name string, killed bool) {
	p := x.proc(name)
	if !p.running {
		return
	}
	p.running = false
	p.stray = true // the workers
	p.gen++
	x.sched.Post(engine.MemberExited{Service: p.target, Killed: killed})
}

// Starts is how many start ops ran on the service.
func (x *Executor) Starts(name string) int { return x.proc(name).starts }

// Behaviour is what the fake service or probe does, to be changed in
// place: the change holds from its next op on.
func (x *Executor) Behaviour(name string) *Behaviour { return x.proc(name).b }

// Objects are the objects the fake service still owns.
func (x *Executor) Objects(name string) []Object { return x.proc(name).objects }

// AddObject gives the service a new object, as a job would create one.
func (x *Executor) AddObject(name string, o Object) {
	p := x.proc(name)
	p.objects = append(p.objects, o)
}

// SetRunning starts or stops the daemon by hand, as the owner of a manual
// service would: no op, no event; the engine learns it from its next
// fingerprint.
func (x *Executor) SetRunning(name string, running bool) {
	p := x.proc(name)
	if p.running != running {
		p.running = running
		p.populated = p.populated && running
		p.gen++
		p.startAt = x.sched.Now()
	}
}

// Crash kills the service's daemon now, as a crash would, and posts the
// container-emptied event.
func (x *Executor) Crash(name string) {
	p := x.proc(name)
	if !p.running {
		return
	}
	p.running = false
	p.stray = false
	p.populated = false
	p.gen++
	x.sched.Post(engine.ContainerEmptied{Service: p.target})
}

// outcome picks the n-th outcome of op's script.
// opIndex numbers the ops for the per-op counters (0 for an unknown op).
func opIndex(op protocol.Op) int {
	switch op {
	case protocol.OpFingerprint:
		return 1
	case protocol.OpStart:
		return 2
	case protocol.OpStop:
		return 3
	case protocol.OpStatus:
		return 4
	case protocol.OpReady:
		return 5
	case protocol.OpListOwned:
		return 6
	case protocol.OpDestroy:
		return 7
	}
	return 0
}

func (b *Behaviour) script(op protocol.Op) OpScript {
	if len(b.Ops) == 0 {
		return OpScript{}
	}
	return b.Ops[op]
}

func (s OpScript) duration(n int) time.Duration {
	if len(s.Durations) == 0 {
		return s.Duration
	}
	return s.Durations[min(n, len(s.Durations)-1)]
}

func (s OpScript) outcome(n int) Outcome {
	if len(s.Outcomes) == 0 {
		return OK
	}
	if n >= len(s.Outcomes) {
		return s.Outcomes[len(s.Outcomes)-1]
	}
	return s.Outcomes[n]
}

// Run simulates op: its effect on the fake process happens when it starts,
// its OpDone is due after its scripted duration (or at its timeout).
func (x *Executor) Run(op engine.RunOp) {
	p := x.procOfOp(&op)
	name := p.name
	sc := p.b.script(op.Op)
	n := p.calls[opIndex(op.Op)]
	p.calls[opIndex(op.Op)]++
	out := sc.outcome(n)
	if op.Op == protocol.OpStop && p.b.StopIgnored && p.running {
		out = Hang // the daemon ignores SIGTERM: stop runs into its timeout
	}
	now := x.sched.Now()
	d := sc.duration(n)
	var o engine.Outcome
	switch out {
	case Timeout, Hang:
		d = op.Timeout
		o = engine.Outcome{Failure: engine.FailTimeout, Message: fmt.Sprintf("killed after %v", op.Timeout)}
	case Fail:
		o = engine.Outcome{Failure: engine.FailOp, Message: "exit status 1"}
	case Protocol:
		o = engine.Outcome{Failure: engine.FailProtocol, Message: "not exactly one JSON document"}
	case Prepare:
		o = engine.Outcome{Failure: engine.FailPrepare, Message: "write settings: no space left on device"}
	}
	if d > op.Timeout && op.Timeout > 0 && o.Failure == engine.FailNone {
		d = op.Timeout
		o = engine.Outcome{Failure: engine.FailTimeout, Message: fmt.Sprintf("killed after %v", op.Timeout)}
	}
	if o.Failure == engine.FailNone {
		o.Result = x.result(p, op, out, now)
		// Only a container that tells of its processes (a cgroup) can
		// say it is occupied.
		o.Occupied = op.Op == protocol.OpFingerprint && p.stray && p.b.Contained
	} else if op.Op == protocol.OpStart && out != Fail && out != Protocol && out != Prepare {
		// A start that hangs may still have started its daemon.
		x.started(p, name, now)
	}
	if !op.Target.Probe {
		// The container's news of the op comes before its OpDone, as the
		// executor posts it at the op's end.
		x.containerAfterOp(p, now.Add(d))
	}
	x.sched.At(now.Add(d), x.done(op.ID, o))
}

func (x *Executor) done(id engine.OpID, o engine.Outcome) *engine.OpDone {
	var d *engine.OpDone
	if n := len(x.free); n > 0 {
		d, x.free = x.free[n-1], x.free[:n-1]
	} else {
		d = new(engine.OpDone)
	}
	*d = engine.OpDone{ID: id, Outcome: o}
	return d
}

// Reuse takes back ev, once the engine has stepped it, if it is a
// completion: a later op's completion is written over it. The world hands
// back every event it steps, so whoever keeps an OpDone of the world past
// its step keeps a copy.
func (x *Executor) Reuse(ev engine.Event) {
	if d, ok := ev.(*engine.OpDone); ok {
		x.free = append(x.free, d)
	}
}

// containerAfterOp posts what a contained service's container tells at
// the end of an op: populated when the op left the daemon running,
// emptied when the op (a stop) ended it.
func (x *Executor) containerAfterOp(p *proc, at time.Time) {
	held := p.running || p.stray
	switch {
	case !p.b.Contained && !p.populated:
	case held && !p.populated:
		p.populated = true
		x.sched.At(at, engine.ContainerPopulated{Service: p.target})
	case !held && p.populated:
		p.populated = false
		x.sched.At(at, engine.ContainerEmptied{Service: p.target})
	}
}

func (x *Executor) started(p *proc, name string, now time.Time) {
	if !p.running {
		p.starts++
	}
	p.running = true
	p.gen++
	p.startAt = now
	p.polls = 0
	if p.b.CrashAfter > 0 {
		gen := p.gen
		x.sched.At(now.Add(p.b.CrashAfter), crashEvent(x, name, gen))
	}
}

// CrashDue is the fake's own event: the daemon started at generation Gen
// dies now, unless it was stopped or restarted since. The simulator hands
// it to Intercept, never to the engine.
type CrashDue struct {
	Service string
	Gen     int
}

// EventName makes CrashDue travel on the same scheduler as engine events.
func (CrashDue) EventName() string { return "fake-crash" }

func crashEvent(_ *Executor, name string, gen int) engine.Event {
	return CrashDue{Service: name, Gen: gen}
}

// Intercept handles the fake's own events and reports whether ev was one;
// the simulator's loop calls it before stepping the engine.
func (x *Executor) Intercept(ev engine.Event) bool {
	c, ok := ev.(CrashDue)
	if !ok {
		return false
	}
	if p := x.proc(c.Service); p.running && p.gen == c.Gen {
		x.Crash(c.Service)
	}
	return true
}

func (x *Executor) result(p *proc, op engine.RunOp, out Outcome, now time.Time) protocol.Result {
	name := p.name
	r := protocol.Result{Op: op.Op}
	switch op.Op {
	case protocol.OpFingerprint:
		healthy := p.b.Healthy == nil || *p.b.Healthy
		fp := &protocol.Fingerprint{Healthy: healthy, Pools: p.b.Pools}
		if !healthy {
			fp.Message = "scripted unhealthy"
		}
		if out == NotReady {
			fp.Healthy = false
			fp.Message = "scripted unhealthy"
		}
		if !op.Target.Probe {
			running := p.running
			fp.Running = &running
			if p.b.MemGB > 0 {
				fp.Reserve = &protocol.Reserve{MemGB: p.b.MemGB}
			}
		}
		r.Fingerprint = fp
	case protocol.OpStart:
		changed := !p.running
		if p.stray {
			p.doubles++
		}
		if out != Exited {
			x.started(p, name, now)
		}
		r.OpResult = &protocol.OpResult{OK: true, Changed: changed}
	case protocol.OpStop:
		changed := p.running || p.stray
		p.running = false
		p.stray = false // what a stop leaves in the container is killed
		p.gen++
		r.OpResult = &protocol.OpResult{OK: true, Changed: changed, Escalated: out == Escalated}
	case protocol.OpStatus, protocol.OpReady:
		if op.Op == protocol.OpReady {
			p.polls++
		}
		ready := p.running && p.polls > p.b.ReadyAfterPolls && !now.Before(p.startAt.Add(p.b.ReadyAfter)) && out != NotReady
		if op.Op == protocol.OpStatus {
			ready = p.running && out != NotReady
		}
		r.Status = statuses[b2i(p.running)*2+b2i(ready)]
	case protocol.OpListOwned:
		list := &protocol.OwnedList{}
		for _, o := range p.objects {
			list.Objects = append(list.Objects,
				protocol.Object{ID: o.ID, Kind: kindOr(o.Kind), Labels: o.Labels, CreatedAt: o.CreatedAt, Busy: o.Busy})
		}
		r.OwnedList = list
	case protocol.OpDestroy:
		id := op.Args[0]
		force := len(op.Args) > 1 && op.Args[1] == "--force"
		changed := false
		for i, o := range p.objects {
			if o.ID == id && (!o.Stubborn || force) {
				p.objects = append(p.objects[:i], p.objects[i+1:]...)
				changed = true
				break
			}
		}
		r.OpResult = &protocol.OpResult{OK: true, Changed: changed}
	}
	return r
}

// statuses are the four possible status results, shared: results are
// read-only, and status is the most frequent op of a simulation.
var statuses = [4]*protocol.Status{
	{}, {Ready: true}, {Running: true}, {Running: true, Ready: true},
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func kindOr(k string) string {
	if k == "" {
		return protocol.KindOther
	}
	return k
}

// Kill ends the daemon, as a kill of its container does.
func (x *Executor) Kill(service engine.Target) {
	p := x.procOf(service)
	p.running = false
	p.stray = false
	p.frozen = false
	p.gen++
	p.kills++
	if p.populated {
		p.populated = false
		x.sched.Post(engine.ContainerEmptied{Service: p.target})
	}
}

// Freeze marks the daemon frozen.
func (x *Executor) Freeze(service engine.Target) { x.procOf(service).frozen = true }

// Thaw marks it running again.
func (x *Executor) Thaw(service engine.Target) { x.procOf(service).frozen = false }

// Frozen reports whether the fake service is frozen.
func (x *Executor) Frozen(service string) bool { return x.proc(service).frozen }

// Advance lets the daemons live to until while svcrun stands still (a
// pause): a daemon whose scripted crash falls before then dies at its
// time, its container-emptied event pending at that time, late, for
// svcrun to take once it runs again. Its CrashDue, still pending, is then
// stale. It returns the services whose daemon so died.
func (x *Executor) Advance(until time.Time) (died []string) {
	names := make([]string, 0, len(x.procs))
	for n := range x.procs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := x.procs[n]
		if !p.running || p.b.CrashAfter <= 0 {
			continue
		}
		at := p.startAt.Add(p.b.CrashAfter)
		if at.After(until) || !at.After(x.sched.Now()) {
			continue // a crash due now is its pending CrashDue's
		}
		p.running, p.stray, p.populated = false, false, false
		p.gen++
		x.sched.At(at, engine.ContainerEmptied{Service: p.target})
		died = append(died, n)
	}
	return died
}

// Rebind moves the executor to a new scheduler, as when the agent restarts:
// completions of ops in flight are lost with the old agent, while the fake
// daemons go on, so their pending crashes are scheduled again. A container
// the old agent left frozen is thawed, as svcrun's container manager does
// when it takes the containers over, so that ops can run in it.
func (x *Executor) Rebind(sched *clockwork.Virtual[engine.Event]) {
	x.sched = sched
	names := make([]string, 0, len(x.procs))
	for n := range x.procs {
		names = append(names, n)
	}
	sort.Strings(names)
	now := sched.Now()
	for _, n := range names {
		p := x.procs[n]
		p.frozen = false
		// The new agent's container watch tells of a daemon again at the
		// end of its first op.
		p.populated = false
		if p.running && p.b.CrashAfter > 0 {
			at := p.startAt.Add(p.b.CrashAfter)
			if at.Before(now) {
				at = now
			}
			sched.At(at, CrashDue{Service: n, Gen: p.gen})
		}
	}
}
