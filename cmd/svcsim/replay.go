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
	fs := env.FlagSet("replay", "JOURNAL")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	journal, err := cli.OneArg(fs, "JOURNAL", " (a file of svcrun's <data_dir>/journal/)")
	if err != nil {
		return err
	}
	f, err := os.Open(journal)
	if err != nil {
		return err
	}
	defer f.Close()
	steps, divs, err := sim.Replay(f)
	if err != nil {
		return fmt.Errorf("%s: %w", journal, err)
	}
	for _, d := range divs {
		fmt.Fprintf(env.Stderr, "%s: %s\n\n", journal, d)
	}
	if len(divs) > 0 {
		fmt.Fprintf(env.Stderr, "%d of %d steps diverge\n", len(divs), steps)
		return cli.ExitError{Code: 1}
	}
	fmt.Fprintf(env.Stdout, "ok: %d steps replayed, same decisions\n", steps)
	return nil
}
