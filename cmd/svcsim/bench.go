package main

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/oarbank/svcrun/bench/desloop"
	"github.com/oarbank/svcrun/internal/cli"
	"github.com/oarbank/svcrun/sim"
)

// runBench is `svcsim bench`: the generated workload, timed, then, in the
// same run, as many events of the bare heap-based loop of bench/desloop
// with as many pending events as the node has services. The last lines
// are `events/s N`, `heap loop events/s M` and `ratio N/M`.
func runBench(_ context.Context, env *cli.Env, args []string) error {
	wl := sim.DefaultWorkload
	fs := env.FlagSet("bench", "[--services N] [--days D] [--seed S]")
	fs.IntVar(&wl.Services, "services", wl.Services, "services on the node")
	days := fs.Float64("days", wl.Duration.Hours()/24, "simulated days")
	fs.Uint64Var(&wl.Seed, "seed", wl.Seed, "the workload's seed")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if err := cli.NoArgs(fs); err != nil {
		return err
	}
	if wl.Services < 1 || *days <= 0 {
		return cli.Usagef("--services and --days must be positive")
	}
	wl.Duration = time.Duration(*days * 24 * float64(time.Hour))
	// A batch run: trade memory for fewer collections.
	debug.SetGCPercent(400)
	start := time.Now()
	res, err := wl.Run()
	wall := time.Since(start)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "%d services, %.1f simulated days, seed %d\n", wl.Services, *days, wl.Seed)
	fmt.Fprintf(env.Stdout, "%d engine events, %d leases admitted, %d rejected, %d starts\n", res.Events, res.Admitted, res.Rejected, res.Starts)
	fmt.Fprintf(env.Stdout, "wall %.2f s\n", wall.Seconds())
	rate := float64(res.Events) / wall.Seconds()
	fmt.Fprintf(env.Stdout, "events/s %.0f\n", rate)
	floor, _ := desloop.Run(wl.Services, res.Events, time.Minute, wl.Seed)
	heap := float64(res.Events) / floor.Seconds()
	fmt.Fprintf(env.Stdout, "heap loop events/s %.0f\n", heap)
	fmt.Fprintf(env.Stdout, "ratio %.3f\n", rate/heap)
	return nil
}
