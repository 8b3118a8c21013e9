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
// same run, as many events of the bare heap-based loops of bench/desloop
// (typed, and boxed over container/heap) with as many pending events as the
// node has services, also per CPU second. The last lines are `heap loop
// events/s M` and `ratio N/M` (N: the workload's events/s).
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
	cpu0, cpuOK := desloop.CPU()
	start := time.Now()
	res, err := wl.Run()
	wall := time.Since(start)
	cpu1, _ := desloop.CPU()
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "%d services, %.1f simulated days, seed %d\n", wl.Services, *days, wl.Seed)
	fmt.Fprintf(env.Stdout, "%d engine events, %d leases admitted, %d rejected, %d starts\n",
		res.Events, res.Admitted, res.Rejected, res.Starts)
	fmt.Fprintf(env.Stdout, "wall %.2f s\n", wall.Seconds())
	rate := float64(res.Events) / wall.Seconds()
	fmt.Fprintf(env.Stdout, "events/s %.0f\n", rate)
	floor, _ := desloop.Run(wl.Services, res.Events, time.Minute, wl.Seed)
	cpu2, _ := desloop.CPU()
	boxed, _ := desloop.RunBoxed(wl.Services, res.Events, time.Minute, wl.Seed)
	cpu3, _ := desloop.CPU()
	heap := float64(res.Events) / floor.Seconds()
	fmt.Fprintf(env.Stdout, "boxed heap loop events/s %.0f (ratio %.3f)\n",
		float64(res.Events)/boxed.Seconds(), rate*boxed.Seconds()/float64(res.Events))
	if cpuOK {
		// Per CPU second too: other load on a shared machine slows the
		// long workload and the short loops unequally.
		perCPU := func(d time.Duration) float64 { return float64(res.Events) / d.Seconds() }
		sim := perCPU(cpu1 - cpu0)
		fmt.Fprintf(env.Stdout,
			"per CPU second: events %.0f, heap loop %.0f (ratio %.3f), boxed heap loop %.0f (ratio %.3f)\n",
			sim, perCPU(cpu2-cpu1), sim/perCPU(cpu2-cpu1), perCPU(cpu3-cpu2), sim/perCPU(cpu3-cpu2))
	}
	fmt.Fprintf(env.Stdout, "heap loop events/s %.0f\n", heap)
	fmt.Fprintf(env.Stdout, "ratio %.3f\n", rate/heap)
	return nil
}
