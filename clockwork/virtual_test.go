package clockwork

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func drain[E any](t *testing.T, s *Virtual[E]) []E {
	t.Helper()
	var out []E
	for {
		ev, ok := s.Next(context.Background())
		if !ok {
			return out
		}
		out = append(out, ev)
	}
}

func equal[T comparable](t *testing.T, got, want []T) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

func TestVirtualOrderTimeThenInsertion(t *testing.T) {
	v := NewVirtual[string](t0)
	v.At(t0.Add(3*time.Second), "c1")
	v.At(t0.Add(1*time.Second), "a1")
	v.At(t0.Add(2*time.Second), "b1")
	v.At(t0.Add(1*time.Second), "a2")
	v.At(t0.Add(3*time.Second), "c2")
	v.At(t0.Add(1*time.Second), "a3")
	if v.Len() != 6 {
		t.Fatalf("Len = %d", v.Len())
	}
	if p, ok := v.Peek(); !ok || !p.Equal(t0.Add(time.Second)) {
		t.Fatalf("Peek = %v %v", p, ok)
	}
	var got []string
	var times []time.Time
	for {
		ev, ok := v.Next(context.Background())
		if !ok {
			break
		}
		got = append(got, ev)
		times = append(times, v.Now())
	}
	equal(t, got, []string{"a1", "a2", "a3", "b1", "c1", "c2"})
	for i, d := range []time.Duration{1, 1, 1, 2, 3, 3} {
		if !times[i].Equal(t0.Add(d * time.Second)) {
			t.Fatalf("Now after %s = %v", got[i], times[i])
		}
	}
	if v.Len() != 0 {
		t.Fatalf("Len = %d", v.Len())
	}
	if _, ok := v.Peek(); ok {
		t.Fatal("Peek on empty")
	}
}

func TestVirtualPastAndPost(t *testing.T) {
	v := NewVirtual[string](t0)
	v.At(t0.Add(10*time.Second), "first")
	v.At(t0.Add(10*time.Second), "second")
	v.At(t0.Add(20*time.Second), "later")
	if ev, _ := v.Next(context.Background()); ev != "first" {
		t.Fatalf("got %q", ev)
	}
	// Now = t0+10s; "second" is already due. A past time and a Post come
	// after it, in call order, and before anything in the future.
	v.At(t0.Add(-time.Hour), "past")
	v.Post("posted")
	v.At(t0.Add(5*time.Second), "past2")
	v.At(t0.Add(10*time.Second), "now")
	equal(t, drain(t, v), []string{"second", "past", "posted", "past2", "now", "later"})
	if !v.Now().Equal(t0.Add(20 * time.Second)) {
		t.Fatalf("Now = %v", v.Now())
	}
}

func TestVirtualNowMonotonic(t *testing.T) {
	v := NewVirtual[int](t0)
	for i := range 50 {
		v.At(t0.Add(time.Duration((i*7919)%23-5)*time.Second), i)
	}
	prev := v.Now()
	extra := 10
	for {
		if _, ok := v.Next(context.Background()); !ok {
			break
		}
		if v.Now().Before(prev) {
			t.Fatalf("Now went back from %v to %v", prev, v.Now())
		}
		prev = v.Now()
		// Scheduling into the past mid-run must not move Now back either.
		if extra > 0 && v.Len()%5 == 0 {
			extra--
			v.At(t0, -1)
		}
	}
}

func TestVirtualCancel(t *testing.T) {
	v := NewVirtual[string](t0)
	a := v.At(t0.Add(time.Second), "a")
	b := v.At(t0.Add(2*time.Second), "b")
	c := v.At(t0.Add(3*time.Second), "c")
	if a == 0 || b == 0 || c == 0 || a == b || b == c || a == c {
		t.Fatalf("ids %d %d %d", a, b, c)
	}
	if v.Cancel(0) {
		t.Fatal("Cancel(0) = true")
	}
	if v.Cancel(TimerID(12345)) || v.Cancel(b|1<<40) {
		t.Fatal("Cancel(unknown) = true")
	}
	if !v.Cancel(b) {
		t.Fatal("Cancel(pending) = false")
	}
	if v.Cancel(b) {
		t.Fatal("second Cancel = true")
	}
	if v.Len() != 2 {
		t.Fatalf("Len = %d", v.Len())
	}
	if ev, _ := v.Next(context.Background()); ev != "a" {
		t.Fatalf("got %q", ev)
	}
	if v.Cancel(a) {
		t.Fatal("Cancel(popped) = true")
	}
	// The freed slots are reused, but never the ids.
	d := v.At(t0.Add(time.Second), "d")
	e := v.At(t0.Add(time.Second), "e")
	for _, old := range []TimerID{a, b, c} {
		if d == old || e == old {
			t.Fatalf("id reused: %d", old)
		}
	}
	if v.Cancel(a) || v.Cancel(b) {
		t.Fatal("stale id cancelled a new timer")
	}
	equal(t, drain(t, v), []string{"d", "e", "c"})
}

func TestVirtualIDsNeverReused(t *testing.T) {
	v := NewVirtual[int](t0)
	seen := map[TimerID]bool{}
	for i := range 1000 {
		id := v.At(t0, i)
		if seen[id] {
			t.Fatalf("id %d reused", id)
		}
		seen[id] = true
		if i%3 == 0 {
			v.Cancel(id)
		} else {
			v.Next(context.Background())
		}
	}
	// A slot at the last generation is retired rather than wrapped.
	id := v.At(t0, 1)
	v.q.gen[uint32(id)] = math.MaxUint32
	id = TimerID(uint64(math.MaxUint32)<<32 | uint64(uint32(id)))
	if !v.Cancel(id) {
		t.Fatal("Cancel at last generation")
	}
	for range 10 {
		if nid := v.At(t0, 2); uint32(nid) == uint32(id) {
			t.Fatalf("retired slot reused: %x", nid)
		}
	}
}

func TestVirtualAdvanceTo(t *testing.T) {
	v := NewVirtual[string](t0)
	if err := v.AdvanceTo(t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if !v.Now().Equal(t0.Add(time.Minute)) {
		t.Fatalf("Now = %v", v.Now())
	}
	if err := v.AdvanceTo(t0); !errors.Is(err, ErrBackwards) {
		t.Fatalf("backwards: %v", err)
	}
	v.At(t0.Add(2*time.Minute), "x")
	if err := v.AdvanceTo(t0.Add(3 * time.Minute)); !errors.Is(err, ErrWouldSkip) {
		t.Fatalf("skip: %v", err)
	}
	if !v.Now().Equal(t0.Add(time.Minute)) {
		t.Fatalf("Now moved on error: %v", v.Now())
	}
	// Up to the pending event is fine; it still pops, at its own time.
	if err := v.AdvanceTo(t0.Add(2 * time.Minute)); err != nil {
		t.Fatal(err)
	}
	v.Post("y")
	equal(t, drain(t, v), []string{"x", "y"})
	if !v.Now().Equal(t0.Add(2 * time.Minute)) {
		t.Fatalf("Now = %v", v.Now())
	}
}

func TestVirtualContextAndEmpty(t *testing.T) {
	v := NewVirtual[int](t0)
	if _, ok := v.Next(context.Background()); ok {
		t.Fatal("Next on empty = true")
	}
	v.Post(1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, ok := v.Next(ctx); ok {
		t.Fatal("Next with done ctx = true")
	}
	if v.Len() != 1 {
		t.Fatal("done ctx consumed an event")
	}
}

func TestVirtualFarTimesSaturate(t *testing.T) {
	v := NewVirtual[string](t0)
	v.At(t0.AddDate(1000, 0, 0), "far")
	v.At(t0.AddDate(-1000, 0, 0), "farpast")
	v.At(t0.Add(time.Hour), "hour")
	equal(t, drain(t, v), []string{"farpast", "hour", "far"})
}

func TestVirtualDropsMonotonic(t *testing.T) {
	start := time.Now() // has a monotonic reading
	v := NewVirtual[int](start)
	if v.Now() != start.Round(0) {
		t.Fatalf("Now = %#v", v.Now())
	}
}

// TestVirtualHorizon: Next stops at events after the horizon, as if
// nothing were left, takes those at it (also ones posted meanwhile), and
// goes on once the horizon is lifted.
func TestVirtualHorizon(t *testing.T) {
	tests := []struct {
		name    string
		horizon time.Duration
		post    bool // an event posted while draining, at the time of the first
		want    []string
	}{
		{name: "before all", horizon: 500 * time.Millisecond},
		{name: "at the first", horizon: time.Second, want: []string{"a", "b"}},
		{name: "at the first, with a post", horizon: time.Second, post: true, want: []string{"a", "b", "posted"}},
		{name: "between", horizon: 1500 * time.Millisecond, want: []string{"a", "b"}},
		{name: "after all", horizon: time.Hour, want: []string{"a", "b", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := NewVirtual[string](t0)
			v.At(t0.Add(time.Second), "a")
			v.At(t0.Add(time.Second), "b")
			v.At(t0.Add(2*time.Second), "c")
			v.SetHorizon(t0.Add(tt.horizon))
			var got []string
			for {
				ev, ok := v.Next(context.Background())
				if !ok {
					break
				}
				got = append(got, ev)
				if ev == "a" && tt.post {
					v.Post("posted")
				}
			}
			equal(t, got, tt.want)
			if v.Now().After(t0.Add(tt.horizon)) {
				t.Errorf("Now %v is past the horizon", v.Now().Sub(t0))
			}
			v.SetHorizon(time.Time{})
			total := 3
			if tt.post {
				total++
			}
			if rest := drain(t, v); len(got)+len(rest) != total {
				t.Errorf("after the horizon is lifted: %v then %v, want all %d events", got, rest, total)
			}
		})
	}
}

// TestVirtualOffsetIsSub checks offset's fast path against time.Sub, the
// definition, near start, around the fast path's bound and where Sub
// saturates, for starts and times with nanoseconds, monotonic readings and
// other locations.
func TestVirtualOffsetIsSub(t *testing.T) {
	tokyo := time.FixedZone("JST", 9*3600)
	for _, start := range []time.Time{t0, t0.Add(999_999_999), time.Unix(-5, 7).In(tokyo), time.Now()} {
		bound := time.Duration(maxOffsetSec) * time.Second
		for _, when := range []time.Time{
			start, start.Add(1), start.Add(time.Hour + 3), time.Now(), time.Now().In(tokyo), t0.Add(-time.Nanosecond),
			start.Add(bound - 1), start.Add(bound).Add(-time.Second), start.Add(-bound + 1),
			start.Add(bound).Add(time.Second), start.AddDate(300, 0, 0), start.AddDate(-300, 0, 0),
			time.Unix(math.MaxInt64/2, 999_999_999), time.Unix(math.MinInt64/2, 0), {},
		} {
			v := NewVirtual[int](start)
			v.now = math.MinInt64 // offset's floor out of the way
			if got, want := v.offset(when), int64(when.Sub(v.start)); got != want {
				t.Errorf("start %v, when %v: offset %d, Sub %d", start, when, got, want)
			}
		}
	}
}
