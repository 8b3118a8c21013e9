package desloop

import (
	"testing"
	"time"
)

// BenchmarkHeapLoop is the bare loop with 10,000 pending events, about as
// many timers as svcsim bench's workload holds: events per second.
func BenchmarkHeapLoop(b *testing.B) {
	d, _ := Run(10000, b.N, time.Minute, 1)
	b.ReportMetric(float64(b.N)/d.Seconds(), "events/s")
}

// BenchmarkBoxedLoop is the same with container/heap and interface
// events.
func BenchmarkBoxedLoop(b *testing.B) {
	d, _ := RunBoxed(10000, b.N, time.Minute, 1)
	b.ReportMetric(float64(b.N)/d.Seconds(), "events/s")
}

// TestLoopsAgree checks both loops handle the same events.
func TestLoopsAgree(t *testing.T) {
	_, a := Run(100, 10000, time.Minute, 7)
	_, b := RunBoxed(100, 10000, time.Minute, 7)
	if a != b {
		t.Fatalf("checksums %d and %d", a, b)
	}
}

// TestRunOrders checks the heap hands events out in time order.
func TestRunOrders(t *testing.T) {
	var h minHeap
	for i, at := range []int64{5, 3, 9, 1, 3, 7} {
		h.push(event{at: at, seq: uint64(i), id: int32(i)})
	}
	var got []int32
	for len(h) > 0 {
		got = append(got, h.pop().id)
	}
	want := []int32{3, 1, 4, 0, 5, 2} // 1, 3 (first in), 3, 5, 7, 9
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("popped %v, want %v", got, want)
		}
	}
}
