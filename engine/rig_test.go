package engine

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/protocol"
)

// rig is the one way the engine's own tests drive it: an engine booted
// from module.toml texts and stepped by hand, one event at a time, on a
// clock of the test's. It keeps what a driver keeps (the pending timers,
// the last answer about each lease) and what the last step did, so that a
// test asks "did an op run", "is a timer set", and completes an op. The
// histories the scenario language can say are scenarios instead
// (scenarios/README.md); a test here looks at what a trace does not show
// (the status, a reap round's report, the engine's own fields) or steps
// the engine where no world of fakes can put it.
type rig struct {
	t   tb
	e   *Engine
	now time.Time
	// out is what the last step did: its effects, kept past the next Step,
	// and those of the ops world answered within its instant.
	out     []Effect
	timers  map[TimerKey]time.Time // pending, as a driver keeps them
	answers map[LeaseID]Effect     // the last answer about each lease
	stored  map[LeaseID]bool       // the leases the store holds
	// lines is every effect since the boot, as traces show them.
	lines []string
	world func(Effect) Event
}

// tb is what the rig needs of a test: a *testing.T, or a property test's
// *rapid.T.
type tb interface {
	Helper()
	Fatalf(format string, args ...any)
}

// rigSetup is the node a rig boots, when the defaults do not do.
type rigSetup struct {
	cfg   Config // rigConfig() when zero
	state State  // what the store kept
	// world, when set, carries out each effect as it comes and returns
	// the event that answers it (an op's OpDone), if any, which is stepped
	// within the same instant; without it every op waits for the test.
	world func(Effect) Event
}

// rigConfig is the rig's node: 4 GB, 4 ops at once, default periods.
func rigConfig() Config {
	return Config{NodeID: "n1", Platform: "linux", MemoryBudgetGB: 4, MaxConcurrentOps: 4}
}

// rigEpoch is when a rig boots.
var rigEpoch = time.Unix(1_000_000, 0)

// newRig boots an engine on rigConfig with the modules given, enabled;
// the boot's effects are in r.out.
func newRig(t tb, tomls ...string) *rig {
	t.Helper()
	return rigSetup{}.boot(t, tomls...)
}

// boot boots an engine on the setup's node with the modules given.
func (s rigSetup) boot(t tb, tomls ...string) *rig {
	t.Helper()
	if s.cfg.NodeID == "" {
		s.cfg = rigConfig()
	}
	r := &rig{t: t, e: New(), now: rigEpoch, timers: map[TimerKey]time.Time{}, answers: map[LeaseID]Effect{},
		stored: map[LeaseID]bool{}, world: s.world}
	for _, l := range s.state.Leases {
		r.stored[l.ID] = true
	}
	r.stepAt(rigEpoch, Boot{Config: s.cfg, Modules: r.modules(tomls...), State: s.state})
	return r
}

// modules parses module.toml texts into enabled module specs.
func (r *rig) modules(tomls ...string) []ModuleSpec {
	r.t.Helper()
	specs := make([]ModuleSpec, 0, len(tomls))
	for _, text := range tomls {
		m, err := manifest.Parse("module.toml", []byte(text))
		if err != nil {
			r.t.Fatalf("%v", err)
		}
		specs = append(specs, ModuleSpec{Module: m, Enabled: true})
	}
	return specs
}

// step takes ev a millisecond after the last step: two events of the
// world never share an instant. It returns r.out.
func (r *rig) step(ev Event) []Effect {
	return r.stepAt(r.now.Add(time.Millisecond), ev)
}

// stepAt takes ev at time at (not before the last step), then the events
// the world answers its effects with, within the same instant.
func (r *rig) stepAt(at time.Time, ev Event) []Effect {
	if at.After(r.now) {
		r.now = at
	}
	r.out = r.out[:0:0]
	for queue := []Event{ev}; len(queue) > 0; queue = queue[1:] {
		for _, f := range kept(r.e.Step(r.now, queue[0])) {
			r.out = append(r.out, f)
			r.lines = append(r.lines, FormatEffect(f))
			switch f := f.(type) {
			case *SetTimer:
				r.timers[f.Key] = f.At
			case *CancelTimer:
				delete(r.timers, f.Key)
			case PutLease:
				r.stored[f.Lease.ID] = true
			case DeleteLease:
				delete(r.stored, f.Lease)
			}
			switch f.(type) {
			case Admitted, AlreadyHeld, Rejected, Renewed, Released, LeaseUnknown, Expired:
				r.answers[LeaseOf(f)] = f
			}
			if r.world != nil {
				if answer := r.world(f); answer != nil {
					queue = append(queue, answer)
				}
			}
		}
	}
	return r.out
}

// done completes an op with its result.
func (r *rig) done(id OpID, res protocol.Result) {
	r.step(&OpDone{ID: id, Outcome: Outcome{Result: res}})
}

// fail completes an op that failed (exit status, message).
func (r *rig) fail(id OpID, msg string) {
	r.step(&OpDone{ID: id, Outcome: Outcome{Failure: FailOp, Message: msg}})
}

// runs is the last step's ops, in order.
func (r *rig) runs() []*RunOp {
	var ops []*RunOp
	for _, f := range r.out {
		if op, ok := f.(*RunOp); ok {
			ops = append(ops, op)
		}
	}
	return ops
}

// ran says whether the last step started op on the service or probe named.
func (r *rig) ran(name string, op protocol.Op) bool {
	for _, run := range r.runs() {
		if run.Target.String() == name && run.Op == op {
			return true
		}
	}
	return false
}

// op is the id of the last step's op on the service or probe named,
// failing the test without one.
func (r *rig) op(name string, op protocol.Op) OpID {
	r.t.Helper()
	for _, run := range r.runs() {
		if run.Target.String() == name && run.Op == op {
			return run.ID
		}
	}
	r.t.Fatalf("no %s of %s in %v", op, name, r.out)
	return 0
}

// timer is the last step's SetTimer of kind, failing without one.
func (r *rig) timer(kind TimerKind) SetTimer {
	r.t.Helper()
	for _, f := range r.out {
		if s, ok := f.(*SetTimer); ok && s.Key.Kind == kind {
			return *s
		}
	}
	r.t.Fatalf("no %s timer set in %v", kind, r.out)
	return SetTimer{}
}

// setsTimer says whether the last step set a timer of kind.
func (r *rig) setsTimer(kind TimerKind) bool {
	for _, f := range r.out {
		if s, ok := f.(*SetTimer); ok && s.Key.Kind == kind {
			return true
		}
	}
	return false
}

// fire steps the timer's Fire at its time, or a millisecond after the last
// step if that is later (a timer fires late, never early).
func (r *rig) fire(s SetTimer) {
	at := r.now.Add(time.Millisecond)
	if s.At.After(at) {
		at = s.At
	}
	delete(r.timers, s.Key)
	r.stepAt(at, Fire{Timer: s.Key})
}

// advance fires the pending timers due within d, in the order of their
// times (and slots, at one instant), then moves the clock to its end.
func (r *rig) advance(d time.Duration) {
	end := r.now.Add(d)
	for {
		var next TimerKey
		var at time.Time
		for k, t := range r.timers {
			if !t.After(end) && (at.IsZero() || t.Before(at) || t.Equal(at) && k.Slot < next.Slot) {
				next, at = k, t
			}
		}
		if at.IsZero() {
			break
		}
		delete(r.timers, next)
		r.stepAt(at, Fire{Timer: next})
	}
	r.now = end
}

// effect is the last step's first effect of like's type, failing without
// one.
func (r *rig) effect(like Effect) Effect {
	r.t.Helper()
	for _, f := range r.out {
		if reflect.TypeOf(f) == reflect.TypeOf(like) {
			return f
		}
	}
	r.t.Fatalf("no %T in %v", like, r.out)
	return nil
}

// noted is the last step's notes containing text.
func (r *rig) noted(text string) []Note {
	var notes []Note
	for _, f := range r.out {
		if n, ok := f.(Note); ok && strings.Contains(n.Text, text) {
			notes = append(notes, n)
		}
	}
	return notes
}

// count is how many effects since the boot, as traces show them, contain
// text; since counts from the index of r.lines a test took before.
func (r *rig) count(since int, text string) int {
	n := 0
	for _, l := range r.lines[since:] {
		if strings.Contains(l, text) {
			n++
		}
	}
	return n
}

// history is the effects since line since, for a failure's message.
func (r *rig) history(since int) string { return strings.Join(r.lines[since:], "\n") }

// service is the status of the service named, failing without it.
func (r *rig) service(name string) ServiceStatus {
	r.t.Helper()
	for _, s := range r.e.Status().Services {
		if s.Name == name {
			return s
		}
	}
	r.t.Fatalf("no service %s in the status", name)
	return ServiceStatus{}
}

// kept copies effects as a test that looks at them after the engine's next
// Step must: the engine writes its pointer effects over.
func kept(effects []Effect) []Effect {
	out := make([]Effect, len(effects))
	for i, f := range effects {
		switch f := f.(type) {
		case *RunOp:
			c := *f
			out[i] = &c
		case *SetTimer:
			c := *f
			out[i] = &c
		case *CancelTimer:
			c := *f
			out[i] = &c
		default:
			out[i] = f
		}
	}
	return out
}

// answering is a world that answers every op within its instant: with
// results[op] when the test set it (of[name][op] for the service or probe
// named), else as a healthy daemon does (ok and changed; status and ready
// running and ready; a fingerprint running from a start until a stop or a
// kill, offering 2 tokens of pool "slots").
type answering struct {
	results map[protocol.Op]protocol.Result
	of      map[string]map[protocol.Op]protocol.Result
	// fp is what the fingerprint of the service or probe named says
	// besides whether it runs.
	fp      map[string]protocol.Fingerprint
	running map[string]bool
}

func newAnswering() *answering {
	return &answering{results: map[protocol.Op]protocol.Result{}, of: map[string]map[protocol.Op]protocol.Result{},
		fp: map[string]protocol.Fingerprint{}, running: map[string]bool{}}
}

// set makes op of the service or probe named answer res.
func (a *answering) set(name string, op protocol.Op, res protocol.Result) {
	if a.of[name] == nil {
		a.of[name] = map[protocol.Op]protocol.Result{}
	}
	a.of[name][op] = res
}

// carry is the rig's world.
func (a *answering) carry(f Effect) Event {
	if k, ok := f.(Kill); ok {
		a.running[k.Service.String()] = false
	}
	op, ok := f.(*RunOp)
	if !ok {
		return nil
	}
	name := op.Target.String()
	res := a.resultOf(name, op.Op)
	switch op.Op {
	case protocol.OpStart:
		a.running[name] = res.OpResult == nil || res.OpResult.OK
	case protocol.OpStop:
		a.running[name] = false
	}
	return &OpDone{ID: op.ID, Outcome: Outcome{Result: res}}
}

func (a *answering) resultOf(name string, op protocol.Op) protocol.Result {
	if res, ok := a.of[name][op]; ok {
		return res
	}
	return a.result(name, op)
}

func (a *answering) result(name string, op protocol.Op) protocol.Result {
	if res, ok := a.results[op]; ok {
		return res
	}
	switch op {
	case protocol.OpFingerprint:
		running := a.running[name]
		if fp, ok := a.fp[name]; ok {
			fp.Running = &running
			return protocol.Result{Op: op, Fingerprint: &fp}
		}
		return protocol.Result{Op: op,
			Fingerprint: &protocol.Fingerprint{Healthy: true, Running: &running, Pools: map[string]int64{"slots": 2}}}
	case protocol.OpStatus, protocol.OpReady:
		return protocol.Result{Op: op, Status: &protocol.Status{Running: true, Ready: true}}
	}
	return protocol.Result{Op: op, OpResult: &protocol.OpResult{OK: true, Changed: true}}
}

// Results the tests complete ops with.
var (
	fpHealthy = protocol.Result{Op: protocol.OpFingerprint, Fingerprint: &protocol.Fingerprint{Healthy: true}}
	readyNow  = protocol.Result{Op: protocol.OpReady, Status: &protocol.Status{Running: true, Ready: true}}
	notReady  = protocol.Result{Op: protocol.OpStatus, Status: &protocol.Status{Running: true}}
	opOK      = &protocol.OpResult{OK: true, Changed: true}
)

// fingerprinted is a healthy fingerprint saying whether the service runs.
func fingerprinted(running bool) protocol.Result {
	return protocol.Result{Op: protocol.OpFingerprint,
		Fingerprint: &protocol.Fingerprint{Healthy: true, Running: &running}}
}

// TestRig: the rig keeps what a driver keeps and what a step did, so that
// the tests built on it can fail.
func TestRig(t *testing.T) {
	cfg := rigConfig()
	cfg.StatusPeriod, cfg.FingerprintPeriod = time.Hour, time.Hour // no poll before the idle stop
	r := rigSetup{cfg: cfg}.boot(t, `
[module]
name = "m"
version = "1"
[[services]]
name = "kv"
exec = ["bin/kv"]
capabilities = ["kv"]
idle_timeout_s = 10
`)
	fp := r.op("m/kv", protocol.OpFingerprint)
	if r.ran("m/kv", protocol.OpStart) || len(r.timers) == 0 {
		t.Fatalf("boot: a start, or no timer pending: %v", r.out)
	}
	r.done(fp, fingerprinted(false))
	r.step(Acquire{Lease: "l1", Attempt: "a1", Requirements: Requirements{Capabilities: []string{"kv"}},
		Wait: time.Minute})
	if r.answers["l1"] != nil || !r.ran("m/kv", protocol.OpStart) {
		t.Fatalf("a lease on a stopped service: answered %v, ops %v", r.answers["l1"], r.runs())
	}
	r.done(r.op("m/kv", protocol.OpStart), protocol.Result{Op: protocol.OpStart, OpResult: opOK})
	r.done(r.op("m/kv", protocol.OpReady), readyNow)
	if _, ok := r.answers["l1"].(Admitted); !ok {
		t.Fatalf("ready: l1 answered %v", r.answers["l1"])
	}
	r.done(r.op("m/kv", protocol.OpFingerprint), fingerprinted(true)) // the one after a start
	r.step(Release{Lease: "l1"})
	idle := r.timer(TimerIdle)
	if got := idle.At.Sub(r.now); got != 10*time.Second || r.timers[idle.Key] != idle.At {
		t.Fatalf("idle timer in %v, pending %v", got, r.timers[idle.Key])
	}
	r.advance(15 * time.Second)
	if _, pending := r.timers[idle.Key]; pending || r.service("m/kv").State != "stopping" {
		t.Fatalf("15s later: idle timer pending %v, m/kv %s", pending, r.service("m/kv").State)
	}
}
