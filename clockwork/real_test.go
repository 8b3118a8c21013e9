package clockwork

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
)

// guard bounds every wait: a failing test fails instead of hanging.
const guard = 10 * time.Second

func next[E comparable](t *testing.T, r *Real[E]) E {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	ev, ok := r.Next(ctx)
	if !ok {
		t.Fatalf("Next: nothing within %v", guard)
	}
	return ev
}

func expect[E comparable](t *testing.T, r *Real[E], want ...E) {
	t.Helper()
	for _, w := range want {
		if got := next(t, r); got != w {
			t.Fatalf("Next = %v, want %v", got, w)
		}
	}
}

func TestRealAtFuture(t *testing.T) {
	mock := clock.NewMock()
	r := NewReal[string](mock)
	start := mock.Now()
	if !r.Now().Equal(start) {
		t.Fatalf("Now = %v", r.Now())
	}
	r.At(start.Add(time.Second), "a")
	// Not due yet: a Post overtakes it.
	r.Post("marker")
	expect(t, r, "marker")
	mock.Add(time.Second)
	expect(t, r, "a")
}

func TestRealSameInstantKeepsAtOrder(t *testing.T) {
	mock := clock.NewMock()
	r := NewReal[string](mock)
	t1 := mock.Now().Add(time.Second)
	r.At(t1.Add(time.Second), "later")
	for _, s := range []string{"a", "b", "c", "d"} {
		r.At(t1, s)
	}
	mock.Add(time.Second)
	expect(t, r, "a", "b", "c", "d")
	mock.Add(time.Second)
	expect(t, r, "later")
}

func TestRealEarlierTimerRearms(t *testing.T) {
	mock := clock.NewMock()
	r := NewReal[string](mock)
	now := mock.Now()
	r.At(now.Add(2*time.Second), "x")
	r.At(now.Add(time.Second), "y") // earlier than the armed deadline
	mock.Add(time.Second)
	expect(t, r, "y")
	mock.Add(time.Second)
	expect(t, r, "x")
}

func TestRealPastAndPostFIFO(t *testing.T) {
	mock := clock.NewMock()
	r := NewReal[string](mock)
	now := mock.Now()
	r.Post("1")
	r.At(now.Add(-time.Hour), "2")
	r.Post("3")
	r.At(now, "4")
	expect(t, r, "1", "2", "3", "4")
}

func TestRealCancelBeforeFire(t *testing.T) {
	mock := clock.NewMock()
	r := NewReal[string](mock)
	now := mock.Now()
	a := r.At(now.Add(time.Second), "a")
	r.At(now.Add(time.Second), "b")
	if !r.Cancel(a) {
		t.Fatal("Cancel(pending) = false")
	}
	if r.Cancel(a) {
		t.Fatal("second Cancel = true")
	}
	mock.Add(time.Second)
	// b was scheduled after a at the same instant, so a would come first.
	expect(t, r, "b")
	r.Post("end")
	expect(t, r, "end")
}

func TestRealCancelAfterFireBeforeNext(t *testing.T) {
	mock := clock.NewMock()
	r := NewReal[string](mock)
	now := mock.Now()
	a := r.At(now.Add(time.Second), "a")
	b := r.At(now.Add(time.Second), "b")
	c := r.At(now.Add(time.Second), "c")
	mock.Add(time.Second)
	expect(t, r, "a")
	// b and c fired together with a and wait in the ready queue.
	if !r.Cancel(b) {
		t.Fatal("Cancel(fired, not yet taken) = false")
	}
	if r.Cancel(b) {
		t.Fatal("second Cancel = true")
	}
	if r.Cancel(a) {
		t.Fatal("Cancel(delivered) = true")
	}
	expect(t, r, "c")
	if r.Cancel(c) {
		t.Fatal("Cancel(delivered) = true")
	}
	if r.Cancel(0) || r.Cancel(TimerID(999)) {
		t.Fatal("Cancel(unknown) = true")
	}
}

func TestRealPostManyGoroutines(t *testing.T) {
	r := NewReal[[2]int](clock.NewMock())
	const G, N = 100, 200
	var wg sync.WaitGroup
	for g := range G {
		wg.Go(func() {
			for i := range N {
				r.Post([2]int{g, i})
			}
		})
	}
	last := make([]int, G)
	for i := range last {
		last[i] = -1
	}
	for range G * N {
		ev := next(t, r)
		g, i := ev[0], ev[1]
		if i != last[g]+1 {
			t.Fatalf("goroutine %d: got %d after %d (lost, duplicated or out of order)", g, i, last[g])
		}
		last[g] = i
	}
	wg.Wait()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if ev, ok := r.Next(ctx); ok {
		t.Fatalf("extra event %v", ev)
	}
	r.Post([2]int{-1, -1})
	if ev := next(t, r); ev[0] != -1 {
		t.Fatalf("extra event %v", ev)
	}
}

// TestRealConcurrentTimers runs At, Cancel and Post from many goroutines on
// the real clock: every event that was not cancelled is delivered exactly
// once, and no cancelled one is.
func TestRealConcurrentTimers(t *testing.T) {
	r := NewReal[int](clock.New())
	const G, N = 20, 100
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		cancelled = map[int]bool{}
	)
	for g := range G {
		wg.Go(func() {
			for i := range N {
				ev := g*N + i
				switch i % 4 {
				case 0:
					r.Post(ev)
				case 1:
					r.At(r.Now().Add(time.Duration(i%7)*time.Millisecond), ev)
				case 2:
					r.At(r.Now().Add(-time.Second), ev)
				case 3:
					id := r.At(r.Now().Add(time.Duration(i%5)*time.Millisecond), ev)
					if r.Cancel(id) {
						mu.Lock()
						cancelled[ev] = true
						mu.Unlock()
					}
				}
			}
		})
	}
	wg.Wait()
	seen := map[int]bool{}
	for range G*N - len(cancelled) {
		ev := next(t, r)
		if seen[ev] || cancelled[ev] {
			t.Fatalf("event %d: duplicate %v, cancelled %v", ev, seen[ev], cancelled[ev])
		}
		seen[ev] = true
	}
	// Nothing else is left: the next event is a new Post.
	r.Post(-1)
	if ev := next(t, r); ev != -1 {
		t.Fatalf("extra event %d", ev)
	}
}

func TestRealClockOrderSameInstant(t *testing.T) {
	r := NewReal[int](clock.New())
	when := r.Now().Add(5 * time.Millisecond)
	for i := range 50 {
		r.At(when, i)
	}
	for i := range 50 {
		if got := next(t, r); got != i {
			t.Fatalf("Next = %d, want %d", got, i)
		}
	}
	if r.Now().Before(when) {
		t.Fatal("delivered before its time")
	}
}

func TestRealNextStopsOnContext(t *testing.T) {
	r := NewReal[int](clock.NewMock())
	r.At(r.Now().Add(time.Hour), 1) // never due
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan bool)
	go func() {
		_, ok := r.Next(ctx)
		done <- ok
	}()
	cancel()
	select {
	case ok := <-done:
		if ok {
			t.Fatal("Next = true after cancel")
		}
	case <-time.After(guard):
		t.Fatal("Next did not return after cancel")
	}
	// A done context wins even when an event is ready.
	r.Post(2)
	if _, ok := r.Next(ctx); ok {
		t.Fatal("Next = true with done ctx")
	}
	expect(t, r, 2)
}

func TestRealIDs(t *testing.T) {
	r := NewReal[int](clock.NewMock())
	seen := map[TimerID]bool{}
	for i := range 100 {
		id := r.At(r.Now().Add(time.Duration(i%3)*time.Second), i)
		if id == 0 || seen[id] {
			t.Fatalf("id %x zero or reused", id)
		}
		seen[id] = true
		if i%2 == 0 {
			r.Cancel(id)
		}
	}
}
