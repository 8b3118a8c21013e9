package timeline

import (
	"slices"
	"sort"
	"time"
)

// gapWidth is the width of a compressed idle gap, in pixels.
const gapWidth = 60.0

// segment is a stretch of the time axis: drawn to scale, or an idle gap
// compressed to gapWidth and marked with a break sign.
type segment struct {
	from, to time.Duration
	x0, x1   float64
	gap      bool
}

// axis maps virtual time to x. Long idle gaps between events are
// compressed, so that events bunched elsewhere get the room to be read.
type axis struct {
	segs []segment
}

// newAxis lays out [0, until] over [left, left+width]. The longest gap
// between consecutive event times is compressed while it is long against
// the time still drawn to scale (over a tenth of it) and against the run's
// usual gaps (over 4 times their median): evenly spaced events keep a
// plain linear axis, and a bunch of events followed by hours of idling
// gets the room.
func newAxis(times []time.Duration, until time.Duration, left, width float64) axis {
	ts := []time.Duration{0, until}
	for _, t := range times {
		if t > 0 && t < until {
			ts = append(ts, t)
		}
	}
	slices.Sort(ts)
	ts = slices.Compact(ts)
	var gaps []time.Duration
	for i := 1; i < len(ts); i++ {
		gaps = append(gaps, ts[i]-ts[i-1])
	}
	median := time.Duration(0)
	if len(gaps) > 0 {
		s := slices.Clone(gaps)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		median = s[len(s)/2]
	}
	compressed := make([]bool, len(gaps))
	scaled := until
	nGaps := 0
	for len(ts) > 3 {
		longest := -1
		for i, d := range gaps {
			if !compressed[i] && (longest < 0 || d > gaps[longest]) {
				longest = i
			}
		}
		if longest < 0 || gaps[longest] <= scaled/10 || gaps[longest] <= 4*median ||
			width-gapWidth*float64(nGaps+1) < width/3 {
			break
		}
		compressed[longest] = true
		scaled -= gaps[longest]
		nGaps++
	}
	room := width - gapWidth*float64(nGaps)
	if scaled <= 0 || room < width/3 {
		return axis{segs: []segment{{from: 0, to: until, x0: left, x1: left + width}}}
	}
	perNs := room / float64(scaled)
	var a axis
	x := left
	for i, d := range gaps {
		s := segment{from: ts[i], to: ts[i+1], x0: x}
		if compressed[i] {
			s.gap, s.x1 = true, x+gapWidth
		} else {
			s.x1 = x + float64(d)*perNs
		}
		x = s.x1
		// Consecutive stretches to scale are one segment.
		if n := len(a.segs); n > 0 && !s.gap && !a.segs[n-1].gap {
			a.segs[n-1].to, a.segs[n-1].x1 = s.to, s.x1
			continue
		}
		a.segs = append(a.segs, s)
	}
	return a
}

// x is the position of time d.
func (a axis) x(d time.Duration) float64 {
	for _, s := range a.segs {
		if d <= s.to || s.to == s.from {
			if s.to == s.from {
				return s.x0
			}
			if d < s.from {
				d = s.from
			}
			return s.x0 + (s.x1-s.x0)*float64(d-s.from)/float64(s.to-s.from)
		}
	}
	last := a.segs[len(a.segs)-1]
	return last.x1
}

// pxPerSecond is the scale of the stretches drawn to scale.
func (a axis) pxPerSecond() float64 {
	for _, s := range a.segs {
		if !s.gap && s.to > s.from {
			return (s.x1 - s.x0) / (s.to - s.from).Seconds()
		}
	}
	return 0
}

// tick is one labelled time on the axis.
type tick struct {
	at time.Duration
	x  float64
}

// ticks are round times at least minPx apart in every stretch drawn to
// scale, and the start of every stretch after a gap, so that each stretch
// says where it begins.
func (a axis) ticks(minPx float64) []tick {
	step := time.Duration(0)
	if px := a.pxPerSecond(); px > 0 {
		for _, s := range roundSteps {
			if s.Seconds()*px >= minPx {
				step = s
				break
			}
		}
	}
	var out []tick
	add := func(d time.Duration) {
		x := a.x(d)
		if n := len(out); n > 0 && x-out[n-1].x < minPx*0.6 {
			return
		}
		out = append(out, tick{d, x})
	}
	for i, s := range a.segs {
		if s.gap {
			// Both ends of a gap say their time.
			if i == 0 || a.segs[i-1].gap {
				add(s.from)
			}
			add(s.to)
			continue
		}
		if i == 0 {
			add(s.from)
		}
		if step == 0 {
			continue
		}
		for d := (s.from/step + 1) * step; d <= s.to; d += step {
			add(d)
		}
	}
	return out
}

var roundSteps = []time.Duration{
	time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond,
	50 * time.Millisecond,
	100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
}
