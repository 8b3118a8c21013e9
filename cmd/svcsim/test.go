package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/oarbank/svcrun/internal/cli"
	"github.com/oarbank/svcrun/sim/scenario"
)

// runTest is `svcsim test [-rewrite] [DIR|FILE]`: every DIR/*.txt (or the
// one FILE) is replayed and its trace compared with the expected one after
// its `----` line.
func runTest(_ context.Context, env *cli.Env, args []string) error {
	fs := env.FlagSet("test", "[-rewrite] [DIR|FILE]")
	rewrite := fs.Bool("rewrite", false, "write the actual traces into the files instead of comparing")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	arg := "scenarios"
	switch fs.NArg() {
	case 0:
	case 1:
		arg = fs.Arg(0)
	default:
		return cli.UsageError{Msg: "at most one directory or file"}
	}
	files, _, err := scenarioFiles([]string{arg})
	if err != nil {
		return err
	}
	bad, rewritten := 0, 0
	var report []string // each failed scenario: its FAIL line, then why
	for _, f := range files {
		c, err := scenario.CheckFile(f, *rewrite)
		switch {
		case err != nil:
			report = append(report, "FAIL "+f)
			report = append(report, strings.Split(err.Error(), "\n")...)
			bad++
		case c.Rewritten:
			fmt.Fprintf(env.Stdout, "rewrote %s\n", f)
			rewritten++
		case c.Diff != "":
			report = append(report, "FAIL "+f+": the trace differs from the expected one")
			report = append(report, strings.Split(strings.TrimSuffix(c.Diff, "\n"), "\n")...)
			bad++
		}
	}
	switch {
	case bad > 0:
		f := &cli.Failure{Msg: fmt.Sprintf("%d of %d scenario(s) failed", bad, len(files)), Lines: report}
		if !*rewrite {
			f.Hint = "svcsim test -rewrite records the actual traces; read their diff before committing them"
		}
		return f
	case *rewrite:
		fmt.Fprintf(env.Stdout, "%d scenario(s), %d rewritten\n", len(files), rewritten)
	default:
		fmt.Fprintf(env.Stdout, "ok: %d scenario(s)\n", len(files))
	}
	return nil
}

// scenarioFiles expands the arguments of run and test: a directory stands
// for its *.txt in name order, anything else is a scenario file. dirs
// tells whether a directory was among them.
func scenarioFiles(args []string) (files []string, dirs bool, err error) {
	for _, arg := range args {
		info, err := os.Stat(arg)
		if err != nil {
			return nil, false, fmt.Errorf("scenario: %w", err)
		}
		if !info.IsDir() {
			files = append(files, arg)
			continue
		}
		dirs = true
		in, err := filepath.Glob(filepath.Join(arg, "*.txt"))
		if err != nil {
			return nil, false, fmt.Errorf("scenarios of %s: %w", arg, err)
		}
		if len(in) == 0 {
			return nil, false, fmt.Errorf("no scenario (*.txt) in %s", arg)
		}
		sort.Strings(in)
		files = append(files, in...)
	}
	return files, dirs, nil
}
