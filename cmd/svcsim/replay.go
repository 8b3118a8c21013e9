package main

import (
	"context"
	"fmt"
	"os"

	"github.com/oarbank/svcrun/internal/cli"
	"github.com/oarbank/svcrun/sim"
)

// runReplay is `svcsim replay JOURNAL`: the journal's events through a new
// engine; exit 1 if any step decides differently.
func runReplay(_ context.Context, env *cli.Env, args []string) error {
	fs := cli.FlagSet(env, "svcsim", "replay", "JOURNAL")
	rest, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return cli.Usagef("give one journal file")
	}
	f, err := os.Open(rest[0])
	if err != nil {
		return err
	}
	defer f.Close()
	steps, divs, err := sim.Replay(f)
	if err != nil {
		return fmt.Errorf("%s: %w", rest[0], err)
	}
	for _, d := range divs {
		fmt.Fprintf(env.Stderr, "%s: %s\n\n", rest[0], d)
	}
	if len(divs) > 0 {
		fmt.Fprintf(env.Stderr, "%d of %d steps diverge\n", len(divs), steps)
		return cli.ExitError{Code: 1}
	}
	fmt.Fprintf(env.Stdout, "ok: %d steps replayed, same decisions\n", steps)
	return nil
}
