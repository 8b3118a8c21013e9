package sim

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
)

// TestExplore runs seeded explorations through both phases; svcsim explore
// runs many more.
func TestExplore(t *testing.T) {
	for seed := uint64(1); seed <= 60; seed++ {
		x := Explore(seed, 200)
		if x.Err != nil {
			t.Fatalf("seed %d: %v\ninputs:\n%s\nrecent trace:\n%s", seed, x.Err, strings.Join(x.Inputs, "\n"),
				strings.Join(x.Recent, "\n"))
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

func TestShardSeedsPartition(t *testing.T) {
	for _, tc := range []struct {
		first    uint64
		count, n int
	}{
		{1, 300, 1}, {1, 300, 2}, {1, 10, 3}, {42, 7, 4}, {5, 2, 5}, {9, 1, 3},
	} {
		seen := map[uint64]int{}
		for i := 1; i <= tc.n; i++ {
			seeds, err := ShardSeeds(tc.first, tc.count, i, tc.n)
			if err != nil {
				t.Fatalf("%+v shard %d: %v", tc, i, err)
			}
			// Striding keeps the shards within one seed of each other.
			if want := tc.count / tc.n; len(seeds) != want && len(seeds) != want+1 {
				t.Errorf("%+v shard %d: %d seeds, want %d or %d", tc, i, len(seeds), want, want+1)
			}
			for _, s := range seeds {
				seen[s]++
			}
		}
		if len(seen) != tc.count {
			t.Errorf("%+v: the shards hold %d distinct seeds, want %d", tc, len(seen), tc.count)
		}
		for s := tc.first; s < tc.first+uint64(tc.count); s++ {
			if seen[s] != 1 {
				t.Errorf("%+v: seed %d in %d shards, want exactly 1", tc, s, seen[s])
			}
		}
	}
	for _, bad := range [][2]int{{0, 2}, {3, 2}, {1, 0}, {-1, 3}} {
		if _, err := ShardSeeds(1, 10, bad[0], bad[1]); err == nil {
			t.Errorf("shard %d/%d: no error", bad[0], bad[1])
		}
	}
}

// TestExploreSeedsLikeAlone: a seed explored among others on one, two or
// three workers gives the report it gives alone, and reports come in seed
// order.
func TestExploreSeedsLikeAlone(t *testing.T) {
	const steps = 120
	seeds := []uint64{3, 1, 4, 15, 9, 2, 6, 5}
	alone := map[uint64]Exploration{}
	for _, seed := range seeds {
		alone[seed] = Explore(seed, steps)
	}
	for _, workers := range []int{1, 2, 3} {
		var got []Exploration
		ExploreSeeds(seeds, workers, func(seed uint64) Exploration { return Explore(seed, steps) }, func(x Exploration) bool {
			got = append(got, x)
			return true
		})
		if len(got) != len(seeds) {
			t.Fatalf("%d workers: %d reports for %d seeds", workers, len(got), len(seeds))
		}
		for i, x := range got {
			if x.Seed != seeds[i] {
				t.Fatalf("%d workers: report %d is seed %d, want %d", workers, i, x.Seed, seeds[i])
			}
			a := alone[x.Seed]
			if x.Steps != a.Steps || fmt.Sprint(x.Err) != fmt.Sprint(a.Err) ||
				strings.Join(x.Inputs, "\n") != strings.Join(a.Inputs, "\n") ||
				strings.Join(x.Recent, "\n") != strings.Join(a.Recent, "\n") {
				t.Errorf("%d workers: seed %d: its report among others differs from the one alone", workers, x.Seed)
			}
		}
	}
}

// TestExploreSeedsStopsAtFirstFailure: the failure reported is the first
// by seed, whichever worker finishes first, and nothing after it.
func TestExploreSeedsStopsAtFirstFailure(t *testing.T) {
	seeds := make([]uint64, 40)
	for i := range seeds {
		seeds[i] = uint64(i + 1)
	}
	for _, workers := range []int{1, 2, 5} {
		var ran atomic.Int64
		var reported []uint64
		ExploreSeeds(seeds, workers, func(seed uint64) Exploration {
			ran.Add(1)
			x := Exploration{Seed: seed}
			if seed == 7 || seed == 9 {
				x.Err = errors.New("broken")
			}
			return x
		}, func(x Exploration) bool {
			reported = append(reported, x.Seed)
			return x.Err == nil
		})
		if fmt.Sprint(reported) != "[1 2 3 4 5 6 7]" {
			t.Errorf("%d workers: reported seeds %v, want 1 to 7", workers, reported)
		}
		// Only the window of seeds begun before the failure was seen runs.
		if n := ran.Load(); n > int64(7+4*workers) {
			t.Errorf("%d workers: %d seeds ran after a failure at the 7th", workers, n)
		}
	}
}
