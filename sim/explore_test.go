package sim

import (
	"strings"
	"testing"
)

// TestExplore runs seeded explorations through both phases; svcsim explore
// runs many more.
func TestExplore(t *testing.T) {
	for seed := uint64(1); seed <= 60; seed++ {
		x := Explore(seed, 200)
		if x.Err != nil {
			t.Fatalf("seed %d: %v\ninputs:\n%s\nrecent trace:\n%s", seed, x.Err, strings.Join(x.Inputs, "\n"), strings.Join(x.Recent, "\n"))
		}
	}
}

func TestExploreIsDeterministic(t *testing.T) {
	a, b := Explore(42, 150), Explore(42, 150)
	if strings.Join(a.Inputs, "\n") != strings.Join(b.Inputs, "\n") {
		t.Fatal("same seed, different inputs")
	}
	// Same seed, same trace: the whole journal of two runs, byte for byte.
	for seed := uint64(1); seed <= 5; seed++ {
		if x, y := journalOf(t, seed).String(), journalOf(t, seed).String(); x != y {
			t.Fatalf("seed %d: two runs wrote different journals", seed)
		}
	}
}
