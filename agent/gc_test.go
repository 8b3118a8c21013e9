package agent

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestGCPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{0, 200},          // before the first collection
		{mib, 200},        // room 4 MiB, capped at GOGC 200
		{2 * mib, 200},    // a small node: room = twice the live heap
		{3 * mib, 134},    // 4/3, rounded up: the room is never less than 4 MiB
		{4 * mib, 100},    // room = the live heap: Go's default
		{10 * mib, 100},   // 1,000 services
		{1 << 30, 100},    // never below the default
		{2*mib + 1, 200},  // rounded up
		{gcRoom - 1, 101}, // just below
	} {
		if got := gcPercentFor(tc.live); got != tc.want {
			t.Errorf("gcPercentFor(%d) = %d, want %d", tc.live, got, tc.want)
		}
	}
}

// TestTuneGCSetsThePercent: TuneGC sets GOGC from the live heap before it
// returns (the test binary's heap is small: 200, or near it), and stop
// puts back the GOGC it found.
func TestTuneGCSetsThePercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(50))
	runtime.GC() // a live heap measured
	stop := TuneGC()
	got := debug.SetGCPercent(70)
	debug.SetGCPercent(got)
	stop()
	if got < 100 || got > 200 {
		t.Errorf("GOGC after TuneGC: %d, want 100-200", got)
	}
	if after := debug.SetGCPercent(50); after != 50 {
		t.Errorf("GOGC after stop: %d, want the 50 it found", after)
	}
}
