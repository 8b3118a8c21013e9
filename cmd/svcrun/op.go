package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/executor"
	"github.com/oarbank/svcrun/internal/cli"
	"github.com/oarbank/svcrun/internal/words"
	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/nodeconfig"
	"github.com/oarbank/svcrun/protocol"
	"github.com/oarbank/svcrun/sandbox"
	"github.com/oarbank/svcrun/svcenv"
)

const opSynopsis = `(--bundle DIR [--data DIR] [--node-id ID] [--settings FILE] | --config FILE) ` +
	`[--timeout DUR] [--json] SERVICE OP [ARGS]

Runs one op of a service or probe of the bundle exactly as the agent runs it
(the exec rules, the environment of the module data dir, the timeout, the
validation of the output), without an agent. SERVICE is a service or probe
name of the bundle's manifest; OP is fingerprint, start, stop, status, ready,
list_owned or destroy ID [--force]. A probe implements only fingerprint.

Prints the validated result as normalised JSON and exits 0; prints the op's
error (its message, every protocol violation, the end of its stderr) and exits
1 when the op fails. The module data dir is kept between runs, so that a start
and a later status see the same state; settings.json, tools.json and
limits.json are rewritten at every run. Every op runs in the module's
sandbox (sandbox = "best_effort"; --json lists the layers this host or
this user cannot apply). With --bundle the op runs as you, with no host
path granted beyond what every module gets (its data dir, its bundle, the
system's directories); with --config it runs as the node runs it: the
node's module data dir, settings, tools, grants and limits, run_as and
sandbox mode (SERVICE may be MODULE/SERVICE). Only the cgroup container
is left out, so that a daemon it starts stays outside svcrun's
containers.

Flags:`

// runOp runs one op of a bundle's service or probe without a daemon.
func runOp(ctx context.Context, m *cli.Env, args []string) error {
	fs := m.FlagSet("op", opSynopsis)
	bundle := fs.String("bundle", "", "the module bundle `DIR`")
	config := fs.String("config", "", "a node configuration `FILE`: run the op as that node does, sandbox included")
	data := fs.String("data", "", "the module data `DIR` (OARBANK_MODULE_DATA); "+
		"default <user cache dir>/svcrun-op/<module>, or $TMPDIR/svcrun-op/<module> where there is no cache dir")
	nodeID := fs.String("node-id", "", "OARBANK_NODE_ID, the node `ID` (default: the host name)")
	timeout := cli.Duration(fs, "timeout", 0,
		"the op's timeout, a `DUR` such as 30s (default: the protocol's for the op; start: the manifest's start_timeout_s)")
	settingsFile := fs.String("settings", "",
		"a JSON `FILE` with the module's settings, written to OARBANK_SETTINGS_FILE (default: {})")
	asJSON := fs.Bool("json", false, "print one JSON report on stdout, for a success or a failure")
	bypass := fs.Bool("bypass-svcrun", false,
		"with --config, run start, stop or destroy even though the node's svcrun runs (it does not learn of the op)")
	if err := cli.ParseLeading(fs, args); err != nil {
		return err
	}
	switch {
	case (*bundle == "") == (*config == ""):
		return cli.UsageError{Msg: "give --bundle DIR or --config FILE"}
	case fs.NArg() < 2:
		return cli.UsageError{Msg: "give the SERVICE (or probe) and the OP"}
	case *timeout < 0:
		return cli.Usagef("--timeout %v is negative", *timeout)
	}
	var node *opNode
	var mod *manifest.Module
	var err error
	if *config != "" {
		node, err = loadOpNode(*config, fs.Arg(0))
		if err != nil {
			return err
		}
		mod = node.mod.Manifest
	} else if mod, err = manifest.Load(*bundle); err != nil {
		return invalid(errorLines(err))
	}
	t, err := findTarget(mod, strings.TrimPrefix(fs.Arg(0), mod.Name+"/"))
	if err != nil {
		return err
	}
	op, err := protocol.ParseOp(fs.Arg(1))
	if err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	opArgs := fs.Args()[2:]
	if err := checkOpArgs(t, op, opArgs); err != nil {
		return err
	}
	if node != nil {
		if err := besideSvcrun(m, node.cfg.Socket, t, op, *bypass); err != nil {
			return err
		}
	}
	host := svcenv.HostPlatform()
	if !t.runsOn(string(host)) {
		return fmt.Errorf("%s %s runs only on %s, not on %s", t.kind(), t.fullName(), strings.Join(t.platforms, ", "), host)
	}
	if node == nil {
		if node, err = bundleNode(mod, *settingsFile, *data, *nodeID); err != nil {
			return err
		}
	}
	plan, err := sandbox.PlanFor(node.cfg, node.mod)
	if err == nil {
		err = plan.Err()
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", t.kind(), t.fullName(), err)
	}

	// Unlike the agent, svcrun op is no child subreaper: it exits after
	// the op, and in tests it runs inside a test binary whose other
	// children the reaper must not take.
	target := engine.Target{Module: mod.Name, Name: t.name, Probe: t.probe}
	res, out, err := executor.RunStandalone(ctx, node.execConfig(),
		engine.RunOp{Target: target, Op: op, Args: opArgs, Timeout: *timeout})
	if err != nil {
		return err
	}
	r := opReport{
		Module: mod.Name, Op: string(op), Args: opArgs, DataDir: node.cfg.ModuleDataDir(mod.Name),
		OK:         out.Failure == engine.FailNone,
		DurationMS: float64(res.Duration.Microseconds()) / 1000,
		Failure:    string(out.Failure), Message: out.Message,
		SandboxMissing: []string{},
	}
	for _, l := range plan.Missing {
		r.SandboxMissing = append(r.SandboxMissing, string(l.Layer))
	}
	if t.probe {
		r.Probe = t.name
	} else {
		r.Service = t.name
	}
	if res.SpawnErr == nil && res.Pid != 0 {
		r.ExitCode = &res.ExitCode
	}
	if res.PipesHeld {
		r.Warnings = append(r.Warnings, "stdout or stderr was still open after the op exited: "+
			"a process it left behind holds them; redirect a daemon's output (</dev/null >/dev/null 2>&1)")
	}
	if r.OK {
		r.Result = normalise(out.Result)
		r.Warnings = append(r.Warnings, out.Result.Warnings...)
	} else if out.Failure == engine.FailProtocol {
		// The agent's message joins the reasons in one line; list them.
		r.Reasons = out.Reasons
		r.stdout = res.Stdout
	}
	r.StderrTail = string(res.StderrTail)
	if *asJSON {
		if err := cli.PrintJSON(m.Stdout, r); err != nil {
			return err
		}
		if !r.OK {
			return cli.ExitError{Code: 1}
		}
		return nil
	}
	return r.print(m, t)
}

// besideSvcrun warns, when the node's svcrun answers on socket, that the
// op runs behind its back, and refuses an op that changes the service
// (start, stop, destroy) without bypass: svcrun would take a daemon it did
// not start, or one that vanished, for a crash.
func besideSvcrun(m *cli.Env, socket string, t opTarget, op protocol.Op, bypass bool) error {
	pid, running := svcrunAt(socket)
	if !running {
		return nil
	}
	who := "svcrun"
	if pid > 0 {
		who = fmt.Sprintf("svcrun (pid %d)", pid)
	}
	bypassed := fmt.Sprintf("%s runs this node (socket %s): this op runs beside it, not through it, "+
		"so it bypasses svcrun's ordering of %s's ops, its leases and its state, and svcrun does not learn of it",
		who, socket, t.fullName())
	mutates := op == protocol.OpStart || op == protocol.OpStop || op == protocol.OpDestroy
	if !mutates || t.probe {
		m.Warnf("%s", bypassed)
		return nil
	}
	if bypass {
		m.Warnf("%s; --bypass-svcrun: running %s all the same", bypassed, op)
		return nil
	}
	return &cli.Failure{Code: "svcrun-runs", Msg: fmt.Sprintf("%s; a %s behind its back changes what svcrun believes "+
		"runs (it takes a daemon that stopped for a crash, and one it did not start for another's): use svcrun enable, "+
		"disable or reset, or svcrun reap, or stop svcrun first; --bypass-svcrun runs it anyway", bypassed, op)}
}

// opTarget is the service or probe an op runs.
type opTarget struct {
	module    string
	name      string
	probe     bool
	platforms []string
	runsOn    func(platform string) bool // the manifest's rule
}

func (t opTarget) kind() string {
	if t.probe {
		return "probe"
	}
	return "service"
}

func (t opTarget) fullName() string { return t.module + "/" + t.name }

// findTarget looks name up among the services, then the probes, of mod.
func findTarget(mod *manifest.Module, name string) (opTarget, error) {
	var services, probes []string
	for _, s := range mod.Services {
		if s.Name == name {
			return opTarget{module: mod.Name, name: s.Name, platforms: s.Platforms, runsOn: s.RunsOn}, nil
		}
		services = append(services, s.Name)
	}
	for _, p := range mod.Probes {
		if p.Name == name {
			return opTarget{module: mod.Name, name: p.Name, probe: true, platforms: p.Platforms, runsOn: p.RunsOn}, nil
		}
		probes = append(probes, p.Name)
	}
	return opTarget{},
		cli.Usagef("no service or probe %q in module %q; services: %s; probes: %s",
			name, mod.Name, listOrNone(services), listOrNone(probes))
}

// checkOpArgs applies the protocol's rules to the op's arguments: only
// destroy takes any, an object id that may be passed to destroy, then
// --force.
func checkOpArgs(t opTarget, op protocol.Op, args []string) error {
	if t.probe && op != protocol.OpFingerprint {
		return cli.Usagef("%s is a probe: it implements only fingerprint", t.fullName())
	}
	if op != protocol.OpDestroy {
		if len(args) > 0 {
			return cli.Usagef("%s takes no arguments, got %q", op, args)
		}
		return nil
	}
	switch {
	case len(args) == 0:
		return cli.UsageError{Msg: "destroy needs the object ID: destroy ID [--force]"}
	case len(args) > 2 || len(args) == 2 && args[1] != "--force":
		return cli.Usagef("destroy takes ID [--force], got %q", args)
	}
	if err := protocol.ValidObjectID(args[0]); err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	return nil
}

// opDataDir is the module data dir: dir made absolute, or a directory of
// the user's cache (of the temporary directory where there is none) kept
// across runs.
func opDataDir(dir, module string) (string, error) {
	if dir != "" {
		return filepath.Abs(dir)
	}
	base, err := os.UserCacheDir()
	if err != nil || !filepath.IsAbs(base) {
		base = os.TempDir()
	}
	return filepath.Join(base, "svcrun-op", module), nil
}

// opReport is what svcrun op says about one op: printed as text, or as
// JSON with --json.
type opReport struct {
	Module     string   `json:"module"`
	Service    string   `json:"service,omitempty"`
	Probe      string   `json:"probe,omitempty"`
	Op         string   `json:"op"`
	Args       []string `json:"args,omitempty"`
	DataDir    string   `json:"data_dir"`
	OK         bool     `json:"ok"`
	ExitCode   *int     `json:"exit_code,omitempty"` // absent when the op could not be started
	DurationMS float64  `json:"duration_ms"`
	Result     any      `json:"result,omitempty"`
	Warnings   []string `json:"warnings,omitempty"`
	Failure    string   `json:"failure,omitempty"`
	Message    string   `json:"message,omitempty"`
	Reasons    []string `json:"reasons,omitempty"`
	StderrTail string   `json:"stderr_tail,omitempty"`
	// SandboxMissing are the sandbox layers the op ran without.
	SandboxMissing []string `json:"sandbox_missing"`

	stdout []byte // of a protocol error, to show its beginning
}

// failureWords say how an op failed, before its message.
var failureWords = map[engine.FailureKind]string{
	engine.FailOp:       "failed",
	engine.FailTimeout:  "timed out",
	engine.FailProtocol: "broke the protocol",
	engine.FailSpawn:    "could not be run",
	engine.FailPrepare:  "could not be prepared",
}

// Limits of the text report.
const (
	stderrLinesShown = 20
	stdoutBytesShown = 512
)

// print prints a success's result on stdout, and returns a failure with
// its evidence, for Run to print after the warnings.
func (r *opReport) print(m *cli.Env, t opTarget) error {
	for _, w := range r.Warnings {
		m.Warnf("%s", w)
	}
	if r.OK {
		return cli.PrintJSON(m.Stdout, r.Result)
	}
	f := &cli.Failure{
		Msg: fmt.Sprintf("%s %s %s: %s", t.fullName(), r.Op, failureWords[engine.FailureKind(r.Failure)], r.Message)}
	if len(r.Reasons) > 0 {
		f.Lines = append(f.Lines, fmt.Sprintf("protocol violations (%d):", len(r.Reasons)))
		for _, reason := range r.Reasons {
			f.Lines = append(f.Lines, "  "+reason)
		}
	}
	if len(r.stdout) > 0 {
		s := r.stdout
		more := ""
		if len(s) > stdoutBytesShown {
			s, more = s[:stdoutBytesShown], fmt.Sprintf(" (and %d more bytes)", len(r.stdout)-stdoutBytesShown)
		}
		f.Lines = append(f.Lines, fmt.Sprintf("stdout: %q%s", s, more))
	}
	if lines := lastLines(r.StderrTail, stderrLinesShown); len(lines) > 0 {
		f.Lines = append(f.Lines, fmt.Sprintf("stderr (last %d line%s):", len(lines), words.Plural(len(lines))))
		for _, l := range lines {
			f.Lines = append(f.Lines, "  | "+l)
		}
	}
	f.Lines = append(f.Lines, "module data dir: "+r.DataDir)
	return f
}

// lastLines returns the last n lines of s (trailing blank space dropped),
// with invalid UTF-8 and control characters shown as U+FFFD.
func lastLines(s string, n int) []string {
	s = strings.TrimRight(s, "\n\r\t ")
	if s == "" {
		return nil
	}
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		lines[i] = strings.Map(visible, strings.TrimRight(l, "\r"))
	}
	return lines
}

// visible keeps tabs and printable text; strings.Map has already turned
// invalid UTF-8 into U+FFFD.
func visible(r rune) rune {
	if r == '\t' {
		return r
	}
	if r < 0x20 || r == 0x7f {
		return '\uFFFD'
	}
	return r
}

// normalise is the result as the agent understood it, in the wire format
// (protocol's MarshalJSON: the schemas' fields, with the defaults the agent
// reads spelled out: ok, changed, running, ready).
func normalise(r protocol.Result) any {
	switch {
	case r.Fingerprint != nil:
		return *r.Fingerprint
	case r.OpResult != nil:
		return *r.OpResult
	case r.Status != nil:
		return *r.Status
	case r.OwnedList != nil:
		return *r.OwnedList
	}
	return nil
}

// opNode is the node an op runs in: the configuration, the op's module
// and who its ops run as.
type opNode struct {
	cfg *nodeconfig.Config
	mod nodeconfig.LoadedModule
	id  sandbox.Identity
}

// execConfig is the executor configuration of the node's ops: the
// daemon's (sandbox.ExecutorConfig) for its one module.
func (n *opNode) execConfig() executor.Config {
	return sandbox.ExecutorConfig(n.cfg, []nodeconfig.LoadedModule{n.mod}, n.id)
}

// bundleNode is the node svcrun op --bundle makes up for the bundle: one
// enabled module with the data dir (dataDir or opDataDir's default), the
// settings of settingsFile ({} without one), the node id (the host name
// by default), no grant or tool, no run_as, best_effort; svcrun's
// default socket stays out of the sandbox's reach.
func bundleNode(mod *manifest.Module, settingsFile, dataDir, nodeID string) (*opNode, error) {
	settings := map[string]any{}
	if settingsFile != "" {
		raw, err := os.ReadFile(settingsFile)
		if err != nil {
			return nil, fmt.Errorf("--settings: %w", err)
		}
		if err := json.Unmarshal(raw, &settings); err != nil {
			return nil, fmt.Errorf("--settings %s: want a JSON object: %w", settingsFile, err)
		}
	}
	moduleData, err := opDataDir(dataDir, mod.Name)
	if err != nil {
		return nil, err
	}
	if nodeID == "" {
		if nodeID, err = os.Hostname(); err != nil {
			return nil, fmt.Errorf("the host name (give --node-id): %w", err)
		}
	}
	mc := nodeconfig.Module{Bundle: mod.Dir, Enabled: true, Settings: settings}
	cfg := &nodeconfig.Config{
		File: "(svcrun op --bundle " + mod.Dir + ")", NodeID: nodeID, Platform: string(svcenv.HostPlatform()),
		DataDir: moduleData, Socket: filepath.Join(nodeconfig.DefaultDataDir, nodeconfig.DefaultSocketName),
		Sandbox:        nodeconfig.SandboxBestEffort,
		ModuleDataDirs: map[string]string{mod.Name: moduleData},
		Modules:        []nodeconfig.Module{mc},
	}
	return &opNode{cfg: cfg, mod: nodeconfig.LoadedModule{Config: mc, Manifest: mod}}, nil
}

// loadOpNode reads the node configuration and finds the module of service:
// MODULE/NAME, or a NAME that only one module has.
func loadOpNode(file, service string) (*opNode, error) {
	cfg, err := nodeconfig.Load(file)
	if err != nil {
		return nil, err
	}
	mods, err := nodeconfig.LoadModules(cfg)
	if err != nil {
		return nil, err
	}
	id, err := sandbox.IdentityOf(cfg)
	if err != nil {
		return nil, err
	}
	modName, name, qualified := strings.Cut(service, "/")
	var found []*opNode
	var names []string
	for _, m := range mods {
		names = append(names, m.Manifest.Name)
		if qualified && m.Manifest.Name != modName {
			continue
		}
		if !qualified {
			name = service
		}
		if _, err := findTarget(m.Manifest, name); err == nil {
			found = append(found, &opNode{cfg: cfg, mod: m, id: id})
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return nil, cli.Usagef("no service or probe %q in the modules of %s: %s", service, file, strings.Join(names, ", "))
	}
	return nil, cli.Usagef("%q is in several modules of %s: write MODULE/%s", service, file, service)
}
