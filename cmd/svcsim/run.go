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

// runRun is `svcsim run [--svg OUT] FILE...`: it prints each scenario's
// trace. With one FILE, --svg OUT is the SVG file to write; with several, a
// directory that gets NAME.svg for each.
func runRun(_ context.Context, env *cli.Env, args []string) error {
	fs := env.FlagSet("run", "[--svg OUT] FILE...")
	svg := fs.String("svg", "", "also draw each scenario's timeline as SVG: a file for one scenario, a directory for several")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	files := fs.Args()
	if len(files) == 0 {
		return cli.UsageError{Msg: "no scenario file given"}
	}
	failed := false
	for i, file := range files {
		sc, err := scenario.ParseFile(file)
		if err != nil {
			env.Printf("%v", err)
			failed = true
			continue
		}
		res, err := sc.Run()
		if len(files) > 1 {
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
			if len(files) > 1 {
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
