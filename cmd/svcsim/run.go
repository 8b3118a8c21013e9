package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/oarbank/svcrun/internal/cli"
	"github.com/oarbank/svcrun/sim/scenario"
	"github.com/oarbank/svcrun/sim/timeline"
)

// runRun is `svcsim run [--svg OUT] FILE|DIR...`: it prints the trace of
// each scenario (a DIR stands for its *.txt). With one FILE, --svg OUT is
// the SVG file to write; with several or a DIR, a directory that gets
// NAME.svg for each.
func runRun(_ context.Context, env *cli.Env, args []string) error {
	fs := env.FlagSet("run", "[--svg OUT] FILE|DIR...")
	svg := fs.String("svg", "",
		"also draw each scenario's timeline as SVG: a file for one scenario, a directory for several")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return cli.UsageError{Msg: "no scenario file or directory given"}
	}
	files, dirs, err := scenarioFiles(fs.Args())
	if err != nil {
		return err
	}
	several := len(files) > 1 || dirs
	failed := false
	for i, file := range files {
		sc, err := scenario.ParseFile(file)
		if err != nil {
			env.Printf("%v", err)
			failed = true
			continue
		}
		res, err := sc.Run()
		if several {
			if i > 0 {
				fmt.Fprintln(env.Stdout)
			}
			fmt.Fprintf(env.Stdout, "== %s\n", file)
		}
		if res != nil {
			fmt.Fprint(env.Stdout, res.Trace())
		}
		if err != nil {
			env.Printf("%v", err)
			failed = true
			continue
		}
		if *svg != "" {
			out := *svg
			if several {
				if err := os.MkdirAll(out, 0o755); err != nil {
					return err
				}
				out = filepath.Join(out, strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))+".svg")
			}
			if err := os.WriteFile(out, timeline.SVG(res), 0o644); err != nil {
				return err
			}
		}
	}
	if failed {
		return cli.ExitError{Code: 1}
	}
	return nil
}
