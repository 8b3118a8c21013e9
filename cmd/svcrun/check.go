package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/oarbank/svcrun/api"
	"github.com/oarbank/svcrun/conformance"
	"github.com/oarbank/svcrun/internal/cli"
	"github.com/oarbank/svcrun/internal/words"
	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/nodeconfig"
	"github.com/oarbank/svcrun/sandbox"
)

const checkSynopsis = `--bundle DIR [NAME...] [--json] [--data DIR] [--settings FILE] [--node-id ID] [--job CMD]
    [--config FILE] [--grant-read PATH]... [--grant-write PATH]... [--run-as USER]

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

--job CMD: each service's list-owned-labels runs CMD (with sh -c) while
the service runs, as svcrun run would run it (OARBANK_SERVICES_FILE,
OARBANK_NODE_ID, OARBANK_ATTEMPT_ID, OARBANK_LEASE_ID); list_owned must
then report the objects of its attempt, and a destroy of one must remove
it.

--config FILE, --grant-read, --grant-write, --run-as: the grants a node
would approve. --config takes the module's [[modules]] entry (grants,
tools, settings unless --settings) and run_as from a node configuration;
the flags add grants and set run_as. A grant must lie within what the
manifest asks, as in a node configuration.

Exit status: 0 when every check passed, 1 when one did not (or the bundle
is invalid), 2 for a wrong command line.

Flags:`

// runCheck runs the conformance checks of a bundle's services and probes.
func runCheck(ctx context.Context, m *cli.Env, args []string) error {
	fs := m.FlagSet("check", checkSynopsis)
	bundle := fs.String("bundle", "", "the module bundle `DIR`")
	data := fs.String("data", "", "the module data `DIR` (OARBANK_MODULE_DATA), kept afterwards; "+
		"default a new temporary directory, removed afterwards")
	settingsFile := fs.String("settings", "",
		"a JSON `FILE` with the module's settings, written to OARBANK_SETTINGS_FILE (default: {})")
	nodeID := fs.String("node-id", "", "OARBANK_NODE_ID, the node `ID` (default: the host name)")
	asJSON := fs.Bool("json", false, "print one JSON document with every check and its evidence")
	job := fs.String("job", "",
		"a job's shell command `CMD`, run by each service's list-owned-labels as svcrun run runs its command")
	config := fs.String("config", "",
		"a node configuration `FILE`: the module's grants, tools and settings and the node's run_as, as that node runs it")
	var grants nodeconfig.Grants
	fs.Func("grant-read", "grant a `PATH` the manifest's [sandbox] read or write asks (repeatable)", func(p string) error {
		grants.Read = append(grants.Read, p)
		return nil
	})
	fs.Func("grant-write", "grant a `PATH` the manifest's [sandbox] write asks (repeatable)", func(p string) error {
		grants.Write = append(grants.Write, p)
		return nil
	})
	runAs := fs.String("run-as", "", "run the ops as `USER`, as run_as does (needs root)")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if *bundle == "" {
		return cli.UsageError{Msg: "give --bundle DIR"}
	}
	mod, err := manifest.Load(*bundle)
	if err != nil {
		return invalid(errorLines(err))
	}
	for _, name := range fs.Args() {
		if _, err := findTarget(mod, name); err != nil {
			return err
		}
	}
	if *job != "" && !checksService(mod, fs.Args()) {
		return cli.Usagef("--job: module %s has no service to check (a job runs against a service)", mod.Name)
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
	if err := grantNode(node, *config, *settingsFile != "", grants, *runAs); err != nil {
		return err
	}
	if node.id.Account != nil && *data == "" {
		// The account must pass the state dir to reach its module data
		// dir, which stays 0700 and its own.
		if err := os.Chmod(state, 0o711); err != nil {
			return err
		}
	}
	plan, err := sandbox.PlanFor(node.cfg, node.mod)
	if err == nil {
		err = plan.Err()
	}
	if err != nil {
		return fmt.Errorf("module %s: %w", mod.Name, err)
	}
	cfg := conformance.Config{
		Node: node.cfg, Module: node.mod, Names: fs.Args(),
		Identity: node.id,
	}
	if *job != "" {
		cfg.Job = func(ctx context.Context, g api.Grant) conformance.JobRun { return runCheckJob(ctx, *job, g) }
	}
	rep, err := conformance.Check(ctx, cfg)
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

// grantNode gives node what a node configuration would approve: the
// [[modules]] entry of node's module in the config file (its grants, tools,
// and settings unless ownSettings) and that node's run_as, then the grants
// and run_as of the flags. The grants are checked against the manifest and
// run_as resolved by the code the daemon loads its configuration with.
func grantNode(node *opNode, file string, ownSettings bool, grants nodeconfig.Grants, runAs string) error {
	mc := &node.mod.Config
	if file != "" {
		cfg, err := nodeconfig.Load(file)
		if err != nil {
			return err
		}
		mods, err := nodeconfig.LoadModules(cfg)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(mods, func(m nodeconfig.LoadedModule) bool { return m.Manifest.Name == node.mod.Manifest.Name })
		if i < 0 {
			return fmt.Errorf("--config %s: no [[modules]] entry whose bundle is module %s", file, node.mod.Manifest.Name)
		}
		mc.Grants, mc.Tools = mods[i].Config.Grants, mods[i].Config.Tools
		if !ownSettings {
			mc.Settings = mods[i].Config.Settings
		}
		node.cfg.RunAs = cfg.RunAs
	}
	mc.Grants.Read = append(mc.Grants.Read, grants.Read...)
	mc.Grants.Write = append(mc.Grants.Write, grants.Write...)
	if runAs != "" {
		node.cfg.RunAs = runAs
	}
	node.cfg.Modules = []nodeconfig.Module{*mc}
	if _, err := nodeconfig.LoadModules(node.cfg); err != nil {
		return err
	}
	id, err := sandbox.IdentityOf(node.cfg)
	if err != nil {
		return err
	}
	node.id = id
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
		if j := r.Job; j != nil && (j.Error != "" || j.ExitCode != 0) {
			what := fmt.Sprintf("exit %d", j.ExitCode)
			if j.Error != "" {
				what = j.Error
			}
			fmt.Fprintf(w, "    job %s: %s\n", j.Command, what)
			for _, l := range lastLines(j.StderrTail, checkEvidenceLines) {
				fmt.Fprintf(w, "      | %s\n", l)
			}
		}
		for _, o := range r.Ops {
			if o.OK {
				continue
			}
			fmt.Fprintf(w, "    %s (%s): %s\n", strings.Join(append([]string{o.Op}, o.Args...), " "), o.Check, o.Message)
			if o.Stdout != "" {
				fmt.Fprintf(w, "      stdout: %q\n", words.Clip(o.Stdout, stdoutBytesShown, "..."))
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
		rep.Module, n, words.Plural(n), rep.Passed, rep.Failed, rep.Skipped, rep.DurationMS/1000, rep.Containers, data)
}

// checksService says whether the check covers a service of mod: the
// services among names, or any when names is empty.
func checksService(mod *manifest.Module, names []string) bool {
	for _, s := range mod.Services {
		if len(names) == 0 || slices.Contains(names, s.Name) {
			return true
		}
	}
	return false
}

// jobTimeout bounds a job of svcrun check --job: a job that hangs must not
// hang the check.
const jobTimeout = 10 * time.Minute

// runCheckJob runs the job command line cmd with sh -c as runRun runs its
// CMD: the caller's environment plus the lease's variables, the services
// file written by writeServicesFile and removed afterwards; stdin is
// /dev/null.
func runCheckJob(ctx context.Context, cmdline string, g api.Grant) (j conformance.JobRun) {
	j = conformance.JobRun{Command: cmdline, Attempt: g.Attempt, ExitCode: -1}
	t0 := time.Now()
	defer func() { j.DurationMS = float64(time.Since(t0).Microseconds()) / 1000 }()
	file, err := writeServicesFile(g)
	if err != nil {
		j.Error = err.Error()
		return j
	}
	defer os.Remove(file)
	ctx, cancel := context.WithTimeout(ctx, jobTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", cmdline)
	cmd.Env = jobEnv(g, file)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// The job runs in a process group of its own, killed whole at its
	// timeout and when it ends: nothing it started outlives the check.
	ownGroup(cmd)
	cmd.Cancel = func() error { return killGroup(cmd) }
	// A background process the job left holding its pipes is not waited
	// for.
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	if cmd.Process != nil {
		_ = killGroup(cmd)
	}
	j.Stdout, j.StderrTail = words.Clip(stdout.String(), stdoutBytesShown, "..."),
		words.ClipStart(stderr.String(), 4<<10, "...")
	if cmd.ProcessState != nil {
		j.ExitCode = exitCode(cmd.ProcessState)
	}
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		j.Error = fmt.Sprintf("still running after %s: killed", jobTimeout)
	case err != nil && cmd.ProcessState == nil:
		j.Error = fmt.Sprintf("cannot run sh -c %q: %v", cmdline, err)
	}
	return j
}
