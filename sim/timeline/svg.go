package timeline

import (
	"bytes"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/oarbank/svcrun/engine"
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
	cur    string
	since  time.Duration
	detail string // leases: what it asked for
}

type refStep struct {
	at time.Duration
	n  int
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
}

func buildTimeline(res *scenario.Result) *timeline {
	t := &timeline{
		services: map[string]*svcTrack{}, probes: map[string]*lane{}, leases: map[string]*lane{},
		leaseSvc: map[string][]string{}, modProbe: map[string][]string{}, until: res.Until,
	}
	for _, m := range res.Scenario.Modules {
		for _, s := range m.Module.Services {
			n := s.FullName()
			t.services[n] = &svcTrack{lane: &lane{name: n, kind: "service", cur: stUnknown}}
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
	return t
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
		}
	case scenario.RecEvent:
		switch ev := r.Event.(type) {
		case engine.ContainerEmptied:
			if s := t.services[ev.Service.String()]; s != nil {
				s.marks = append(s.marks, mark{r.At, "crash", "process container emptied"})
			}
		case engine.OpDone:
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
	case engine.RunOp:
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
	case engine.Rejected:
		if l := t.leases[string(f.Lease)]; l != nil && l.cur == stWaiting {
			l.marks = append(l.marks, mark{r.At, "rejected", "rejected: " + f.Reason})
			l.finish(r.At)
		}
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

// SVG draws a run as an SVG timeline: a lane per service (its
// state as coloured bands, failures and crashes as marks, its refcount as a
// step line with numbers), a lane per probe, and a lane per lease (waiting,
// then held). Hovering a mark shows its note.
func SVG(res *scenario.Result) []byte {
	t := buildTimeline(res)
	const (
		left   = 210.0
		plotW  = 1000.0
		right  = 30.0
		top    = 56.0
		laneH  = 26.0
		bandH  = 18.0
		legend = 64.0
	)
	until := t.until
	if until <= 0 {
		until = time.Second
	}
	x := func(d time.Duration) float64 { return left + plotW*float64(d)/float64(until) }

	svcNames := slices.Sorted(maps.Keys(t.services))
	prbNames := slices.Sorted(maps.Keys(t.probes))
	type row struct {
		l     *lane
		group string
	}
	var rows []row
	for _, n := range svcNames {
		rows = append(rows, row{t.services[n].lane, "services"})
	}
	for _, n := range prbNames {
		rows = append(rows, row{t.probes[n], "probes"})
	}
	for _, n := range t.order {
		rows = append(rows, row{t.leases[n], "leases"})
	}
	height := top + laneH*float64(len(rows)) + 30 + legend
	width := left + plotW + right

	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="11">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%.0f" height="%.0f" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="10" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", esc(res.Scenario.File))
	fmt.Fprintf(&b, `<text x="10" y="38" fill="#555">node %s, %d lane(s), 0 to %s of virtual time</text>`+"\n",
		esc(res.Scenario.Config.NodeID), len(rows), shortDur(t.until))

	// Time axis and grid.
	step := tickStep(until)
	axisY := top + laneH*float64(len(rows)) + 4
	for d := time.Duration(0); d <= until; d += step {
		xx := x(d)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e6e6e6"/>`+"\n", xx, top-4, xx, axisY)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#555">%s</text>`+"\n", xx, axisY+14, shortDur(d))
	}

	group := ""
	for i, r := range rows {
		y := top + laneH*float64(i)
		if r.group != group {
			group = r.group
			if i > 0 {
				fmt.Fprintf(&b, `<line x1="0" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#999"/>`+"\n", y-1, width, y-1)
			}
		}
		label := r.l.name
		if r.l.kind == "lease" {
			label = "lease " + label
		}
		title := label
		if r.l.detail != "" {
			title += ": " + r.l.detail
		}
		fmt.Fprintf(&b, `<text x="10" y="%.1f"><title>%s</title>%s</text>`+"\n", y+bandH/2+4, esc(title), esc(clip(label, 30)))
		for _, bd := range r.l.bands {
			x0, x1 := x(bd.from), x(bd.to)
			w := max(x1-x0, 0.5)
			fill := stateColour[bd.state]
			extra := ""
			if bd.state == stWaiting {
				extra = ` stroke="#e69138" stroke-dasharray="3,2"`
			}
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"%s><title>%s %s..%s</title></rect>`+"\n",
				x0, y, w, bandH, fill, extra, bd.state, shortDur(bd.from), shortDur(bd.to))
			if w > float64(len(bd.state))*6+6 && bd.state != stStopped {
				fg := "#222"
				if bd.state == stUnhealthy || bd.state == stHeld {
					fg = "white"
				}
				fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="9" fill="%s">%s</text>`+"\n", x0+3, y+bandH/2+3, fg, bd.state)
			}
		}
		drawRefs(&b, r.l.refs, x, y, bandH, x(until))
		for _, m := range r.l.marks {
			drawMark(&b, m, x(m.at), y, bandH)
		}
	}

	// Legend.
	ly := axisY + 34
	lx := 10.0
	for _, st := range []string{stUnknown, stStopped, stStarting, stWaitingReady, stReady, stFrozen, stStopping, stBackoff, stUnhealthy, stWaiting, stHeld} {
		name := st
		switch st {
		case stWaiting:
			name = "lease waiting"
		case stHeld:
			name = "lease held"
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="12" height="12" fill="%s" stroke="#999"/>`, lx, ly-10, stateColour[st])
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", lx+16, ly, name)
		lx += float64(len(name))*6.4 + 32
	}
	ly += 22
	lx = 10
	for _, m := range []struct{ kind, name string }{{"failure", "failure"}, {"crash", "crash"}, {"kill", "kill"}, {"unhealthy-fp", "reports unhealthy"}, {"reaped", "object reaped"}, {"rejected", "rejected"}, {"expired", "expired"}} {
		drawMark(&b, mark{kind: m.kind}, lx+6, ly-13, bandH)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", lx+16, ly, m.name)
		lx += float64(len(m.name))*6.4 + 32
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#333">black step line and numbers: leases referencing the service</text>`+"\n", lx+10, ly)
	b.WriteString("</svg>\n")
	return b.Bytes()
}

func drawRefs(b *bytes.Buffer, refs []refStep, x func(time.Duration) float64, y, h, xEnd float64) {
	if len(refs) == 0 {
		return
	}
	base := y + h - 1
	level := func(n int) float64 { return base - float64(min(n, 4))*3.5 }
	var pts []string
	n := 0
	prevX := x(0)
	pts = append(pts, fmt.Sprintf("%.1f,%.1f", prevX, level(0)))
	for _, r := range refs {
		xx := x(r.at)
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", xx, level(n)), fmt.Sprintf("%.1f,%.1f", xx, level(r.n)))
		n = r.n
	}
	pts = append(pts, fmt.Sprintf("%.1f,%.1f", xEnd, level(n)))
	fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="black" stroke-width="1"/>`+"\n", strings.Join(pts, " "))
	lastX := -100.0
	for _, r := range refs {
		xx := x(r.at)
		if xx-lastX < 10 {
			continue // keep the numbers legible where changes crowd
		}
		lastX = xx
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="8" fill="black">%d</text>`+"\n", xx+1, y-1, r.n)
	}
}

func drawMark(b *bytes.Buffer, m mark, xx, y, h float64) {
	title := ""
	if m.title != "" {
		title = "<title>" + esc(strings.TrimSpace(scenario.FormatOffset(m.at))+" "+m.title) + "</title>"
	}
	switch m.kind {
	case "failure":
		fmt.Fprintf(b, `<path d="M%.1f,%.1f l-5,-7 h10 z" fill="#cc0000" stroke="white" stroke-width="0.5">%s</path>`+"\n", xx, y+8, title)
	case "crash", "kill", "rejected":
		colour := "#cc0000"
		if m.kind == "kill" {
			colour = "black"
		}
		fmt.Fprintf(b, `<g stroke="%s" stroke-width="2">%s<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/></g>`+"\n",
			colour, title, xx-4, y+h/2-4, xx+4, y+h/2+4, xx-4, y+h/2+4, xx+4, y+h/2-4)
	case "unhealthy-fp":
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="4" fill="#e69138" stroke="white">%s</circle>`+"\n", xx, y+h/2, title)
	case "reaped":
		fmt.Fprintf(b, `<path d="M%.1f,%.1f l4,5 l-4,5 l-4,-5 z" fill="#666">%s</path>`+"\n", xx, y+h/2-5, title)
	case "expired":
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="4" fill="none" stroke="#cc0000" stroke-width="2">%s</circle>`+"\n", xx, y+h/2, title)
	}
}

// tickStep picks a round tick interval giving at most about 12 ticks.
func tickStep(until time.Duration) time.Duration {
	for _, s := range []time.Duration{
		time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
		time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
		time.Hour, 2 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
	} {
		if until/s <= 12 {
			return s
		}
	}
	return until / 12
}

// shortDur renders a duration without zero units: 90s is "1m30s", 2h is
// "2h".
func shortDur(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
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
