package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/oarbank/svcrun/internal/cli"
	"github.com/oarbank/svcrun/sim"
	"github.com/oarbank/svcrun/sim/scenario"
)

// runExplore is `svcsim explore --seeds N [--seed S] [--steps K]`: N seeded
// explorations from S; on the first failure it prints the seed, the broken
// rule, the end of the trace, and writes the inputs as a scenario file.
func runExplore(_ context.Context, env *cli.Env, args []string) error {
	fs := env.FlagSet("explore", "--seeds N [--seed S] [--steps K] [--out FILE]")
	seeds := fs.Int("seeds", 100, "how many seeds to explore")
	first := fs.Uint64("seed", 0, "the first seed (default: from the clock, printed)")
	steps := fs.Int("steps", 400, "inputs in the safety phase of each exploration")
	out := fs.String("out", "explore-failure.txt", "where to write the reproducing scenario on failure")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if err := cli.NoArgs(fs); err != nil {
		return err
	}
	if *seeds < 1 || *steps < 1 {
		return cli.Usagef("--seeds and --steps must be at least 1")
	}
	if *first == 0 {
		*first = uint64(time.Now().UnixNano())
	}
	fmt.Fprintf(env.Stdout, "exploring %d seed(s) from %d, %d inputs each\n", *seeds, *first, *steps)
	for i := 0; i < *seeds; i++ {
		seed := *first + uint64(i)
		x := sim.Explore(seed, *steps)
		if x.Err == nil {
			continue
		}
		fmt.Fprintf(env.Stderr, "seed %d: %v\n\nthe end of the trace:\n%s\n", seed, x.Err, strings.Join(x.Recent, "\n"))
		if err := os.WriteFile(*out, []byte(scenario.Explored(x)), 0o644); err != nil {
			return fmt.Errorf("write the reproducing scenario: %w", err)
		}
		fmt.Fprintf(env.Stderr, "\nreproduce: svcsim explore --seeds 1 --seed %d --steps %d\nthe inputs as a scenario: %s (svcsim run %s)\n", seed, *steps, *out, *out)
		return cli.ExitError{Code: 1}
	}
	fmt.Fprintf(env.Stdout, "ok: %d seed(s), every invariant held and every liveness check converged\n", *seeds)
	return nil
}
