// Command svcsim runs the service manager's engine in the simulated world:
// the real engine and driver loop on virtual time, with fake services that
// do what data says (see scenarios/README.md).
//
//	svcsim run [--svg OUT] FILE|DIR...   print each scenario's trace (and draw its timeline)
//	svcsim test [-rewrite] [DIR|FILE]    replay every DIR/*.txt (or FILE) against its expected trace
//	svcsim explore --seeds N [--seed S]  random nodes and histories, every invariant checked
//	               [--workers W] [--shard I/N]  on W cores; only shard I of N of the seeds
//	svcsim bench                         the 10,000-service, 7-day workload; last line events/s N
//	svcsim replay JOURNAL                re-run svcrun's event journal (a file, or the directory
//	                                     with its rotated files) and report divergence
//	              --scenario OUT.txt     write it as a scenario with its expected trace instead
//	              [--from T] [--to T] [--service MODULE/NAME]  only a window of it in the trace
//
// Exit codes: 0 success; 1 a scenario, exploration or replay failed; 2 the
// command line is wrong.
package main

import (
	"context"
	"os"

	"github.com/oarbank/svcrun/internal/cli"
)

var program = &cli.Program{
	Name: "svcsim",
	Commands: map[string]cli.Command{
		"run":     {Summary: "print the trace of scenario files (--svg: draw their timelines)", Run: runRun},
		"test":    {Summary: "replay the scenarios of a directory against their expected traces", Run: runTest},
		"explore": {Summary: "random nodes and histories from seeds, every invariant after every step", Run: runExplore},
		"bench":   {Summary: "the generated 10,000-service, 7-day workload; prints events/s", Run: runBench},
		"replay": {Summary: "re-run an svcrun event journal through the engine and report divergence (--scenario: " +
			"write it as a scenario)", Run: runReplay},
	},
	Footer: "The scenario format: scenarios/README.md. Run 'svcsim <command> -h' for a command's flags.",
}

func main() {
	os.Exit(program.Run(context.Background(), &cli.Env{Stdout: os.Stdout, Stderr: os.Stderr}, os.Args[1:]))
}
