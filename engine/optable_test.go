package engine

import (
	"math/rand/v2"
	"testing"
)

// TestOpTable checks the table against a map under random puts and
// removes of ids like the engine's: sequential, some in flight long.
func TestOpTable(t *testing.T) {
	for _, tc := range []struct {
		name     string
		inFlight int // most ops in flight at once
		steps    int
	}{
		{"one at a time", 1, 1000},
		{"few", 4, 20000},
		{"many", 64, 50000},
		{"grows", 300, 50000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tc.inFlight)))
			var tab opTable
			want := map[OpID]*opRun{}
			var live []OpID
			next := OpID(0)
			for step := 0; step < tc.steps; step++ {
				if len(live) < tc.inFlight && (len(live) == 0 || rng.IntN(2) == 0) {
					next++
					r := &opRun{id: next}
					tab.put(r)
					want[next] = r
					live = append(live, next)
				} else {
					// Mostly the oldest ends first; sometimes one is stuck.
					k := rng.IntN(len(live))
					if rng.IntN(4) > 0 {
						k = 0
					}
					id := live[k]
					live = append(live[:k], live[k+1:]...)
					tab.remove(id)
					delete(want, id)
					tab.remove(id) // a second completion finds nothing
				}
				if tab.n != len(want) {
					t.Fatalf("step %d: %d entries, want %d", step, tab.n, len(want))
				}
				for id, r := range want {
					if got := tab.get(id); got != r {
						t.Fatalf("step %d: get(%d) = %p, want %p", step, id, got, r)
					}
				}
				if got := tab.get(next + 1); got != nil {
					t.Fatalf("step %d: get of an id never put = %v", step, got)
				}
			}
		})
	}
}
