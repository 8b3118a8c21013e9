package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/oarbank/svcrun/internal/cli"
	"github.com/oarbank/svcrun/sim/scenario"
)

// runTest is `svcsim test [-rewrite] [DIR]`: every DIR/*.txt is replayed
// and its trace compared with the expected one after its `----` line.
func runTest(_ context.Context, env *cli.Env, args []string) error {
	fs := env.FlagSet("test", "[-rewrite] [DIR]")
	rewrite := fs.Bool("rewrite", false, "write the actual traces into the files instead of comparing")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	dir := "scenarios"
	switch fs.NArg() {
	case 0:
	case 1:
		dir = fs.Arg(0)
	default:
		return cli.UsageError{Msg: "at most one directory"}
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		if _, err := os.Stat(dir); err != nil {
			return fmt.Errorf("%v", err)
		}
		return fmt.Errorf("no scenario (*.txt) in %s", dir)
	}
	sort.Strings(files)
	bad, rewritten := 0, 0
	for _, f := range files {
		c, err := scenario.CheckFile(f, *rewrite)
		switch {
		case err != nil:
			fmt.Fprintf(env.Stderr, "FAIL %s\n%v\n", f, err)
			bad++
		case c.Rewritten:
			fmt.Fprintf(env.Stdout, "rewrote %s\n", f)
			rewritten++
		case c.Diff != "":
			fmt.Fprintf(env.Stderr, "FAIL %s: the trace differs from the expected one\n%s", f, c.Diff)
			bad++
		}
	}
	switch {
	case bad > 0:
		fmt.Fprintf(env.Stderr, "%d of %d scenario(s) failed", bad, len(files))
		if !*rewrite {
			fmt.Fprint(env.Stderr, " (svcsim test -rewrite records the actual traces)")
		}
		fmt.Fprintln(env.Stderr)
		return cli.ExitError{Code: 1}
	case *rewrite:
		fmt.Fprintf(env.Stdout, "%d scenario(s), %d rewritten\n", len(files), rewritten)
	default:
		fmt.Fprintf(env.Stdout, "ok: %d scenario(s)\n", len(files))
	}
	return nil
}
