package timeline

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/internal/words"
	"github.com/oarbank/svcrun/protocol"
	"github.com/oarbank/svcrun/sim/scenario"
)

// Timeline states, as the trace shows them.
const (
	stUnknown      = "unknown"
	stStopped      = "stopped"
	stStarting     = "starting"
	stWaitingReady = "waiting-ready"
	stReady        = "ready"
	stFrozen       = "frozen"
	stStopping     = "stopping"
	stBackoff      = "backoff"
	stUnhealthy    = "unhealthy"
	stHealthy      = "healthy" // probes
	stWaiting      = "waiting" // leases
	stHeld         = "held"    // leases
)

var stateColour = map[string]string{
	stUnknown:      "#d9d9d9",
	stStopped:      "#f3f3f3",
	stStarting:     "#f6b26b",
	stWaitingReady: "#ffe599",
	stReady:        "#93c47d",
	stFrozen:       "#9fc5e8",
	stStopping:     "#b4a7d6",
	stBackoff:      "#ea9999",
	stUnhealthy:    "#990000",
	stHealthy:      "#93c47d",
	stWaiting:      "#fce5cd",
	stHeld:         "#6fa8dc",
}

// band is a stretch of one state in a lane.
type band struct {
	from, to time.Duration
	state    string
}

// mark is a point event in a lane: a failure, a crash, a kill...
type mark struct {
	at    time.Duration
	kind  string // failure, crash, kill, unhealthy-fp, reaped, rejected, expired
	title string
}

type lane struct {
	name   string
	kind   string // service, probe, lease
	bands  []band
	marks  []mark
	refs   []refStep // services: refcount over time
	ops    []opSpan  // services and probes: each op, run to done
	cur    string
	since  time.Duration
	detail string // leases: what it asked for
}

type refStep struct {
	at time.Duration
	n  int
}

// opSpan is one op from its run to its done (or to the end, or to a
// restart that lost it).
type opSpan struct {
	from, to time.Duration
	op       protocol.Op
	failed   string // the failure kind, "" when it succeeded
	open     bool
}

func (l *lane) set(at time.Duration, st string) {
	if st == l.cur {
		return
	}
	if at > l.since && l.cur != "" {
		l.bands = append(l.bands, band{l.since, at, l.cur})
	}
	l.cur, l.since = st, at
	// A state left and entered again at one instant continues its band.
	if n := len(l.bands); n > 0 && l.bands[n-1].to == at && l.bands[n-1].state == st {
		l.since = l.bands[n-1].from
		l.bands = l.bands[:n-1]
	}
}

func (l *lane) finish(until time.Duration) {
	if l.cur != "" && until > l.since {
		l.bands = append(l.bands, band{l.since, until, l.cur})
	}
	l.cur = ""
}

// svcTrack follows one service through the trace.
type svcTrack struct {
	*lane
	frozen    bool
	backoff   bool // a failure with backoff: after the stop, the lane shows backoff
	backoffTo time.Duration
	unhealthy bool
	refs      int
}

// endBackoff ends a backoff band at its deadline, if that came before at.
func (s *svcTrack) endBackoff(at time.Duration) {
	if s.cur == stBackoff && s.backoffTo > s.since && s.backoffTo < at {
		s.set(s.backoffTo, stStopped)
	}
}

var backoffRE = regexp.MustCompile(`\(backoff ([0-9a-zµ.]+)\)$`)

// timeline derives lanes from a run's records.
type timeline struct {
	services map[string]*svcTrack
	probes   map[string]*lane
	leases   map[string]*lane
	order    []string // leases, in order of appearance
	leaseSvc map[string][]string
	modProbe map[string][]string // module -> its probes
	until    time.Duration

	openOps  map[engine.OpID]*lane // ops run and not done yet, by the lane they are on
	res      resources
	restarts []time.Duration // when svcrun restarted
}

func buildTimeline(res *scenario.Result) *timeline {
	t := &timeline{
		services: map[string]*svcTrack{}, probes: map[string]*lane{}, leases: map[string]*lane{},
		leaseSvc: map[string][]string{}, modProbe: map[string][]string{}, until: res.Until,
		openOps: map[engine.OpID]*lane{}, res: newResources(res.Scenario.Config.MemoryBudgetGB),
	}
	for _, m := range res.Scenario.Modules {
		for _, s := range m.Module.Services {
			n := s.FullName()
			t.services[n] = &svcTrack{lane: &lane{name: n, kind: "service", cur: stUnknown}}
			if s.ReservesHostMemory {
				t.res.reserves[n] = true
			}
		}
		for _, p := range m.Module.Probes {
			n := m.Module.Name + "/" + p.Name
			t.probes[n] = &lane{name: n, kind: "probe", cur: stUnknown}
			t.modProbe[m.Module.Name] = append(t.modProbe[m.Module.Name], n)
		}
	}
	for _, r := range res.Records {
		t.record(r)
	}
	for _, s := range t.services {
		s.endBackoff(t.until)
		s.finish(t.until)
	}
	for _, p := range t.probes {
		p.finish(t.until)
	}
	for _, l := range t.leases {
		l.finish(t.until)
	}
	t.endOps(t.until)
	t.res.finish(t.until, t.services)
	return t
}

// endOps ends the ops still open: at the end of the run, or at a restart
// that lost them.
func (t *timeline) endOps(at time.Duration) {
	for id, l := range t.openOps {
		if n := len(l.ops); n > 0 {
			for i := n - 1; i >= 0; i-- {
				if l.ops[i].open {
					l.ops[i].to, l.ops[i].open = at, false
					break
				}
			}
		}
		delete(t.openOps, id)
	}
}

// opLane is the lane an op's target is drawn on.
func (t *timeline) opLane(target engine.Target) *lane {
	if target.Probe {
		return t.probes[target.String()]
	}
	if s := t.services[target.String()]; s != nil {
		return s.lane
	}
	return nil
}

func (t *timeline) record(r scenario.Record) {
	for _, s := range t.services {
		s.endBackoff(r.At)
	}
	switch r.Kind {
	case scenario.RecInput:
		if r.Input == nil {
			return
		}
		switch r.Input.Name {
		case "restart":
			for _, s := range t.services {
				s.set(r.At, stUnknown)
				s.frozen = false
			}
			t.endOps(r.At)
			t.restarts = append(t.restarts, r.At)
		case "acquire":
			a := r.Event.(engine.Acquire)
			id := string(a.Lease)
			l := &lane{name: id, kind: "lease", detail: strings.TrimPrefix(r.Input.Text, "acquire ")}
			if _, dup := t.leases[id]; !dup {
				t.order = append(t.order, id)
			} else {
				// A reused lease id: a new lane under a distinct name.
				l.name = fmt.Sprintf("%s (at %s)", id, strings.TrimSpace(scenario.FormatOffset(r.At)))
				t.order = append(t.order, l.name)
				t.leases[l.name] = t.leases[id]
				t.leases[l.name].finish(r.At)
			}
			t.leases[id] = l
			l.set(r.At, stWaiting)
			t.res.acquire(r.At, a)
		}
	case scenario.RecEvent:
		switch ev := r.Event.(type) {
		case engine.ContainerEmptied:
			if s := t.services[ev.Service.String()]; s != nil {
				s.marks = append(s.marks, mark{r.At, "crash", "crash: process container emptied"})
			}
		case *engine.OpDone:
			if l := t.openOps[ev.ID]; l != nil {
				delete(t.openOps, ev.ID)
				for i := len(l.ops) - 1; i >= 0; i-- {
					if l.ops[i].open {
						l.ops[i].to, l.ops[i].open, l.ops[i].failed = r.At, false, string(ev.Outcome.Failure)
						break
					}
				}
			}
			if fp := ev.Outcome.Result.Fingerprint; fp != nil && ev.Outcome.Failure == engine.FailNone && !r.Op.Target.Probe {
				t.res.fingerprint(r.At, r.Op.Target.String(), fp)
			}
			s := t.services[r.Op.Target.String()]
			if s == nil || r.Op.Target.Probe {
				return
			}
			ok := ev.Outcome.Failure == engine.FailNone
			switch r.Op.Op {
			case protocol.OpStart:
				if ok && s.cur == stStarting {
					s.set(r.At, stWaitingReady)
				}
			case protocol.OpFingerprint:
				if ok && s.cur == stUnknown {
					s.set(r.At, stStopped)
				}
			}
		}
	case scenario.RecEffect:
		t.effect(r)
	}
}

func (t *timeline) effect(r scenario.Record) {
	switch f := r.Effect.(type) {
	case *engine.RunOp:
		if l := t.opLane(f.Target); l != nil {
			l.ops = append(l.ops, opSpan{from: r.At, op: f.Op, open: true})
			t.openOps[f.ID] = l
		}
		s := t.services[f.Target.String()]
		if s == nil || f.Target.Probe {
			return
		}
		switch f.Op {
		case protocol.OpStart:
			s.set(r.At, stStarting)
		case protocol.OpStop:
			s.set(r.At, stStopping)
		}
	case engine.Kill:
		if s := t.services[f.Service.String()]; s != nil {
			s.marks = append(s.marks, mark{r.At, "kill", "kill of its process container"})
		}
	case engine.Freeze:
		if s := t.services[f.Service.String()]; s != nil {
			s.frozen = true
			if s.cur == stReady {
				s.set(r.At, stFrozen)
			}
		}
	case engine.Thaw:
		if s := t.services[f.Service.String()]; s != nil {
			s.frozen = false
			if s.cur == stFrozen {
				s.set(r.At, stReady)
			}
		}
	case engine.Admitted:
		id := string(f.Lease)
		t.leaseSvc[id] = f.Services
		for _, n := range f.Services {
			t.ref(n, r.At, +1)
		}
		if l := t.leases[id]; l != nil {
			l.set(r.At, stHeld)
		}
		t.res.admitted(r.At, id)
	case engine.Rejected:
		if l := t.leases[string(f.Lease)]; l != nil && l.cur == stWaiting {
			l.marks = append(l.marks, mark{r.At, "rejected", "rejected: " + f.Reason})
			l.finish(r.At)
		}
		t.res.rejected(r.At, string(f.Lease), f.Reason)
	case engine.Released, engine.Expired:
		var id string
		if x, ok := f.(engine.Released); ok {
			id = string(x.Lease)
		} else {
			x := f.(engine.Expired)
			id = string(x.Lease)
			reason := "not renewed in time"
			if x.Reason != "" {
				reason = x.Reason
			}
			if l := t.leases[id]; l != nil {
				l.marks = append(l.marks, mark{r.At, "expired", "expired: " + reason})
			}
		}
		for _, n := range t.leaseSvc[id] {
			t.ref(n, r.At, -1)
		}
		t.res.released(r.At, id)
		delete(t.leaseSvc, id)
		if l := t.leases[id]; l != nil {
			l.finish(r.At)
		}
	case engine.Note:
		t.note(r.At, f)
	}
}

func (t *timeline) ref(svc string, at time.Duration, d int) {
	s := t.services[svc]
	if s == nil {
		return
	}
	s.refs += d
	// Changes at one instant show as one step, to the last value.
	if n := len(s.lane.refs); n > 0 && s.lane.refs[n-1].at == at {
		s.lane.refs[n-1].n = s.refs
		return
	}
	s.lane.refs = append(s.lane.refs, refStep{at, s.refs})
}

// note follows the engine's notes; their wording is the engine's, so this
// is the one place that knows it.
func (t *timeline) note(at time.Duration, n engine.Note) {
	if mod, ok := strings.CutPrefix(n.Subject, "module "); ok {
		if strings.HasPrefix(n.Text, "disabled") || strings.HasPrefix(n.Text, "removed") {
			for _, p := range t.modProbe[mod] {
				t.probes[p].set(at, stUnknown)
			}
		}
		return
	}
	if p := t.probes[n.Subject]; p != nil {
		switch {
		case strings.HasPrefix(n.Text, "healthy"):
			p.set(at, stHealthy)
		case strings.HasPrefix(n.Text, "unhealthy"):
			p.set(at, stUnhealthy)
			p.marks = append(p.marks, mark{at, "unhealthy-fp", n.Text})
		}
		return
	}
	s := t.services[n.Subject]
	if s == nil {
		return
	}
	text := n.Text
	switch {
	case strings.HasPrefix(text, "starting"):
		s.set(at, stStarting)
		t.res.memoryWaitEnds(at, n.Subject)
	case strings.HasPrefix(text, "waits for memory"):
		t.res.memoryWait(at, n.Subject)
	case text == "ready" || strings.HasPrefix(text, "ready (") || strings.HasPrefix(text, "running (manual)"):
		if s.frozen {
			s.set(at, stFrozen)
		} else {
			s.set(at, stReady)
		}
	case strings.HasPrefix(text, "adopted") || strings.HasPrefix(text, "not ready any more"):
		s.set(at, stWaitingReady)
	case strings.HasPrefix(text, "not running (manual)"):
		s.set(at, stStopped)
	case strings.HasPrefix(text, "stopping"):
		s.set(at, stStopping)
	case strings.HasPrefix(text, "stopped"):
		switch {
		case s.unhealthy:
			s.set(at, stUnhealthy)
		case s.backoff:
			s.set(at, stBackoff)
		default:
			s.set(at, stStopped)
		}
		s.backoff = false
	case strings.HasPrefix(text, "failure "):
		s.marks = append(s.marks, mark{at, "failure", text})
		if strings.Contains(text, "; unhealthy") {
			s.unhealthy = true
		} else {
			s.backoff = true
			s.backoffTo = 0
			if m := backoffRE.FindStringSubmatch(text); m != nil {
				if d, err := time.ParseDuration(m[1]); err == nil {
					s.backoffTo = at + d
				}
			}
		}
	case strings.HasPrefix(text, "unhealthy since before the restart"):
		s.unhealthy = true
		s.set(at, stUnhealthy)
	case strings.HasPrefix(text, "reset"):
		s.unhealthy, s.backoff = false, false
		if s.cur == stUnhealthy || s.cur == stBackoff {
			s.set(at, stStopped)
		}
	case strings.HasPrefix(text, "fingerprint unhealthy"):
		s.marks = append(s.marks, mark{at, "unhealthy-fp", text})
	case strings.HasPrefix(text, "reaped"):
		s.marks = append(s.marks, mark{at, "reaped", text})
	}
}

// shortDur renders a duration for people: to 4 significant digits (a
// replayed journal's times have nanoseconds), without zero units: 90s is
// "1m30s", 2h is "2h".
func shortDur(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	unit := time.Duration(1)
	for x := d.Abs(); x >= 10_000; x /= 10 {
		unit *= 10
	}
	s := d.Round(unit).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// clip keeps s whole when it fits in n bytes, else its first n-1 bytes
// cut on a rune boundary, and a mark: a label never ends in half a rune.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return words.Clip(s, n-1, "…")
}

func esc(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '"':
			b.WriteString("&quot;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
