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

// TestOpTableCollisions puts ids that share a home slot, or whose runs
// wrap around the table's end, removes some and looks every id up: the
// probe runs must hold across removals. The table stays the smallest
// power of two (16 at least) at most half full.
func TestOpTableCollisions(t *testing.T) {
	tests := []struct {
		name   string
		put    []OpID
		remove []OpID
		size   int // len(slots) after the puts
	}{
		{"one home", []OpID{1, 17, 33, 49}, []OpID{17}, 16},
		{"one home, first removed", []OpID{1, 17, 33, 49}, []OpID{1}, 16},
		{"one home, all removed in turn", []OpID{3, 19, 35}, []OpID{3, 19, 35}, 16},
		{"wraps", []OpID{15, 31, 47, 14, 30}, []OpID{15, 14}, 16},
		{"a run over another's home", []OpID{5, 21, 6, 37, 22}, []OpID{5, 21}, 16},
		{"full to half", []OpID{1, 2, 3, 4, 5, 6, 7, 8}, []OpID{4}, 16},
		{"grows past half", []OpID{1, 2, 3, 4, 5, 6, 7, 8, 9}, []OpID{9, 1}, 32},
		{"grows with collisions", []OpID{1, 17, 33, 49, 65, 81, 97, 113, 129}, []OpID{65, 1}, 32},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tab opTable
			want := map[OpID]*opRun{}
			for _, id := range tt.put {
				r := &opRun{id: id}
				tab.put(r)
				want[id] = r
			}
			if len(tab.slots) != tt.size {
				t.Errorf("%d slots for %d ops, want %d", len(tab.slots), len(tt.put), tt.size)
			}
			for _, id := range tt.remove {
				tab.remove(id)
				delete(want, id)
				for _, id := range tt.put {
					if got := tab.get(id); got != want[id] {
						t.Fatalf("after removing %d: get(%d) = %v, want %v", id, id, got, want[id])
					}
				}
			}
			if tab.n != len(want) {
				t.Errorf("%d entries, want %d", tab.n, len(want))
			}
		})
	}
}
