package clockwork

import (
	"context"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
)

// BenchmarkVirtualAtNext measures one Next plus one At on a heap holding
// 10,000 pending timers (the simulator's steady state: every popped event
// schedules the next one at a pseudo-random time in the next ~17 minutes).
func BenchmarkVirtualAtNext(b *testing.B) {
	v := NewVirtual[int](t0)
	ctx := context.Background()
	x := uint64(88172645463325252)
	rnd := func() time.Duration { // xorshift64: no allocation, no lock
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		return time.Duration(x % uint64(1<<40)) // up to ~18 minutes
	}
	for i := range 10_000 {
		v.At(t0.Add(rnd()), i)
	}
	b.ReportAllocs()
	cpu0, ok := cpuTime()
	n := 0
	for i := 0; b.Loop(); i++ {
		if _, ok := v.Next(ctx); !ok {
			b.Fatal("empty")
		}
		v.At(v.Now().Add(rnd()), i)
		n++
	}
	if cpu1, ok1 := cpuTime(); ok && ok1 && n > 0 {
		// ns/op is wall time and grows on a busy machine; this does not.
		b.ReportMetric(float64(cpu1-cpu0)/float64(n), "cpu-ns/op")
	}
	if v.Len() != 10_000 {
		b.Fatalf("Len = %d", v.Len())
	}
}

// BenchmarkVirtualAtCancel measures At plus Cancel of that timer (a timeout
// set and then disarmed) on a heap of 10,000 pending timers.
func BenchmarkVirtualAtCancel(b *testing.B) {
	v := NewVirtual[int](t0)
	for i := range 10_000 {
		v.At(t0.Add(time.Duration(i)*time.Millisecond), i)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		id := v.At(t0.Add(time.Duration(i%20_000)*time.Millisecond), i)
		if !v.Cancel(id) {
			b.Fatal("cancel")
		}
	}
}

// BenchmarkRealPostNext measures a Post and the Next that returns it on the
// real scheduler (uncontended).
func BenchmarkRealPostNext(b *testing.B) {
	r := NewReal[int](clock.New())
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r.Post(i)
		if _, ok := r.Next(ctx); !ok {
			b.Fatal("Next")
		}
	}
}
