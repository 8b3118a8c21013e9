package conformance

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/internal/words"
	"github.com/oarbank/svcrun/protocol"
)

// checkDef is one check: its name, what it applies to, the checks that
// must have passed before it runs, and how it is judged: judge runs ops of
// its own; over judges every op of the target once the others have run.
type checkDef struct {
	name             string
	services, probes bool
	needs            []string
	judge            func(c *run) verdict
	over             func(ops []OpRun) (verdict, []OpRun)
}

// checks is the list of checks, in the order they run: output and timeouts
// last, since they judge the ops of all the others.
func checks() []checkDef {
	return []checkDef{
		{name: "fingerprint", services: true, probes: true, judge: checkFingerprint},
		{name: "lifecycle", services: true, judge: checkLifecycle},
		{name: "start-twice", services: true, needs: []string{"lifecycle"}, judge: checkStartTwice},
		{name: "stop-twice", services: true, needs: []string{"lifecycle"}, judge: checkStopTwice},
		{name: "stop-empties", services: true, needs: []string{"lifecycle"}, judge: checkStopEmpties},
		{name: "fingerprint-running", services: true, needs: []string{"lifecycle"}, judge: checkFingerprintRunning},
		{name: "list-owned-labels", services: true, needs: []string{"lifecycle"}, judge: checkLabels},
		{name: "destroy-unknown", services: true, needs: []string{"lifecycle"}, judge: checkDestroyUnknown},
		{name: "destroy-force", services: true, needs: []string{"lifecycle"}, judge: checkDestroyForce},
		{name: "process-group", services: true, over: checkProcessGroup},
		{name: "output", services: true, probes: true, over: checkOutput},
		{name: "timeouts", services: true, probes: true, over: checkTimeouts},
	}
}

// Names lists the checks a service (probe false) or a probe goes through,
// in order.
func Names(probe bool) []string {
	var out []string
	for _, d := range checks() {
		if d.appliesTo(probe) {
			out = append(out, d.name)
		}
	}
	return out
}

func (d checkDef) appliesTo(probe bool) bool {
	if probe {
		return d.probes
	}
	return d.services
}

// verdict is how a check ended.
type verdict struct {
	status  Status
	summary string
}

func pass(format string, args ...any) verdict {
	return verdict{Pass, fmt.Sprintf(format, args...)}
}

func fail(format string, args ...any) verdict {
	return verdict{Fail, fmt.Sprintf(format, args...)}
}

// run is one check of one service or probe under way.
type run struct {
	s       *session
	t       engine.Target
	check   string
	ops     []OpRun
	started bool // a start ran: the service is stopped afterwards
	job     *JobRun
}

// op runs an op and keeps its evidence.
func (c *run) op(op protocol.Op, args ...string) OpRun {
	if op == protocol.OpStart {
		c.started = true
	}
	r := c.s.run(c.t, c.check, op, args...)
	c.ops = append(c.ops, r)
	return r
}

// must runs an op that has to succeed. When it does not, the verdict of
// the check is returned: a failure, or a skip when the op timed out or
// broke the protocol, which the checks timeouts and output report.
func (c *run) must(op protocol.Op, args ...string) (OpRun, *verdict) {
	r := c.op(op, args...)
	switch r.failure {
	case engine.FailNone:
		return r, nil
	case engine.FailProtocol:
		return r, &verdict{Skip, fmt.Sprintf("%s broke the protocol (see output): %s", r.Op, r.Message)}
	case engine.FailTimeout:
		return r, &verdict{Skip, fmt.Sprintf("%s overran its timeout of %s (see timeouts)", r.Op, fmtMS(r.TimeoutMS))}
	}
	return r, &verdict{Fail, fmt.Sprintf("%s failed: %s", r.Op, r.Message)}
}

// startReady starts the service and polls ready as the agent does (at
// once, then every second) until it says ready, within start_timeout_s of
// the start's beginning. It returns a summary of both.
func (c *run) startReady() (string, *verdict) {
	began := time.Now()
	start, v := c.must(protocol.OpStart)
	if v != nil {
		return "", v
	}
	timeout := c.s.startTimeout(c.t)
	deadline := began.Add(timeout)
	for polls := 1; ; polls++ {
		r, v := c.must(protocol.OpReady)
		if v != nil {
			return "", v
		}
		st := r.result.Status
		if st.Ready {
			return fmt.Sprintf("%s, ready after %d poll%s (%s)", start.brief(), polls, words.Plural(polls),
				fmtMS(ms(time.Since(began)))), nil
		}
		wait := min(time.Second, time.Until(deadline))
		if wait > 0 && !c.s.sleep(wait) {
			return "", &verdict{Skip, "interrupted"}
		}
		if wait <= 0 {
			last := fmt.Sprintf("running %t, ready false", st.Running)
			if st.Message != "" {
				last += ": " + st.Message
			}
			return "", &verdict{Fail,
				fmt.Sprintf("%s, then not ready within start_timeout_s %s: %d poll%s, the last said %s", start.brief(),
					timeout, polls, words.Plural(polls), last)}
		}
	}
}

// checkFingerprint: fingerprint answers and changes nothing under the
// module data dir (every entry's type, mode, size, modification time and
// content). It runs while the service is stopped, before any other op
// but the preparation of the data dir.
func checkFingerprint(c *run) verdict {
	dir := c.s.node.ModuleDataDir(c.t.Module)
	if err := c.s.x.PrepareDataDir(c.t.Module); err != nil {
		return fail("the module data dir: %v", err)
	}
	before, err := snapshot(dir)
	if err != nil {
		return fail("%v", err)
	}
	r, v := c.must(protocol.OpFingerprint)
	after, err := snapshot(dir)
	if err != nil {
		return fail("%v", err)
	}
	if d := diff(before, after); d != "" {
		return fail("%s changed the module data dir %s: %s", r.brief(), dir, d)
	}
	if v != nil {
		return *v
	}
	fp := r.result.Fingerprint
	return pass("%s: healthy %t%s; the module data dir is unchanged (%d entries)", r.brief(), fp.Healthy,
		runningText(fp.Running), len(before))
}

func runningText(running *bool) string {
	if running == nil {
		return ""
	}
	return fmt.Sprintf(", running %t", *running)
}

// checkLifecycle: start, ready true within start_timeout_s, status running
// and ready, stop, status not running.
func checkLifecycle(c *run) verdict {
	up, v := c.startReady()
	if v != nil {
		return *v
	}
	st, v := c.must(protocol.OpStatus)
	if v != nil {
		return *v
	}
	if s := st.result.Status; !s.Running || !s.Ready {
		return fail("%s; then status said running %t, ready %t, want both true", up, s.Running, s.Ready)
	}
	stop, v := c.must(protocol.OpStop)
	if v != nil {
		return *v
	}
	after, v := c.must(protocol.OpStatus)
	if v != nil {
		return *v
	}
	if after.result.Status.Running {
		return fail("%s; %s; then status still said running", up, stop.brief())
	}
	return pass("%s; status running and ready; %s; status not running", up, stop.brief())
}

// checkStartTwice: a second start of the running service succeeds with
// changed false and leaves no second daemon: the processes of the
// container whose parent is outside it (daemons, not their workers) are
// the same before and after.
func checkStartTwice(c *run) verdict {
	if _, v := c.startReady(); v != nil {
		return *v
	}
	before := c.s.daemons(c.t)
	second, v := c.must(protocol.OpStart)
	if v != nil {
		return *v
	}
	after := c.s.daemons(c.t)
	var added []proc
	for _, p := range after {
		if !slices.ContainsFunc(before, func(q proc) bool { return q.pid == p.pid }) {
			added = append(added, p)
		}
	}
	var problems []string
	if second.result.OpResult.Changed {
		problems = append(problems, "the second start said changed true")
	}
	if len(added) > 0 {
		problems = append(problems, fmt.Sprintf("it left a second daemon: %s beside %s", procList(added), procList(before)))
	}
	if len(problems) > 0 {
		return fail("%s", strings.Join(problems, "; "))
	}
	return pass("the second start said changed false (%s); daemons in the container: %s before and after",
		fmtMS(second.DurationMS), procList(after))
}

// checkStopTwice: a second stop of the stopped service succeeds with
// changed false.
func checkStopTwice(c *run) verdict {
	if _, v := c.startReady(); v != nil {
		return *v
	}
	if _, v := c.must(protocol.OpStop); v != nil {
		return *v
	}
	second, v := c.must(protocol.OpStop)
	if v != nil {
		return *v
	}
	if second.result.OpResult.Changed {
		return fail("the second stop said changed true")
	}
	return pass("the second stop said changed false (%s)", fmtMS(second.DurationMS))
}

// checkStopEmpties: when the stop exits, nothing is left in the service's
// container (svcrun would kill what is).
func checkStopEmpties(c *run) verdict {
	if _, v := c.startReady(); v != nil {
		return *v
	}
	during := c.s.daemons(c.t)
	stop, v := c.must(protocol.OpStop)
	if v != nil {
		return *v
	}
	if len(stop.Left) > 0 {
		return fail("%s: the container still held pid %s, which svcrun killed: a stop must wait for its daemon to end",
			stop.brief(), joinInts(stop.Left))
	}
	if left := c.s.x.Procs(c.t); len(left) > 0 {
		return fail("processes came back in the container after the stop: pid %s", joinInts(left))
	}
	return pass("%s; the container, which held %s, is empty", stop.brief(), procList(during))
}

// checkFingerprintRunning: fingerprint's running agrees with status while
// the service is stopped, running, and stopped again.
func checkFingerprintRunning(c *run) verdict {
	var seen []string
	agree := func(when string) *verdict {
		fp, v := c.must(protocol.OpFingerprint)
		if v != nil {
			return v
		}
		st, v := c.must(protocol.OpStatus)
		if v != nil {
			return v
		}
		running := *fp.result.Fingerprint.Running
		if running != st.result.Status.Running {
			return &verdict{Fail,
				fmt.Sprintf("%s: fingerprint said running %t, status running %t", when, running, st.result.Status.Running)}
		}
		seen = append(seen, fmt.Sprintf("%s %t", when, running))
		return nil
	}
	if v := agree("stopped"); v != nil {
		return *v
	}
	if _, v := c.startReady(); v != nil {
		return *v
	}
	if v := agree("running"); v != nil {
		return *v
	}
	if _, v := c.must(protocol.OpStop); v != nil {
		return *v
	}
	if v := agree("stopped again"); v != nil {
		return *v
	}
	return pass("fingerprint and status agree on running: %s", strings.Join(seen, ", "))
}

// checkLabels: every object list_owned reports while the service runs
// carries the three labels, with this node and this service. With a job
// (svcrun check --job), the job runs first, as svcrun run would run it;
// list_owned must then report its objects, and a destroy of one must
// remove it.
func checkLabels(c *run) verdict {
	if _, v := c.startReady(); v != nil {
		return *v
	}
	attempt := ""
	if c.s.job != nil {
		fp, v := c.must(protocol.OpFingerprint) // its attrs are what the job reads
		if v != nil {
			return *v
		}
		attempt = "svcrun-check-job-" + randomHex()
		j := c.s.job(c.s.ctx, c.s.grant(c.t, attempt, fp.result.Fingerprint.Attrs))
		c.job = &j
		if why := j.failed(); why != "" {
			return fail("the job %s (attempt %s) failed after %s: %s", j.Command, attempt, fmtMS(j.DurationMS), why)
		}
	}
	r, v := c.must(protocol.OpListOwned)
	if v != nil {
		return *v
	}
	objs := r.result.OwnedList.Objects
	want := map[string]string{protocol.LabelNode: c.s.node.NodeID, protocol.LabelService: c.t.String()}
	var bad []string
	for _, o := range objs {
		var wrong []string
		if o.Labels[protocol.LabelAttemptID] == "" {
			wrong = append(wrong, "no "+protocol.LabelAttemptID)
		}
		for _, l := range []string{protocol.LabelNode, protocol.LabelService} {
			switch got, ok := o.Labels[l]; {
			case !ok:
				wrong = append(wrong, "no "+l)
			case got != want[l]:
				wrong = append(wrong, fmt.Sprintf("%s %q, want %q", l, got, want[l]))
			}
		}
		if len(wrong) > 0 {
			bad = append(bad, fmt.Sprintf("%s: %s", o.ID, strings.Join(wrong, ", ")))
		}
	}
	if len(bad) > 0 {
		return fail("%d of %d objects are not labelled for this node and service (svcrun would never reap them): "+
			"%s", len(bad), len(objs), strings.Join(bad, "; "))
	}
	if c.s.job != nil {
		return c.destroyJobObject(r, attempt)
	}
	if len(objs) == 0 {
		return pass("%s: no objects", r.brief())
	}
	return pass("%s: %d objects, each labelled with node %s and service %s", r.brief(), len(objs), c.s.node.NodeID, c.t)
}

// destroyJobObject judges the objects the job of attempt made, which
// list (the labels of every object passed) must report: a destroy of one
// must remove it from list_owned.
func (c *run) destroyJobObject(list OpRun, attempt string) verdict {
	var mine []string
	for _, o := range list.result.OwnedList.Objects {
		if o.Labels[protocol.LabelAttemptID] == attempt {
			mine = append(mine, o.ID)
		}
	}
	if len(mine) == 0 {
		return fail("the job %s ran (exit 0, %s), then %s reported no object of its attempt %s among %d: a job's "+
			"objects must be listed with its labels, or svcrun never reaps them",
			c.job.Command, fmtMS(c.job.DurationMS), list.brief(), attempt, len(list.result.OwnedList.Objects))
	}
	id := mine[0]
	d, v := c.must(protocol.OpDestroy, id)
	if v != nil {
		return *v
	}
	after, v := c.must(protocol.OpListOwned)
	if v != nil {
		return *v
	}
	for _, o := range after.result.OwnedList.Objects {
		if o.ID == id {
			return fail("%s said ok, changed %t, yet %s still reports %s", d.brief(), d.result.OpResult.Changed,
				after.brief(), id)
		}
	}
	return pass("the job %s (%s) made %s, labelled with attempt %s, node %s and service %s; %s removed it from list_owned",
		c.job.Command, fmtMS(c.job.DurationMS), strings.Join(mine, ", "), attempt, c.s.node.NodeID, c.t, d.brief())
}

// unknownID is an object id no service has.
func unknownID() string {
	return "svcrun-check-absent-" + randomHex()
}

func randomHex() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// checkDestroyUnknown: destroy of an id the service never had succeeds.
func checkDestroyUnknown(c *run) verdict {
	if _, v := c.startReady(); v != nil {
		return *v
	}
	r, v := c.must(protocol.OpDestroy, unknownID())
	if v != nil {
		return *v
	}
	return pass("%s: ok, changed %t", r.brief(), r.result.OpResult.Changed)
}

// checkDestroyForce: destroy --force (of an id the service never had)
// succeeds.
func checkDestroyForce(c *run) verdict {
	if _, v := c.startReady(); v != nil {
		return *v
	}
	r, v := c.must(protocol.OpDestroy, unknownID(), "--force")
	if v != nil {
		return *v
	}
	return pass("%s: ok, changed %t", r.brief(), r.result.OpResult.Changed)
}

// checkOutput: every op printed one document valid for its schema, and
// its exit status agreed with ok.
func checkOutput(ops []OpRun) (verdict, []OpRun) {
	var bad []OpRun
	var why []string
	for _, o := range ops {
		switch {
		case o.failure == engine.FailProtocol:
			bad = append(bad, o)
			why = append(why, fmt.Sprintf("%s (%s): %s", o.Op, o.Check, strings.Join(o.Reasons, "; ")))
		case o.PipesHeld:
			// The protocol forbids it (what the daemon prints later is
			// lost, and svcrun waits for the pipes at every such op),
			// though svcrun copes.
			bad = append(bad, o)
			why = append(why, fmt.Sprintf("%s (%s): a process it left behind kept its stdout or stderr open after it exited; "+
				"detach the daemon: setsid, with </dev/null >/dev/null 2>&1 or a log file (the SDKs' daemon helpers do)",
				o.Op, o.Check))
		}
	}
	if len(bad) > 0 {
		return fail("%d of %d op%s broke the protocol: %s", len(bad), len(ops), words.Plural(len(ops)),
			strings.Join(why, " | ")), bad
	}
	return pass("%d op%s, each output valid and agreeing with its exit status", len(ops), words.Plural(len(ops))), nil
}

// checkProcessGroup: no op left a process in its own process group once
// it exited. svcrun kills an op's process group when the op overruns its
// timeout, so a daemon that stays in the group of its start dies with a
// slow start.
func checkProcessGroup(ops []OpRun) (verdict, []OpRun) {
	var bad []OpRun
	var why []string
	for _, o := range ops {
		if len(o.groupHeld) > 0 {
			bad = append(bad, o)
			why = append(why, fmt.Sprintf("%s (%s) left %s in its process group", o.Op, o.Check, procList(o.groupHeld)))
		}
	}
	if len(bad) > 0 {
		return fail("%s: svcrun kills an op's process group when the op overruns its timeout, and the daemon with it; "+
			"detach it with setsid, as the SDKs' daemon helpers do", strings.Join(why, "; ")), bad
	}
	return pass("%d op%s, none left a process in its process group", len(ops), words.Plural(len(ops))), nil
}

// checkTimeouts: no op overran the protocol's timeout of its op.
func checkTimeouts(ops []OpRun) (verdict, []OpRun) {
	var bad []OpRun
	var why []string
	var slowest *OpRun
	for i, o := range ops {
		if o.failure == engine.FailTimeout {
			bad = append(bad, o)
			why = append(why, fmt.Sprintf("%s (%s) overran its timeout of %s", o.Op, o.Check, fmtMS(o.TimeoutMS)))
		}
		if o.TimeoutMS > 0 && (slowest == nil || o.DurationMS/o.TimeoutMS > slowest.DurationMS/slowest.TimeoutMS) {
			slowest = &ops[i]
		}
	}
	if len(bad) > 0 {
		return fail("%s", strings.Join(why, "; ")), bad
	}
	if slowest == nil {
		return pass("no ops"), nil
	}
	return pass("%d op%s, each within its timeout (closest: %s, %s of %s)", len(ops), words.Plural(len(ops)),
		slowest.Op, fmtMS(slowest.DurationMS), fmtMS(slowest.TimeoutMS)), nil
}

// joinInts is "1, 2, 3".
func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ", ")
}
