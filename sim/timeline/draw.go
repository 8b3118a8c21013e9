package timeline

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/oarbank/svcrun/protocol"
	"github.com/oarbank/svcrun/sim/scenario"
)

// Layout, in pixels.
const (
	left    = 210.0
	plotW   = 1100.0
	right   = 40.0
	top     = 60.0
	bandH   = 18.0
	opH     = 6.0
	labelH  = 11.0
	resH    = 44.0
	charW   = 5.4 // the width of a character of the 9px labels, about
	laneGap = 8.0
)

// opColour colours an op's interval by what it does.
var opColour = map[protocol.Op]string{
	protocol.OpStart:       "#e69138",
	protocol.OpStop:        "#8e7cc3",
	protocol.OpStatus:      "#a2c4c9",
	protocol.OpReady:       "#76a5af",
	protocol.OpFingerprint: "#3d85c6",
	protocol.OpListOwned:   "#999999",
	protocol.OpDestroy:     "#666666",
}

// row is one lane of the drawing with its height.
type row struct {
	group string
	l     *lane    // service, probe and lease lanes
	res   *resLane // pool and memory lanes
	h     float64
	lines int // label lines under it
}

// SVG draws a run as an SVG timeline: a lane per service (its state as
// coloured bands, its ops as intervals from run to done, its refcount as a
// step line with numbers, failures and crashes as marks with their reason
// written under the lane), a lane per probe, a lane for the memory budget
// and one per pool (what is reserved, by whom, against the capacity, and
// who waits for how much: why a lease waits), and a lane per lease
// (waiting, then held; a rejection or expiry marked with its reason). Long
// idle gaps are compressed and marked with a break sign.
func SVG(res *scenario.Result) []byte {
	t := buildTimeline(res)
	until := t.until
	if until <= 0 {
		until = time.Second
	}
	ax := newAxis(eventTimes(res), until, left, plotW)

	var rows []row
	for _, n := range slices.Sorted(maps.Keys(t.services)) {
		rows = append(rows, row{group: "services", l: t.services[n].lane, h: bandH + opH + 2, lines: 2})
	}
	for _, n := range slices.Sorted(maps.Keys(t.probes)) {
		rows = append(rows, row{group: "probes", l: t.probes[n], h: bandH + opH + 2, lines: 1})
	}
	for _, rl := range t.res.lanes() {
		rows = append(rows, row{group: "resources", res: rl, h: resH, lines: 2})
	}
	for _, n := range t.order {
		rows = append(rows, row{group: "leases", l: t.leases[n], h: bandH, lines: 1})
	}
	plotH := 0.0
	for _, r := range rows {
		plotH += r.h + float64(r.lines)*labelH + laneGap
	}
	axisY := top + plotH
	height := axisY + 40 + 90
	width := left + plotW + right

	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f `+
		`%.0f" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="11">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%.0f" height="%.0f" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="10" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", esc(res.Scenario.File))
	fmt.Fprintf(&b, `<text x="10" y="38" fill="#555">node %s, %d lane(s), 0 to %s of virtual time; idle gaps `+
		`compressed where marked</text>`+"\n",
		esc(res.Scenario.Config.NodeID), len(rows), shortDur(t.until))

	drawAxis(&b, ax, top-6, axisY)
	for _, at := range t.restarts {
		xx := ax.x(at)
		fmt.Fprintf(&b, `<g class="restart"><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#444" `+
			`stroke-dasharray="5,3"/><text x="%.1f" y="%.1f" font-size="9" fill="#444">svcrun restarts</text></g>`+"\n",
			xx, top-12, xx, axisY, xx+3, top-14)
	}

	y := top
	group := ""
	for i, r := range rows {
		if r.group != group {
			group = r.group
			if i > 0 {
				fmt.Fprintf(&b, `<line x1="0" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#999"/>`+"\n", y-laneGap/2, width, y-laneGap/2)
			}
		}
		if r.res != nil {
			drawResource(&b, r.res, ax, y, until)
		} else {
			drawLane(&b, r, ax, y, until)
		}
		y += r.h + float64(r.lines)*labelH + laneGap
	}
	drawLegend(&b, axisY+38)
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// eventTimes are the times of the run's records: where the axis must
// keep room.
func eventTimes(res *scenario.Result) []time.Duration {
	out := make([]time.Duration, 0, len(res.Records))
	for _, r := range res.Records {
		out = append(out, r.At)
	}
	return out
}

func drawAxis(b *bytes.Buffer, ax axis, y0, y1 float64) {
	for _, tk := range ax.ticks(64) {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e6e6e6"/>`+"\n", tk.x, y0, tk.x, y1)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#555">%s</text>`+"\n", tk.x, y1+14,
			shortDur(tk.at))
	}
	for _, s := range ax.segs {
		if !s.gap {
			continue
		}
		mid := (s.x0 + s.x1) / 2
		fmt.Fprintf(b, `<g class="gap"><rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#f4f4f4"/>`, s.x0+6,
			y0, s.x1-s.x0-12, y1-y0)
		// The break sign: two slanted strokes across the axis.
		for _, dx := range []float64{-4, 4} {
			fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#555" stroke-width="1.5"/>`,
				mid+dx-3, y1+5, mid+dx+3, y1-5)
		}
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="9" fill="#555">+%s</text></g>`+"\n",
			mid, y1+26, shortDur(s.to-s.from))
	}
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999"/>`+"\n", left, y1, left+plotW, y1)
}

// label is a text written under a lane, at the time of what it explains.
type label struct {
	x     float64
	text  string
	title string
	fill  string
}

// placeLabels puts labels on lines under a lane without overlap: each on
// the first line with room, else on the first line, cutting short the
// label before it there. It returns, per label, its line and its width.
func placeLabels(ls []label, lines int, xMax float64) (line []int, widths []float64) {
	line = make([]int, len(ls))
	widths = make([]float64, len(ls))
	end := make([]float64, lines)
	last := make([]int, lines)
	for i := range end {
		end[i], last[i] = -1e9, -1
	}
	for i := range ls {
		w := float64(len([]rune(ls[i].text)))*charW + 2
		// Near the right edge a label moves left, into the room before it.
		if ls[i].x+w > xMax {
			ls[i].x = max(ls[i].x-(ls[i].x+w-xMax), slices.Min(end)+4, left)
		}
		l := ls[i]
		k := slices.IndexFunc(end, func(e float64) bool { return l.x >= e+4 })
		if k < 0 {
			k = 0
			if p := last[0]; p >= 0 {
				widths[p] = max(l.x-4-ls[p].x, 0)
			}
		}
		line[i], widths[i] = k, min(w, xMax-l.x)
		end[k], last[k] = l.x+widths[i], i
	}
	return line, widths
}

func drawLabels(b *bytes.Buffer, ls []label, lines int, y float64) {
	slices.SortStableFunc(ls, func(a, b label) int {
		switch {
		case a.x < b.x:
			return -1
		case a.x > b.x:
			return 1
		}
		return 0
	})
	line, widths := placeLabels(ls, lines, left+plotW+right-4)
	for i, l := range ls {
		n := int(widths[i] / charW)
		if n < 3 {
			continue // no room for a word: the mark's hover text still has it
		}
		fill := l.fill
		if fill == "" {
			fill = "#333"
		}
		fmt.Fprintf(b, `<text class="label" x="%.1f" y="%.1f" font-size="9" fill="%s"><title>%s</title>%s</text>`+"\n",
			l.x, y+float64(line[i])*labelH+8, fill, esc(l.title), esc(clip(l.text, n)))
	}
}

// nextStartRE is the absolute time in a failure note, which the timeline
// shows by position anyway.
var nextStartRE = regexp.MustCompile(`; next start not before [^ ]+`)

func markLabel(m mark) string {
	return nextStartRE.ReplaceAllString(m.title, "")
}

var markFill = map[string]string{"failure": "#cc0000", "crash": "#cc0000", "rejected": "#741b47",
	"expired": "#cc0000", "kill": "#000", "unhealthy-fp": "#b45f06", "reaped": "#444"}

func drawLane(b *bytes.Buffer, r row, ax axis, y float64, until time.Duration) {
	l := r.l
	name := l.name
	if l.kind == "lease" {
		name = "lease " + name
	}
	title := name
	if l.detail != "" {
		title += ": " + l.detail
	}
	fmt.Fprintf(b, `<text x="10" y="%.1f"><title>%s</title>%s</text>`+"\n", y+bandH/2+4, esc(title), esc(clip(name, 30)))
	if l.kind == "lease" && l.detail != "" {
		fmt.Fprintf(b, `<text x="10" y="%.1f" font-size="8" fill="#777">%s</text>`+"\n", y+bandH+8,
			esc(clip(strings.Join(strings.Fields(l.detail)[1:], " "), 44)))
	}
	for _, bd := range l.bands {
		x0, x1 := ax.x(bd.from), ax.x(bd.to)
		w := max(x1-x0, 0.5)
		extra := ""
		if bd.state == stWaiting {
			extra = ` stroke="#e69138" stroke-dasharray="3,2"`
		}
		fmt.Fprintf(b, `<rect class="band" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"%s><title>%s `+
			`%s..%s</title></rect>`+"\n",
			x0, y, w, bandH, stateColour[bd.state], extra, bd.state, shortDur(bd.from), shortDur(bd.to))
		if w > float64(len(bd.state))*6+6 && bd.state != stStopped {
			fg := "#222"
			if bd.state == stUnhealthy || bd.state == stHeld {
				fg = "white"
			}
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="9" fill="%s">%s</text>`+"\n", x0+3, y+bandH/2+3, fg, bd.state)
		}
	}
	for _, op := range l.ops {
		drawOp(b, op, ax, y+bandH+1)
	}
	drawRefs(b, l.refs, ax, y, bandH, ax.x(until))
	var ls []label
	for _, m := range l.marks {
		drawMark(b, m, ax.x(m.at), y, bandH)
		ls = append(ls, label{x: ax.x(m.at), text: markLabel(m),
			title: strings.TrimSpace(scenario.FormatOffset(m.at)) + " " + m.title, fill: markFill[m.kind]})
	}
	labelY := y + r.h
	if l.kind == "lease" {
		labelY = y + bandH
	}
	drawLabels(b, ls, r.lines, labelY)
}

// drawOp draws an op from its run to its done: a thin bar under the band,
// red when the op failed, named when there is room.
func drawOp(b *bytes.Buffer, op opSpan, ax axis, y float64) {
	x0, x1 := ax.x(op.from), ax.x(op.to)
	w := max(x1-x0, 1.5)
	fill := opColour[op.op]
	if op.failed != "" {
		fill = "#cc0000"
	}
	what := string(op.op)
	if op.failed != "" {
		what += ": " + op.failed
	}
	fmt.Fprintf(b, `<rect class="op" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s `+
		`%s..%s</title></rect>`+"\n",
		x0, y, w, opH, fill, esc(what), shortDur(op.from), shortDur(op.to))
	if w > float64(len(what))*4.2+4 {
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="6" fill="white">%s</text>`+"\n", x0+2, y+opH-1, esc(what))
	}
}

// drawResource draws a pool or the memory budget: the capacity as a step
// line, each holder's share as a block (stacked), and who waits as dashed
// blocks above them, with the waiting written under the lane.
func drawResource(b *bytes.Buffer, rl *resLane, ax axis, y float64, until time.Duration) {
	fmt.Fprintf(b, `<text x="10" y="%.1f">%s</text>`+"\n", y+resH/2, esc(rl.name))
	fmt.Fprintf(b, `<text x="10" y="%.1f" font-size="8" fill="#777">%s</text>`+"\n", y+resH/2+11,
		esc(rl.unit+": held / capacity"))
	cuts := []time.Duration{0, until}
	top := 0.0
	for _, c := range rl.capacity {
		cuts = append(cuts, c.at)
		top = max(top, c.v)
	}
	for _, h := range append(slices.Clone(rl.holds), rl.waits...) {
		cuts = append(cuts, h.from, h.to)
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	// The scale: the largest of the capacity and what is held and waited
	// for at once.
	for i := 0; i+1 < len(cuts); i++ {
		sum := 0.0
		for _, h := range append(slices.Clone(rl.holds), rl.waits...) {
			if h.from <= cuts[i] && h.to > cuts[i] {
				sum += h.amount
			}
		}
		top = max(top, sum)
	}
	if top <= 0 {
		top = 1
	}
	base := y + resH
	unit := resH / top
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#fafafa" stroke="#eee"/>`+"\n",
		left, y, plotW, resH)
	named := map[string]bool{}
	var labels []label
	type num struct {
		x    float64
		text string
	}
	var nums []num
	for i := 0; i+1 < len(cuts); i++ {
		from, to := cuts[i], cuts[i+1]
		x0, x1 := ax.x(from), ax.x(to)
		level := 0.0
		for _, list := range []struct {
			hs    []hold
			waits bool
		}{{rl.holds, false}, {rl.waits, true}} {
			for _, h := range list.hs {
				if h.from > from || h.to <= from {
					continue
				}
				hh := h.amount * unit
				yy := base - level - hh
				level += hh
				style := `fill="#6fa8dc" stroke="white" stroke-width="0.5"`
				what := fmt.Sprintf("%s holds %v %s", h.who, h.amount, rl.unit)
				if list.waits {
					style = `fill="#fce5cd" fill-opacity="0.7" stroke="#e69138" stroke-dasharray="3,2"`
					what = fmt.Sprintf("%s waits for %v %s", h.who, h.amount, rl.unit)
				}
				cls := "hold"
				if list.waits {
					cls = "wait"
				}
				fmt.Fprintf(b, `<rect class="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f" %s><title>%s, `+
					`%s..%s</title></rect>`+"\n",
					cls, x0, yy, max(x1-x0, 0.5), hh, style, esc(what), shortDur(h.from), shortDur(h.to))
				key := fmt.Sprintf("%v/%s/%d", list.waits, h.who, h.from)
				if !named[key] && hh >= 8 && x1-x0 > float64(len(h.who))*5+4 {
					named[key] = true
					fg := "white"
					if list.waits {
						fg = "#b45f06"
					}
					fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="8" fill="%s">%s</text>`+"\n", x0+2, yy+hh/2+3, fg, esc(h.who))
				}
				if list.waits && h.from == from {
					labels = append(labels, label{x: x0, text: what, title: what, fill: "#b45f06"})
				}
			}
		}
		// The numbers: held of capacity, where they change.
		held := 0.0
		for _, h := range rl.holds {
			if h.from <= from && h.to > from {
				held += h.amount
			}
		}
		text := fmt.Sprintf("%v/%v", round2(held), round2(rl.capAt(from)))
		if n := len(nums); n == 0 || nums[n-1].text != text {
			nums = append(nums, num{x0, text})
		}
	}
	// Where changes crowd, the later number is the one shown.
	for i, n := range nums {
		if i+1 < len(nums) && nums[i+1].x-n.x < 26 {
			continue
		}
		fmt.Fprintf(b, `<text class="level" x="%.1f" y="%.1f" font-size="8" fill="black">%s</text>`+"\n", n.x+1, y-1, n.text)
	}
	// The capacity line.
	var pts []string
	c := 0.0
	pts = append(pts, fmt.Sprintf("%.1f,%.1f", left, base))
	for _, s := range rl.capacity {
		xx := ax.x(s.at)
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", xx, base-c*unit), fmt.Sprintf("%.1f,%.1f", xx, base-s.v*unit))
		c = s.v
	}
	pts = append(pts, fmt.Sprintf("%.1f,%.1f", ax.x(until), base-c*unit))
	fmt.Fprintf(b, `<polyline class="capacity" points="%s" fill="none" stroke="#222" stroke-width="1.5"/>`+"\n",
		strings.Join(pts, " "))
	drawLabels(b, labels, 2, y+resH)
}

func round2(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }

func drawRefs(b *bytes.Buffer, refs []refStep, ax axis, y, h, xEnd float64) {
	if len(refs) == 0 {
		return
	}
	base := y + h - 1
	level := func(n int) float64 { return base - float64(min(n, 4))*3.5 }
	var pts []string
	n := 0
	pts = append(pts, fmt.Sprintf("%.1f,%.1f", ax.x(0), level(0)))
	for _, r := range refs {
		xx := ax.x(r.at)
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", xx, level(n)), fmt.Sprintf("%.1f,%.1f", xx, level(r.n)))
		n = r.n
	}
	pts = append(pts, fmt.Sprintf("%.1f,%.1f", xEnd, level(n)))
	fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="black" stroke-width="1"/>`+"\n", strings.Join(pts, " "))
	lastX := -100.0
	for _, r := range refs {
		xx := ax.x(r.at)
		if xx-lastX < 10 {
			continue // keep the numbers legible where changes crowd
		}
		lastX = xx
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="8" fill="black">%d</text>`+"\n", xx+1, y-1, r.n)
	}
}

// drawMark draws a point event; each kind has a shape of its own, so a
// crash and a rejection never look alike.
func drawMark(b *bytes.Buffer, m mark, xx, y, h float64) {
	title := ""
	if m.title != "" {
		title = "<title>" + esc(strings.TrimSpace(scenario.FormatOffset(m.at))+" "+m.title) + "</title>"
	}
	cy := y + h/2
	switch m.kind {
	case "failure":
		fmt.Fprintf(b, `<path class="mark-failure" d="M%.1f,%.1f l-5,-8 h10 z" fill="#cc0000" stroke="white" `+
			`stroke-width="0.5">%s</path>`+"\n", xx, y+9, title)
	case "crash":
		// A burst: an eight-pointed star.
		var pts []string
		for i := 0; i < 16; i++ {
			r := 7.0
			if i%2 == 1 {
				r = 3.0
			}
			a := float64(i) * math.Pi / 8
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", xx+r*math.Sin(a), cy-r*math.Cos(a)))
		}
		fmt.Fprintf(b, `<polygon class="mark-crash" points="%s" fill="#cc0000" stroke="#ffe599" `+
			`stroke-width="0.8">%s</polygon>`+"\n", strings.Join(pts, " "), title)
	case "kill":
		fmt.Fprintf(b, `<g class="mark-kill" stroke="black" stroke-width="2">%s<line x1="%.1f" y1="%.1f" `+
			`x2="%.1f" y2="%.1f"/><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/></g>`+"\n",
			title, xx-4, cy-4, xx+4, cy+4, xx-4, cy+4, xx+4, cy-4)
	case "rejected":
		// A no-entry sign: a ring with a bar.
		fmt.Fprintf(b, `<g class="mark-rejected">%s<circle cx="%.1f" cy="%.1f" r="6" fill="white" `+
			`stroke="#741b47" stroke-width="2"/><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#741b47" `+
			`stroke-width="2"/></g>`+"\n",
			title, xx, cy, xx-4.2, cy+4.2, xx+4.2, cy-4.2)
	case "unhealthy-fp":
		fmt.Fprintf(b, `<circle class="mark-unhealthy" cx="%.1f" cy="%.1f" r="4" fill="#e69138" `+
			`stroke="white">%s</circle>`+"\n", xx, cy, title)
	case "reaped":
		fmt.Fprintf(b, `<path class="mark-reaped" d="M%.1f,%.1f l4,5 l-4,5 l-4,-5 z" fill="#666">%s</path>`+"\n",
			xx, cy-5, title)
	case "expired":
		fmt.Fprintf(b, `<circle class="mark-expired" cx="%.1f" cy="%.1f" r="4" fill="none" stroke="#cc0000" `+
			`stroke-width="2">%s</circle>`+"\n", xx, cy, title)
	}
}

func drawLegend(b *bytes.Buffer, ly float64) {
	b.WriteString(`<g class="legend">` + "\n")
	defer b.WriteString("</g>\n")
	lx := 10.0
	for _, st := range []string{stUnknown, stStopped, stStarting, stWaitingReady, stReady, stFrozen, stStopping,
		stBackoff, stUnhealthy, stWaiting, stHeld} {
		name := st
		switch st {
		case stWaiting:
			name = "lease waiting"
		case stHeld:
			name = "lease held"
		}
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="12" height="12" fill="%s" stroke="#999"/>`, lx, ly-10, stateColour[st])
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", lx+16, ly, name)
		lx += float64(len(name))*6.4 + 32
	}
	ly += 22
	lx = 10
	for _, m := range []struct{ kind, name string }{{"failure", "failure"}, {"crash", "crash"}, {"kill", "kill"},
		{"unhealthy-fp", "reports unhealthy"}, {"reaped", "object reaped"}, {"rejected", "rejected"},
		{"expired", "expired"}} {
		drawMark(b, mark{kind: m.kind}, lx+6, ly-13, bandH)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", lx+16, ly, m.name)
		lx += float64(len(m.name))*6.4 + 32
	}
	ly += 22
	lx = 10
	for _, op := range []protocol.Op{protocol.OpStart, protocol.OpReady, protocol.OpStatus, protocol.OpStop,
		protocol.OpFingerprint, protocol.OpListOwned, protocol.OpDestroy} {
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="14" height="6" fill="%s"/>`, lx, ly-7, opColour[op])
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", lx+18, ly, op)
		lx += float64(len(op))*6.4 + 34
	}
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="14" height="6" fill="#cc0000"/><text x="%.1f" `+
		`y="%.1f">failed op</text>`+"\n", lx, ly-7, lx+18, ly)
	ly += 20
	fmt.Fprintf(b, `<text x="10" y="%.1f" fill="#333">bars under a lane: ops, run to done; black step line: `+
		`leases referencing the service; pools and memory: held (blue) and waited for (dashed) against the `+
		`capacity (black line)</text>`+"\n", ly)
}
