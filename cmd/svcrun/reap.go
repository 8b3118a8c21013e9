package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/oarbank/svcrun/api"
	"github.com/oarbank/svcrun/internal/cli"
)

// runReap is `svcrun reap`: run a reap round and print, once it has ended,
// what it destroyed, what it kept and why, and what failed. A round already
// running took its snapshot of live attempts before this request: reap
// then waits for it to end and gets the next round (every request made
// meanwhile shares that one). Exit 1 when a listing or a destroy failed.
func runReap(ctx context.Context, m *cli.Env, args []string) error {
	fs := m.FlagSet("reap", "[--json] [--socket PATH | --config FILE]")
	sock := addSocketFlags(m, fs)
	asJSON := m.JSONFlag(fs, "print the round as JSON: round, snapshot, services with their objects")
	c, err := connect(fs, sock, args)
	if err != nil {
		return err
	}
	defer c.Close()
	r, err := c.Reap(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		err = cli.PrintJSON(m.Stdout, r)
	} else {
		printReap(m.Stdout, r)
	}
	if err == nil && reapFailed(r) {
		return cli.ExitError{Code: 1}
	}
	return err
}

func reapFailed(r api.ReapResult) bool {
	for _, s := range r.Services {
		if s.Failed != "" {
			return true
		}
		for _, o := range s.Objects {
			if o.Outcome == "failed" {
				return true
			}
		}
	}
	return false
}

// printReap prints a round service by service, then its totals, e.g.
//
//	demo/kv: 2 listed
//	  destroyed  vol-a9  volume, attempt a9
//	  kept       vol-a1  volume, attempt a1: attempt live
func printReap(w io.Writer, r api.ReapResult) {
	fmt.Fprintf(w, "reap round %d, live attempts as of %s\n", r.Round, r.Snapshot.Local().Format("15:04:05.000"))
	n := map[string]int{}
	for _, s := range r.Services {
		switch {
		case s.Skipped != "":
			fmt.Fprintf(w, "%s: not listed: %s\n", s.Service, s.Skipped)
			continue
		case s.Failed != "":
			fmt.Fprintf(w, "%s: FAILED: %s\n", s.Service, s.Failed)
		default:
			fmt.Fprintf(w, "%s: %d listed\n", s.Service, len(s.Objects))
		}
		for _, o := range s.Objects {
			n[o.Outcome]++
			what := o.Kind
			if o.Attempt != "" {
				what += ", attempt " + o.Attempt
			}
			if o.Forced {
				what += ", --force"
			}
			line := fmt.Sprintf("  %-9s  %s  %s", o.Outcome, o.ID, what)
			if o.Reason != "" {
				line += ": " + o.Reason
			}
			fmt.Fprintln(w, strings.TrimRight(line, " "))
		}
	}
	fmt.Fprintf(w, "%d destroyed, %d kept, %d failed\n", n["destroyed"], n["kept"], n["failed"])
}
