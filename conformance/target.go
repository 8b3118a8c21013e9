package conformance

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/protocol"
)

// checkTarget runs every check of one service or probe, stopping the
// service after each check that started it or left anything in its
// container.
func (s *session) checkTarget(t engine.Target) []Result {
	kind := "service"
	if t.Probe {
		kind = "probe"
	}
	var results []Result
	var all []OpRun
	status := map[string]Status{}
	for _, d := range checks() {
		if !d.appliesTo(t.Probe) {
			continue
		}
		t0 := time.Now()
		r := Result{Target: t.String(), Kind: kind, Check: d.name, Ops: []OpRun{}}
		var v verdict
		switch unmet := unmetNeeds(d.needs, status); {
		case unmet != "":
			v = verdict{Skip, unmet}
		case s.ctx.Err() != nil:
			v = verdict{Skip, "interrupted"}
		case d.over != nil:
			var ops []OpRun
			v, ops = d.over(all)
			r.Ops = append(r.Ops, ops...)
		default:
			c := &run{s: s, t: t, check: d.name}
			v = d.judge(c)
			c.ops = append(c.ops, s.cleanup(t, c.started)...)
			r.Ops = append(r.Ops, c.ops...)
			r.Job = c.job
			all = append(all, c.ops...)
		}
		r.Status, r.Summary = v.status, v.summary
		r.DurationMS = ms(time.Since(t0))
		status[d.name] = r.Status
		results = append(results, r)
	}
	return results
}

// unmetNeeds says which needed check did not pass; "" when all did.
func unmetNeeds(needs []string, status map[string]Status) string {
	var unmet []string
	for _, n := range needs {
		if st := status[n]; st != Pass {
			unmet = append(unmet, fmt.Sprintf("%s (%s)", n, st))
		}
	}
	if len(unmet) == 0 {
		return ""
	}
	return "needs " + strings.Join(unmet, ", ") + " to pass"
}

// cleanup stops a service that a check started or that has processes in
// its container, then kills what is left there: the next check begins
// with the service stopped, and nothing outlives Check.
func (s *session) cleanup(t engine.Target, started bool) []OpRun {
	if t.Probe {
		return nil
	}
	var ops []OpRun
	if started || len(s.x.Procs(t)) > 0 {
		ops = append(ops, s.run(t, "cleanup", protocol.OpStop))
	}
	if len(s.x.Procs(t)) > 0 {
		s.x.Kill(t)
	}
	return ops
}

// sleep waits d, or less if the check is interrupted (false then).
func (s *session) sleep(d time.Duration) bool {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// proc is a process of a service's container.
type proc struct {
	pid  int
	name string
}

// daemons are the processes of the service's container whose parent is
// not in it: what its ops left behind, without the workers those fork.
func (s *session) daemons(t engine.Target) []proc {
	pids := s.x.Procs(t)
	var out []proc
	for _, pid := range pids {
		ppid, _, name, ok := procInfo(pid)
		if ok && !slices.Contains(pids, ppid) {
			out = append(out, proc{pid, name})
		}
	}
	return out
}

// inGroup are the processes of the service's container in the process
// group pgid: what an op (whose group is its pid) left there. A daemon
// the op started in the background may not have reached its setsid when
// the op exits, so a process counts once it has stayed for groupGrace.
func (s *session) inGroup(t engine.Target, pgid int) []proc {
	deadline := time.Now().Add(groupGrace)
	for {
		var out []proc
		for _, pid := range s.x.Procs(t) {
			if _, g, name, ok := procInfo(pid); ok && g == pgid {
				out = append(out, proc{pid, name})
			}
		}
		if len(out) == 0 || !time.Now().Before(deadline) || !s.sleep(groupPoll) {
			return out
		}
	}
}

// groupGrace and groupPoll bound inGroup's wait for a daemon's setsid.
const (
	groupGrace = time.Second
	groupPoll  = 10 * time.Millisecond
)

// procList is "pid 12 (sh), pid 13 (sleep)", or "none".
func procList(ps []proc) string {
	if len(ps) == 0 {
		return "none"
	}
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = fmt.Sprintf("pid %d (%s)", p.pid, p.name)
	}
	return strings.Join(s, ", ")
}
