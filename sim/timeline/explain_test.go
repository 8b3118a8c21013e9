package timeline

import (
	"bytes"
	"encoding/xml"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oarbank/svcrun/sim/scenario"
)

// node is an element of a parsed SVG.
type node struct {
	name  string
	attr  map[string]string
	text  string // its own character data and its children's
	kids  []*node
	title string // the text of its <title> child, if any
}

func parseSVG(t *testing.T, data []byte) *node {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(data))
	root := &node{name: "document"}
	stack := []*node{root}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			n := &node{name: tok.Name.Local, attr: map[string]string{}}
			for _, a := range tok.Attr {
				n.attr[a.Name.Local] = a.Value
			}
			top := stack[len(stack)-1]
			top.kids = append(top.kids, n)
			stack = append(stack, n)
		case xml.EndElement:
			n := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if n.name == "title" {
				stack[len(stack)-1].title = n.text
			}
		case xml.CharData:
			for _, n := range stack[1:] {
				if n.name != "title" || n == stack[len(stack)-1] {
					n.text += string(tok)
				}
			}
		}
	}
	return root
}

// all lists the elements under n (n included) for which ok holds.
func (n *node) all(ok func(*node) bool) []*node {
	var out []*node
	if ok(n) {
		out = append(out, n)
	}
	for _, k := range n.kids {
		out = append(out, k.all(ok)...)
	}
	return out
}

func class(c string) func(*node) bool {
	return func(n *node) bool { return n.attr["class"] == c }
}

// TestSVGExplains: the timeline of a small run has lanes for the memory
// budget and the pool, distinct marks for the crash and the rejection,
// their reasons as visible text, ops drawn from run to done, and the long
// idle gap compressed with a break sign.
func TestSVGExplains(t *testing.T) {
	sc, err := scenario.ParseFile("testdata/explain.txt")
	if err != nil {
		t.Fatal(err)
	}
	res, err := sc.Run()
	if err != nil {
		t.Fatal(err)
	}
	svg := parseSVG(t, SVG(res))
	// The legend draws one of each mark: look at the drawing only.
	for _, n := range svg.all(func(*node) bool { return true }) {
		n.kids = slices.DeleteFunc(n.kids, class("legend"))
	}
	texts := svg.all(func(n *node) bool { return n.name == "text" })
	hasText := func(s string) bool {
		for _, n := range texts {
			if strings.Contains(n.text, s) {
				return true
			}
		}
		return false
	}
	for _, lane := range []string{"db/kv", "memory", "pool slots", "lease l1", "lease l2"} {
		if !hasText(lane) {
			t.Errorf("no lane %q", lane)
		}
	}
	// Visible labels, not only hover text.
	labels := svg.all(class("label"))
	for _, want := range []string{"crash: process container emptied",
		"rejected: not admitted in time: pool slots", "failure 1/5: crashed", "l2 waits for 1 token(s)"} {
		found := false
		for _, l := range labels {
			found = found || strings.Contains(l.text, want)
		}
		if !found {
			t.Errorf("no visible label %q", want)
		}
	}
	crash, rejected := svg.all(class("mark-crash")), svg.all(class("mark-rejected"))
	if len(crash) != 1 || len(rejected) != 1 || crash[0].name == rejected[0].name {
		t.Errorf("a crash and a rejection must each have one mark, of different shapes: %d %v, %d %v", len(crash),
			names(crash), len(rejected), names(rejected))
	}
	// The two starts last 2s each: intervals, not points.
	starts := 0
	for _, op := range svg.all(class("op")) {
		if strings.HasPrefix(op.title, "start 0..2s") || strings.HasPrefix(op.title, "start 9s..11s") {
			starts++
		}
	}
	if starts != 2 {
		t.Errorf("%d start ops drawn from run to done, want 2", starts)
	}
	// Memory and tokens held, a wait for tokens, the capacity.
	if len(svg.all(class("hold"))) < 2 || len(svg.all(class("wait"))) < 1 || len(svg.all(class("capacity"))) != 2 {
		t.Errorf("resource lanes: %d holds, %d waits, %d capacity lines", len(svg.all(class("hold"))),
			len(svg.all(class("wait"))), len(svg.all(class("capacity"))))
	}
	// The idle 11s..5m is compressed and says how long it was.
	gaps := svg.all(class("gap"))
	if len(gaps) == 0 || !strings.Contains(gaps[0].text, "+4m49s") ||
		len(gaps[0].all(func(n *node) bool { return n.name == "line" })) != 2 {
		t.Errorf("no compressed gap of 4m49s with its break sign: %d gap(s)", len(gaps))
	}
}

func names(ns []*node) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.name)
	}
	return out
}

func TestAxisCompressesIdleGaps(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name  string
		times []time.Duration
		until time.Duration
		gaps  int
	}{
		{"evenly spaced", []time.Duration{10 * s, 20 * s, 30 * s, 40 * s}, 50 * s, 0},
		{"few events", []time.Duration{time.Hour}, 2 * time.Hour, 0},
		{"bunched, then idle", []time.Duration{s, 2 * s, 3 * s, 4 * s, 10 * time.Minute}, 11 * time.Minute, 2},
		{"two bunches", []time.Duration{s, 2 * s, 3 * s, time.Hour, time.Hour + s, time.Hour + 2*s}, time.Hour + 3*s, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAxis(tc.times, tc.until, 0, 1000)
			gaps := 0
			for _, sg := range a.segs {
				if sg.gap {
					gaps++
				}
			}
			if gaps != tc.gaps {
				t.Fatalf("%d gaps, want %d: %+v", gaps, tc.gaps, a.segs)
			}
			// The axis is monotonic and spans the width.
			prev := -1.0
			for _, d := range append([]time.Duration{0}, append(tc.times, tc.until)...) {
				if x := a.x(d); x < prev {
					t.Fatalf("x(%v) = %v < %v", d, x, prev)
				} else {
					prev = x
				}
			}
			if a.x(0) != 0 || a.x(tc.until) < 999.9 {
				t.Fatalf("x(0) = %v, x(until) = %v", a.x(0), a.x(tc.until))
			}
		})
	}
}
