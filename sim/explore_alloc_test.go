package sim

import "testing"

// TestExploreAllocations bounds the allocations of seeds 1 to 10: every
// one is collector work that the workers of svcsim explore share. The
// invariants once took a fresh engine view twice per step and formatted a
// trace line for every step, and the view grew its lists by doubling:
// then these seeds took 3.4 million allocations, 1.1 million since.
func TestExploreAllocations(t *testing.T) {
	const steps, most = 400, 1_500_000
	allocs := testing.AllocsPerRun(1, func() {
		for seed := uint64(1); seed <= 10; seed++ {
			if x := Explore(seed, steps); x.Err != nil {
				t.Fatalf("seed %d: %v", seed, x.Err)
			}
		}
	})
	t.Logf("seeds 1-10: %.0f allocations", allocs)
	if allocs > most {
		t.Errorf("seeds 1-10: %.0f allocations, want at most %d", allocs, most)
	}
}
