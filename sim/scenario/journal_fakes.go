package scenario

// What the fakes of a replayed journal do: each op's outcome and
// duration, call by call, and the changes of a fake (a silent death, a
// new fingerprint, an object) just before the op that saw them.

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/fakes"
	"github.com/oarbank/svcrun/protocol"
	"github.com/oarbank/svcrun/sim"
)

// script is what the scenario says of one op of one fake.
type script struct {
	durations []time.Duration // by call; -1 while the op is in flight
	outcomes  []fakes.Outcome
}

// fingerprintSays is what a fake's fingerprint reports.
type fingerprintSays struct {
	pools   map[string]int64
	memGB   float64
	healthy bool
}

// ownedObject is an object a fake owns: its `object` input, and whether
// it survives destroys without --force.
type ownedObject struct {
	input    int // in converter.inputs
	stubborn bool
}

// setDuration records the n-th call of op on a fake.
func (c *converter) setDuration(name string, op protocol.Op, n int, d time.Duration, out fakes.Outcome) {
	if c.scripts[name] == nil {
		c.scripts[name] = map[protocol.Op]*script{}
	}
	s := c.scripts[name][op]
	if s == nil {
		s = &script{}
		c.scripts[name][op] = s
	}
	for len(s.durations) <= n {
		s.durations = append(s.durations, -1)
		s.outcomes = append(s.outcomes, fakes.OK)
	}
	s.durations[n] = d
	if out != "" {
		s.outcomes[n] = out
	}
}

// done takes an op's completion: the outcome and duration the fake must
// give that call of the op, and what the fake must have become before it
// ran (a daemon that died silently, a fingerprint that changed, an object
// that appeared). It returns the step's virtual time, which for an op
// killed at its timeout is the timeout's.
func (c *converter) done(l sim.JournalLine, at time.Duration, d engine.OpDone) (time.Duration, error) {
	run, ok := c.ops[d.ID]
	if !ok {
		return 0, unsayable(l, "the completion of op #%d, which the engine did not start (or which a restart lost)", d.ID)
	}
	delete(c.ops, d.ID)
	name := run.target.String()
	o := d.Outcome
	out := fakes.OK
	switch o.Failure {
	case engine.FailOp:
		out = fakes.Fail
	case engine.FailProtocol:
		out = fakes.Protocol
	case engine.FailTimeout:
		out = fakes.Timeout
		// The fake's op ends at its timeout.
		if t := run.start + run.timeout; t >= c.now {
			at = t
		} else {
			return 0, unsayable(l,
				"op #%d was killed %v after its start, past its timeout %v, and steps came in between", d.ID,
				at-run.start, run.timeout)
		}
	case engine.FailPrepare:
		out = fakes.Prepare
	case engine.FailSpawn:
		return 0, unsayable(l, "op #%d could not be spawned (%s): the scenario language has no spawn failure", d.ID,
			o.Message)
	case engine.FailNone:
		var err error
		if out, err = c.result(l, run, o.Result); err != nil {
			return 0, err
		}
	}
	if out == fakes.OK && (run.op == protocol.OpStart || run.op == protocol.OpStop) && o.Result.OpResult == nil {
		return 0, unsayable(l, "a %s op succeeded without a result", run.op)
	}
	// What the fake's op does to its daemon, as it will in the scenario
	// (when it starts: a container that emptied since has the last word).
	switch {
	case run.op == protocol.OpStart && (out == fakes.OK || out == fakes.Timeout):
		c.running[name] = !c.emptiedSince(name, run)
	case run.op == protocol.OpStop && (out == fakes.OK || out == fakes.Escalated):
		c.running[name] = false
	}
	c.setDuration(name, run.op, run.call, at-run.start, out)
	return at, nil
}

// emptiedSince says whether the service's container emptied while the op
// ran.
// untouched says whether nothing before op run could have changed the
// fake daemon: no start or stop ran on it, its container never emptied,
// and no op looked at it. Its state then is the one it began with.
func (c *converter) untouched(name string, run opRun) bool {
	_, emptied := c.emptiedStep[name]
	return !emptied && !c.looked[name] && c.calls[name][protocol.OpStart] == 0 && c.calls[name][protocol.OpStop] == 0
}

func (c *converter) emptiedSince(name string, run opRun) bool {
	k, ok := c.emptiedStep[name]
	return ok && k > run.step
}

// change is an input that changes a fake as late as it can before the
// step that ran op run, so that the op sees it and the ops before it do
// not. An input is played only between the inputs of an instant, after
// all it caused: before the input that led to that step (the step itself,
// or the last input of its instant before it), or else just before the
// instant.
func (c *converter) change(l sim.JournalLine, run opRun, format string, args ...any) error {
	text := fmt.Sprintf(format, args...)
	at, j := c.changeSlot(run)
	if j == 0 || at < 0 {
		return unsayable(l, "%s would have to happen before svcrun's boot", text)
	}
	c.inputs = append(c.inputs, timedInput{at: at, seq: 2*j - 1, text: text})
	return nil
}

// changeSlot is where change puts an input for op run: its time, and the
// step it goes before.
func (c *converter) changeSlot(run opRun) (time.Duration, int) {
	k := run.step
	at := c.stepAt[k]
	j := k
	for j > 0 && !c.stepInput[j] && c.stepAt[j-1] == at {
		j--
	}
	if !c.stepInput[j] {
		at -= time.Nanosecond
	}
	return at, j
}

// observe makes the fake daemon running or not when the op ran, as the op
// found it: a daemon that died silently, or was started by hand.
func (c *converter) observe(l sim.JournalLine, run opRun, running bool) error {
	name := run.target.String()
	defer func() { c.looked[name] = true }()
	if lost, ok := c.lost[name]; ok {
		// A start or stop lost in a restart ended so that its daemon is
		// as this op finds it.
		delete(c.lost, name)
		started := lost.op == protocol.OpStart
		if c.running[name] != running && !c.emptiedSince(name, lost) {
			c.setDuration(name, lost.op, lost.call, lostDuration(lost),
				map[bool]fakes.Outcome{true: fakes.Fail, false: fakes.OK}[running != started])
			c.running[name] = running
			return nil
		}
	}
	if run.running == running {
		return nil
	}
	if k, ok := c.emptiedStep[name]; ok && k <= run.step {
		if _, j := c.changeSlot(run); k >= j {
			// The op ran in the step of its container's emptying, or
			// after it with no input between the two (a cleanup stop
			// that still found a dying daemon): nothing can come
			// between them, so the fake answers as it is; the
			// comparison of the steps says whether that matters.
			return nil
		}
	}
	// The fake is made so from just before the op; unless its container
	// emptied since, that is how it still is.
	if !c.emptiedSince(name, run) {
		c.running[name] = running
	}
	if running && c.untouched(name, run) {
		c.runHead[name] = true // running from before svcrun's boot
		return nil
	}
	return c.change(l, run, "%s %s", map[bool]string{true: "owner-start", false: "owner-stop"}[running], name)
}

// result maps a successful op's result to the fake's outcome.
func (c *converter) result(l sim.JournalLine, run opRun, r protocol.Result) (fakes.Outcome, error) {
	name := run.target.String()
	switch run.op {
	case protocol.OpFingerprint:
		fp := r.Fingerprint
		if fp == nil {
			return "", unsayable(l, "a fingerprint without its result")
		}
		if !run.target.Probe {
			if fp.Running == nil {
				return "", unsayable(l, "the fingerprint of service %s does not say whether it runs", name)
			}
			if err := c.observe(l, run, *fp.Running); err != nil {
				return "", err
			}
		}
		says := fingerprintSays{pools: fp.Pools, healthy: fp.Healthy}
		if fp.Reserve != nil {
			says.memGB = fp.Reserve.MemGB
		}
		if run.target.Probe && (len(says.pools) > 0 || says.memGB > 0) {
			return "", unsayable(l, "probe %s reports pools or memory: a scenario's probes report health only", name)
		}
		prev, seen := c.fp[name]
		c.fp[name] = says
		switch {
		case !seen:
			c.fpHead[name] = says
		case !reflect.DeepEqual(prev, says):
			if err := c.change(l, run, "behaviour %s %s", name, says.args()); err != nil {
				return "", err
			}
		}
		return fakes.OK, nil
	case protocol.OpStart:
		if r.OpResult != nil {
			// A start that changed nothing found the daemon running.
			if err := c.observe(l, run, !r.OpResult.Changed); err != nil {
				return "", err
			}
		}
		return fakes.OK, nil
	case protocol.OpStop:
		if r.OpResult == nil {
			return fakes.OK, nil
		}
		if err := c.observe(l, run, r.OpResult.Changed); err != nil {
			return "", err
		}
		if r.OpResult.Escalated {
			return fakes.Escalated, nil
		}
		return fakes.OK, nil
	case protocol.OpStatus, protocol.OpReady:
		st := r.Status
		if st == nil {
			return "", unsayable(l, "a %s op without its status", run.op)
		}
		if st.Ready && !st.Running {
			return "", unsayable(l, "%s said ready but not running: a scenario's fakes are ready only while running", name)
		}
		if err := c.observe(l, run, st.Running); err != nil {
			return "", err
		}
		if st.Running && !st.Ready {
			return fakes.NotReady, nil
		}
		return fakes.OK, nil
	case protocol.OpListOwned:
		return fakes.OK, c.owned(l, run, r.OwnedList)
	case protocol.OpDestroy:
		if r.OpResult == nil || len(run.args) == 0 {
			return "", unsayable(l, "a destroy op without its result or its object")
		}
		name, id := run.target.String(), run.args[0]
		force := slices.Contains(run.args[1:], "--force")
		o := c.objects[name][id]
		switch {
		case o == nil:
		case r.OpResult.Changed && !force && o.stubborn:
			return "", unsayable(l,
				"object %s of %s went with a destroy without --force, after surviving one: a scenario's object is "+
					"stubborn or not", id, name)
		case r.OpResult.Changed:
			delete(c.objects[name], id)
		case force:
			return "", unsayable(l,
				"object %s of %s survived a destroy --force: the scenario language cannot say that", id, name)
		case !o.stubborn:
			// It survives destroys without --force: it was stubborn
			// from the start.
			o.stubborn = true
			c.inputs[o.input].text += " stubborn"
		}
		return fakes.OK, nil
	}
	return "", unsayable(l, "op %s: the scenario's fakes do not run it", run.op)
}

func (f fingerprintSays) isDefault() bool {
	return f.healthy && len(f.pools) == 0 && f.memGB == 0
}

// args writes a fingerprint as behaviour keys.
func (f fingerprintSays) args() string {
	var pools []string
	for _, n := range slices.Sorted(mapKeys(f.pools)) {
		pools = append(pools, fmt.Sprintf("%s:%d", n, f.pools[n]))
	}
	return fmt.Sprintf("pools=%s mem_gb=%v healthy=%v", strings.Join(pools, ","), f.memGB, f.healthy)
}

// owned makes the fake own what the list says: an object it did not
// own appears just before the op; one it owned must not vanish unseen.
func (c *converter) owned(l sim.JournalLine, run opRun, list *protocol.OwnedList) error {
	name := run.target.String()
	if list == nil {
		return unsayable(l, "a list_owned op without its list")
	}
	if c.objects[name] == nil {
		c.objects[name] = map[string]*ownedObject{}
	}
	listed := map[string]bool{}
	for _, o := range list.Objects {
		listed[o.ID] = true
		if c.objects[name][o.ID] != nil {
			continue
		}
		text, err := objectText(name, o, c.t0)
		if err != nil {
			return unsayable(l, "%v", err)
		}
		c.objects[name][o.ID] = &ownedObject{input: len(c.inputs)}
		if err := c.change(l, run, "%s", text); err != nil {
			return err
		}
	}
	for id := range c.objects[name] {
		if !listed[id] {
			return unsayable(l, "object %s of %s is gone without a destroy: the scenario language cannot say that", id, name)
		}
	}
	return nil
}

func objectText(service string, o protocol.Object, t0 time.Time) (string, error) {
	if err := plainID(o.ID); err != nil {
		return "", fmt.Errorf("object %v", err)
	}
	parts := []string{"object", service, "id=" + o.ID}
	if o.Kind != "" && o.Kind != protocol.KindOther {
		parts = append(parts, "kind="+o.Kind)
	}
	keys := map[string]string{protocol.LabelAttemptID: "attempt", protocol.LabelNode: "node",
		protocol.LabelService: "service"}
	for _, k := range slices.Sorted(mapKeys(o.Labels)) {
		key, ok := keys[k]
		if !ok {
			return "", fmt.Errorf("object %s has label %s: a scenario's objects carry only the three oarbank labels", o.ID, k)
		}
		if err := plainID(o.Labels[k]); err != nil {
			return "", fmt.Errorf("object %s label %s %v", o.ID, k, err)
		}
		parts = append(parts, key+"="+o.Labels[k])
	}
	if len(o.Labels) == 0 {
		parts = append(parts, "nolabels")
	}
	if !o.CreatedAt.IsZero() {
		d := o.CreatedAt.Sub(t0)
		if d < 0 {
			return "", fmt.Errorf("object %s was created before the boot: a scenario's objects are created after it", o.ID)
		}
		parts = append(parts, fmt.Sprintf("created=%v", d))
	}
	if o.Busy {
		parts = append(parts, "busy")
	}
	return strings.Join(parts, " "), nil
}
