package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/oarbank/svcrun/internal/cli"
	"github.com/oarbank/svcrun/sim"
	"github.com/oarbank/svcrun/sim/scenario"
)

// runExplore is `svcsim explore --seeds N [--seed S] [--steps K]
// [--workers W] [--shard I/N]`: N seeded explorations from S on W cores;
// on the first failure (by seed) it prints the seed, the broken rule, the
// end of the trace, and writes the inputs as a scenario file.
func runExplore(_ context.Context, env *cli.Env, args []string) error {
	return explore(env, args, sim.Explore)
}

// exploreHeapPerWorker is the heap the collector lets each worker fill
// before it runs, unless GOGC or GOMEMLIMIT is set.
const exploreHeapPerWorker = 64 << 20

// collectForExplore sets the collector for an exploration on workers
// goroutines and returns what restores it. A seed's live heap is a few
// MiB and most of what it allocates is dead by the next step: relative to
// so small a heap, even GOGC 400 collected every 16 MB, some 300 times
// per 300 seeds; each collection is work the workers share and stops
// both. Collecting only at a fixed heap per worker makes it about 45
// times per 300 seeds, for some 130 MB of RSS on two workers
// (bench/README.md, row explore-cores; the runs in bench/HISTORY.md).
func collectForExplore(workers int) (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	percent := debug.SetGCPercent(-1)
	limit := debug.SetMemoryLimit(int64(workers) * exploreHeapPerWorker)
	return func() {
		debug.SetMemoryLimit(limit)
		debug.SetGCPercent(percent)
	}
}

// explore is runExplore with the exploration of one seed given, so that a
// test can make a seed fail.
func explore(env *cli.Env, args []string, one func(seed uint64, steps int) sim.Exploration) error {
	fs := env.FlagSet("explore", "--seeds N [--seed S] [--steps K] [--workers W] [--shard I/N] [--out FILE]")
	seeds := fs.Int("seeds", 100, "how many seeds to explore (over all shards)")
	first := fs.Uint64("seed", 0, "the first seed (default: from the clock, printed)")
	steps := fs.Int("steps", 400, "inputs in the safety phase of each exploration")
	workers := fs.Int("workers", runtime.GOMAXPROCS(0), "seeds explored at once")
	shard := fs.String("shard", "", "explore only shard I of N: the k-th seed from --seed belongs to shard k%N+1")
	out := fs.String("out", "explore-failure.txt", "where to write the reproducing scenario on failure")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if err := cli.NoArgs(fs); err != nil {
		return err
	}
	if *seeds < 1 || *steps < 1 || *workers < 1 {
		return cli.Usagef("--seeds, --steps and --workers must be at least 1")
	}
	i, n := 1, 1
	if *shard != "" {
		var err error
		if i, n, err = parseShard(*shard); err != nil {
			return cli.Usagef("--shard %q: %v", *shard, err)
		}
		if *first == 0 {
			// Shards drawing their first seed from their own clocks
			// would explore unrelated seeds, not split one run.
			return cli.Usagef("--shard needs --seed: every shard must split the same seeds")
		}
	}
	if *first == 0 {
		*first = uint64(time.Now().UnixNano())
	}
	list, err := sim.ShardSeeds(*first, *seeds, i, n)
	if err != nil {
		return cli.Usagef("--shard: %v", err)
	}
	defer collectForExplore(max(1, min(*workers, len(list))))()
	if n > 1 {
		fmt.Fprintf(env.Stdout, "exploring shard %d/%d: %d of %d seed(s) from %d, %d inputs each, %d worker(s)\n",
			i, n, len(list), *seeds, *first, *steps, *workers)
	} else {
		fmt.Fprintf(env.Stdout, "exploring %d seed(s) from %d, %d inputs each, %d worker(s)\n",
			*seeds, *first, *steps, *workers)
	}
	var failed *sim.Exploration
	explored := 0
	begin := time.Now()
	sim.ExploreSeeds(list, *workers, func(seed uint64) sim.Exploration { return one(seed, *steps) },
		func(x sim.Exploration) bool {
			explored++
			if x.Err != nil {
				failed = &x
			}
			return x.Err == nil
		})
	elapsed := time.Since(begin)
	fmt.Fprintf(env.Stdout, "%d seed(s) in %.2fs: %.2f seeds/s on %d worker(s)\n",
		explored, elapsed.Seconds(), float64(explored)/elapsed.Seconds(), *workers)
	if x := failed; x != nil {
		if err := os.WriteFile(*out, []byte(scenario.Explored(*x)), 0o644); err != nil {
			return fmt.Errorf("seed %d: %v; write the reproducing scenario: %w", x.Seed, x.Err, err)
		}
		return &cli.Failure{Msg: fmt.Sprintf("seed %d: %v", x.Seed, x.Err),
			Lines: append([]string{"the end of the trace:"}, x.Recent...),
			Hint: fmt.Sprintf(
				"reproduce: svcsim explore --seeds 1 --seed %d --steps %d; the inputs as a scenario: %s (svcsim run %s)",
				x.Seed, *steps, *out, *out)}
	}
	fmt.Fprintf(env.Stdout, "ok: %d seed(s), every invariant held and every liveness check converged\n", len(list))
	return nil
}

// parseShard reads "I/N", 1 <= I <= N.
func parseShard(s string) (i, n int, err error) {
	a, b, ok := strings.Cut(s, "/")
	if !ok {
		return 0, 0, fmt.Errorf("want I/N, as 2/4")
	}
	if i, err = strconv.Atoi(a); err != nil {
		return 0, 0, fmt.Errorf("shard index: %w", err)
	}
	if n, err = strconv.Atoi(b); err != nil {
		return 0, 0, fmt.Errorf("shard count: %w", err)
	}
	if n < 1 || i < 1 || i > n {
		return 0, 0, fmt.Errorf("want 1 <= I <= N")
	}
	return i, n, nil
}
