package clockwork

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
)

// fakeNow is a settable time for Pauses' sightings; the beats still run
// on their own clock and see the same time.
type fakeNow struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeNow) now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func (f *fakeNow) add(d time.Duration) {
	f.mu.Lock()
	f.t = f.t.Add(d)
	f.mu.Unlock()
}

func newTestPauses(c clock.Clock) (*Pauses, *fakeNow) {
	f := &fakeNow{t: time.Unix(1_000_000, 0)}
	p := NewPauses(c, PauseBeat, PauseLate)
	p.now = f.now
	p.Start()
	return p, f
}

func TestPausesNoticeGaps(t *testing.T) {
	p, f := newTestPauses(clock.NewMock())
	defer p.Stop()
	woken := 0
	p.onNotice(func() { woken++ })
	steps := []struct {
		name       string
		advance    time.Duration
		take       time.Duration // what Take returns after the advance
		total      time.Duration
		wokenAfter int
	}{
		{"a beat on time", time.Second, 0, 0, 0},
		{"a beat late by a loaded machine", 2900 * time.Millisecond, 0, 0, 0},
		{"sixty seconds stopped", 60 * time.Second, 60 * time.Second, 60 * time.Second, 1},
		{"running again", time.Second, 0, 60 * time.Second, 1},
		{"just over the tolerance", 3001 * time.Millisecond, 3001 * time.Millisecond, 63001 * time.Millisecond, 2},
	}
	for _, st := range steps {
		f.add(st.advance)
		if got := p.Take(); got != st.take {
			t.Errorf("%s: Take = %v, want %v", st.name, got, st.take)
		}
		if got := p.Total(); got != st.total {
			t.Errorf("%s: Total = %v, want %v", st.name, got, st.total)
		}
		if woken != st.wokenAfter {
			t.Errorf("%s: woken %d times, want %d", st.name, woken, st.wokenAfter)
		}
	}
}

func TestPausesTakeOnce(t *testing.T) {
	p, f := newTestPauses(clock.NewMock())
	defer p.Stop()
	f.add(10 * time.Second)
	p.Total() // noticed here, not yet taken
	f.add(20 * time.Second)
	if got := p.Take(); got != 30*time.Second {
		t.Errorf("Take = %v, want both pauses, 30s", got)
	}
	if got := p.Take(); got != 0 {
		t.Errorf("second Take = %v, want 0", got)
	}
}

func TestPausesNotStarted(t *testing.T) {
	f := &fakeNow{t: time.Unix(1_000_000, 0)}
	p := NewPauses(clock.NewMock(), PauseBeat, PauseLate)
	p.now = f.now
	p.Total()
	f.add(time.Hour) // idle before Start: not a pause
	if got := p.Take(); got != 0 {
		t.Errorf("Take before Start = %v, want 0", got)
	}
	p.Start()
	defer p.Stop()
	f.add(time.Second)
	if got := p.Take(); got != 0 {
		t.Errorf("Take just after Start = %v, want 0", got)
	}
}

func TestNilPauses(t *testing.T) {
	var p *Pauses
	if p.Take() != 0 || p.Total() != 0 {
		t.Error("a nil Pauses noticed a pause")
	}
	done := make(chan struct{})
	p.AfterFunc(time.Millisecond, func() { close(done) })
	<-done
	p.Stop()
}

// A pause timer whose clock timer fires after a pause is set again for the
// pause's length: its f runs only once that much more has passed.
func TestPauseTimerStretchedByPause(t *testing.T) {
	mock := clock.NewMock()
	p, f := newTestPauses(mock)
	defer p.Stop()
	ran := make(chan struct{}, 1)
	tm := p.AfterFunc(5*time.Second, func() { ran <- struct{}{} }).(*pauseTimer)

	f.add(60 * time.Second) // svcrun stopped: the timer is long due
	tm.fire()
	select {
	case <-ran:
		t.Fatal("the timer ran at the end of a pause")
	default:
	}
	tm.fire() // the re-armed timer, no pause since
	select {
	case <-ran:
	default:
		t.Fatal("the timer did not run once its stretch was over")
	}
	if tm.Stop() {
		t.Error("Stop after the run reported it stopped the timer")
	}
}

func TestPauseTimerStop(t *testing.T) {
	p, _ := newTestPauses(clock.NewMock())
	defer p.Stop()
	tm := p.AfterFunc(time.Second, func() { t.Error("a stopped timer ran") }).(*pauseTimer)
	if !tm.Stop() {
		t.Fatal("Stop of a pending timer reported false")
	}
	tm.fire()
}

// Next returns the pause before a timer that fell due during it, so that
// the handler of the pause can still move that timer.
func TestRealNextTellsPauseFirst(t *testing.T) {
	mock := clock.NewMock()
	p, f := newTestPauses(mock)
	defer p.Stop()
	r := NewReal[string](mock)
	r.NotePauses(p, func(d time.Duration) string { return "paused " + d.String() })
	r.Post("request")
	r.At(mock.Now().Add(-time.Second), "ttl") // due at once: in the ready queue
	f.add(60 * time.Second)
	ctx := context.Background()
	var got []string
	for range 3 {
		ev, ok := r.Next(ctx)
		if !ok {
			t.Fatal("Next ended")
		}
		got = append(got, ev)
	}
	want := []string{"paused 1m0s", "request", "ttl"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("events %q, want %q", got, want)
		}
	}
}

// A pause noticed by a beat while Next waits wakes it.
func TestRealNextWokenByPause(t *testing.T) {
	mock := clock.NewMock()
	p, f := newTestPauses(mock)
	defer p.Stop()
	r := NewReal[string](mock)
	r.NotePauses(p, func(d time.Duration) string { return "paused" })
	got := make(chan string)
	go func() {
		ev, _ := r.Next(context.Background())
		got <- ev
	}()
	f.add(time.Minute)
	p.Total() // a sighting, as a beat makes
	if ev := <-got; ev != "paused" {
		t.Errorf("Next = %q, want the pause", ev)
	}
}
