package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/oarbank/svcrun/conformance"
	"github.com/oarbank/svcrun/internal/cli"
	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/sandbox"
)

const checkSynopsis = `--bundle DIR [NAME...] [--json] [--data DIR] [--settings FILE] [--node-id ID]

Checks that the services and probes of a module bundle (the NAMEd ones, or
all) follow service protocol 1, running their ops exactly as the agent runs
them: the environment, the sandbox (best_effort), the protocol's timeouts,
the validation of every output, and each service in a cgroup v2 process
container where this host allows it (as root), else in process groups.
Each check of each service and probe is reported as PASS, FAIL or SKIP
(it needs a check that did not pass, or its op broke the protocol or timed
out, which the checks output and timeouts report) with its evidence; the
checks are listed in docs/check.md. Whatever the checks start is stopped
and killed before svcrun check exits, a failing module included.

Exit status: 0 when every check passed, 1 when one did not (or the bundle
is invalid), 2 for a wrong command line.

Flags:`

// runCheck runs the conformance checks of a bundle's services and probes.
func runCheck(ctx context.Context, m *cli.Env, args []string) error {
	fs := m.FlagSet("check", checkSynopsis)
	bundle := fs.String("bundle", "", "the module bundle `DIR`")
	data := fs.String("data", "", "the module data `DIR` (OARBANK_MODULE_DATA), kept afterwards; default a new temporary directory, removed afterwards")
	settingsFile := fs.String("settings", "", "a JSON `FILE` with the module's settings, written to OARBANK_SETTINGS_FILE (default: {})")
	nodeID := fs.String("node-id", "", "OARBANK_NODE_ID, the node `ID` (default: the host name)")
	asJSON := fs.Bool("json", false, "print one JSON document with every check and its evidence")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if *bundle == "" {
		return cli.UsageError{Msg: "give --bundle DIR"}
	}
	mod, err := manifest.Load(*bundle)
	if err != nil {
		return invalid(m, []string{err.Error()})
	}
	for _, name := range fs.Args() {
		if _, err := findTarget(mod, name); err != nil {
			return err
		}
	}
	// The executor's records of ops in flight, and the module data dir
	// unless --data names one, go to a directory of this check's own.
	state, err := os.MkdirTemp("", "svcrun-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(state)
	moduleData := *data
	if moduleData == "" {
		moduleData = filepath.Join(state, "modules", mod.Name)
	}
	node, err := bundleNode(mod, *settingsFile, moduleData, *nodeID)
	if err != nil {
		return err
	}
	node.cfg.File = "(svcrun check --bundle " + mod.Dir + ")"
	node.cfg.DataDir = state
	plan, err := sandbox.PlanFor(node.cfg, node.mod)
	if err == nil {
		err = plan.Err()
	}
	if err != nil {
		return fmt.Errorf("module %s: %w", mod.Name, err)
	}
	rep, err := conformance.Check(ctx, conformance.Config{
		Node: node.cfg, Module: node.mod, Names: fs.Args(),
		User: node.id.User, Owner: node.id.Owner,
	})
	if errors.Is(err, conformance.ErrUnknownName) {
		return cli.UsageError{Msg: err.Error()}
	}
	if err != nil {
		return err
	}
	if *asJSON {
		if err := cli.PrintJSON(m.Stdout, rep); err != nil {
			return err
		}
	} else {
		printCheckReport(m, rep, *data != "")
	}
	for _, l := range rep.Leftovers {
		m.Warnf("%s", l)
	}
	if !rep.OK() {
		return cli.ExitError{Code: 1}
	}
	return nil
}

// checkEvidenceLines bounds the stderr shown under a failed check.
const checkEvidenceLines = 5

// printCheckReport writes one line per check, the evidence of the ops that
// failed under a check that did not pass, and the summary line; kept says
// the module data dir stays (--data).
func printCheckReport(m *cli.Env, rep *conformance.Report, kept bool) {
	w := m.Stdout
	for _, r := range rep.Results {
		fmt.Fprintf(w, "%s %s: %s\n", strings.ToUpper(string(r.Status)), r.Name(), r.Summary)
		if r.Status != conformance.Fail {
			continue
		}
		for _, o := range r.Ops {
			if o.OK {
				continue
			}
			fmt.Fprintf(w, "    %s (%s): %s\n", strings.Join(append([]string{o.Op}, o.Args...), " "), o.Check, o.Message)
			if o.Stdout != "" {
				fmt.Fprintf(w, "      stdout: %q\n", clipString(o.Stdout, stdoutBytesShown))
			}
			for _, l := range lastLines(o.StderrTail, checkEvidenceLines) {
				fmt.Fprintf(w, "      | %s\n", l)
			}
		}
	}
	n := len(rep.Results)
	data := "a temporary module data dir, removed"
	if kept {
		data = "module data dir " + rep.DataDir
	}
	fmt.Fprintf(w, "%s: %d check%s: %d passed, %d failed, %d skipped in %.2fs (containers: %s; %s)\n",
		rep.Module, n, plural(n), rep.Passed, rep.Failed, rep.Skipped, rep.DurationMS/1000, rep.Containers, data)
}

func clipString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
