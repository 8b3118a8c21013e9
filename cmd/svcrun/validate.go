package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/oarbank/svcrun/internal/cli"
	"github.com/oarbank/svcrun/internal/tomldoc"
	"github.com/oarbank/svcrun/internal/words"
	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/nodeconfig"
	"github.com/oarbank/svcrun/sandbox"
)

// runValidate checks bundles or a node configuration, prints one line per
// module, service and probe when valid, and every error when not.
func runValidate(_ context.Context, m *cli.Env, args []string) error {
	fs := m.FlagSet("validate", "[--json] --bundle DIR... | --config FILE")
	asJSON := m.JSONFlag(fs, "print one JSON document: ok, and the node and modules as loaded, or the errors")
	var bundles cli.StringList
	fs.Var(&bundles, "bundle", "a module bundle `DIR` to check (repeatable: the set is checked for clashes too)")
	config := fs.String("config", "", "a node configuration `FILE` to check, with every module it lists")
	if err := cli.ParseLeading(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return cli.Usagef("unexpected argument %q", fs.Arg(0))
	case len(bundles) == 0 && *config == "":
		return cli.UsageError{Msg: "give --bundle DIR or --config FILE"}
	case len(bundles) > 0 && *config != "":
		return cli.UsageError{Msg: "give either --bundle or --config, not both"}
	}
	v := validate(bundles, *config)
	if len(v.errs) > 0 {
		return invalid(v.errs)
	}
	if *asJSON {
		return cli.PrintJSON(m.Stdout, v.json())
	}
	v.print(m)
	return nil
}

// validation is what validate found, built once and printed as text or
// JSON: the node and modules as loaded, or every error.
type validation struct {
	node *nodeconfig.Config // nil for bundles
	mods []nodeconfig.LoadedModule
	errs []string
}

// validate loads a node configuration with its modules, or bundles and
// checks them as a set.
func validate(dirs []string, config string) validation {
	var v validation
	if config != "" {
		c, err := nodeconfig.Load(config)
		if err == nil {
			v.node = c
			v.mods, err = nodeconfig.LoadModules(c)
		}
		if err != nil {
			v.errs = errorLines(err)
			return v
		}
		v.errs = sandboxRefusals(c, v.mods)
		return v
	}
	var mods []*manifest.Module
	for _, d := range dirs {
		mod, err := manifest.Load(d)
		if err != nil {
			v.errs = append(v.errs, errorLines(err)...)
			continue
		}
		mods = append(mods, mod)
		v.mods = append(v.mods, nodeconfig.LoadedModule{Manifest: mod, Config: nodeconfig.Module{Enabled: true}})
	}
	if len(v.errs) == 0 {
		if err := manifest.CheckSet(mods); err != nil {
			v.errs = errorLines(err)
		}
	}
	return v
}

func (v validation) platform() string {
	if v.node == nil {
		return ""
	}
	return v.node.Platform
}

// print is the text summary: a line for the node, then one per module,
// service and probe; the node's warnings go to stderr, a module's under it.
func (v validation) print(m *cli.Env) {
	if c := v.node; c != nil {
		limits := "none"
		if c.Limits.MemGB > 0 || c.Limits.Pids > 0 {
			limits = fmt.Sprintf("mem_gb %v, pids %d", c.Limits.MemGB, c.Limits.Pids)
		}
		fmt.Fprintf(m.Stdout,
			"node %s (%s): platform %s, data dir %s, socket %s, memory budget %v GB, sandbox %s, %d ops at once, limits %s\n",
			c.NodeID, c.File, c.Platform, c.DataDir, c.Socket, c.MemoryBudgetGB, c.Sandbox, c.MaxConcurrentOps, limits)
		for _, w := range c.Warnings {
			m.Warnf("%s", w)
		}
	}
	for _, mod := range v.mods {
		printModule(m.Stdout, mod.Manifest, mod.Config.Enabled, v.platform())
	}
}

// json is the answer of validate --json: what the text summary says, as
// data.
func (v validation) json() validJSON {
	out := validJSON{OK: true, Modules: []moduleJSON{}, Warnings: []string{}}
	if c := v.node; c != nil {
		out.Node = &nodeJSON{NodeID: c.NodeID, File: c.File, Platform: c.Platform, DataDir: c.DataDir, Socket: c.Socket,
			MemoryBudgetGB: c.MemoryBudgetGB, Sandbox: string(c.Sandbox), MaxConcurrentOps: c.MaxConcurrentOps, Limits: c.Limits}
		out.Warnings = append(out.Warnings, c.Warnings...)
	}
	for _, mod := range v.mods {
		out.Modules = append(out.Modules, moduleOf(mod.Manifest, mod.Config.Enabled, v.platform()))
	}
	for _, mod := range out.Modules {
		out.Warnings = append(out.Warnings, mod.Warnings...)
	}
	return out
}

// The answer of validate --json when everything is valid.
type (
	validJSON struct {
		OK       bool         `json:"ok"` // true
		Node     *nodeJSON    `json:"node,omitempty"`
		Modules  []moduleJSON `json:"modules"`
		Warnings []string     `json:"warnings"`
	}
	nodeJSON struct {
		NodeID           string            `json:"node_id"`
		File             string            `json:"file"`
		Platform         string            `json:"platform"`
		DataDir          string            `json:"data_dir"`
		Socket           string            `json:"socket"`
		MemoryBudgetGB   float64           `json:"memory_budget_gb"`
		Sandbox          string            `json:"sandbox"`
		MaxConcurrentOps int               `json:"max_concurrent_ops"`
		Limits           nodeconfig.Limits `json:"limits"`
	}
	moduleJSON struct {
		Name     string        `json:"name"`
		Version  string        `json:"version"`
		Dir      string        `json:"dir"`
		Enabled  bool          `json:"enabled"`
		Network  string        `json:"network"`
		Services []serviceJSON `json:"services"`
		Probes   []probeJSON   `json:"probes"`
		Warnings []string      `json:"warnings"`
	}
	serviceJSON struct {
		Name          string   `json:"name"` // module/service
		Lifecycle     string   `json:"lifecycle"`
		Pools         []string `json:"pools"`
		Capabilities  []string `json:"capabilities"`
		Platforms     []string `json:"platforms,omitempty"` // all when absent
		StartTimeoutS float64  `json:"start_timeout_s"`
		IdleTimeoutS  float64  `json:"idle_timeout_s"`
		Loaded        bool     `json:"loaded"` // false: not on this node's platform
	}
	probeJSON struct {
		Name       string   `json:"name"`
		Capability string   `json:"capability"`
		PeriodS    float64  `json:"period_s"`
		Platforms  []string `json:"platforms,omitempty"`
		Loaded     bool     `json:"loaded"`
	}
)

func moduleOf(mod *manifest.Module, enabled bool, platform string) moduleJSON {
	out := moduleJSON{Name: mod.Name, Version: mod.Version, Dir: mod.Dir, Enabled: enabled,
		Network:  string(mod.Sandbox.Network),
		Services: []serviceJSON{}, Probes: []probeJSON{}, Warnings: append([]string{}, mod.Warnings...)}
	for _, s := range mod.Services {
		out.Services = append(out.Services,
			serviceJSON{Name: s.FullName(), Lifecycle: string(s.Lifecycle), Pools: nonNilStrings(s.Pools),
				Capabilities: nonNilStrings(s.Capabilities), Platforms: s.Platforms, StartTimeoutS: s.StartTimeout.Seconds(),
				IdleTimeoutS: s.IdleTimeout.Seconds(), Loaded: platform == "" || s.RunsOn(platform)})
	}
	for _, p := range mod.Probes {
		out.Probes = append(out.Probes,
			probeJSON{Name: mod.Name + "/" + p.Name, Capability: p.Name, PeriodS: p.Period.Seconds(),
				Platforms: p.Platforms, Loaded: platform == "" || p.RunsOn(platform)})
	}
	return out
}

func nonNilStrings(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

// errorLines is a loading error as its mistakes, one string each: a
// tomldoc.ErrorList gives one per mistake, any other error is one, even
// if its text spans lines.
func errorLines(err error) []string {
	var l tomldoc.ErrorList
	if errors.As(err, &l) {
		lines := make([]string, len(l))
		for i, e := range l {
			lines[i] = e.Error()
		}
		return lines
	}
	return []string{err.Error()}
}

// invalid is the failure of a file with errors: a line counting them,
// then each (--json: code invalid, errors).
func invalid(errs []string) error {
	return &cli.Failure{Msg: fmt.Sprintf("invalid: %d error%s", len(errs), words.Plural(len(errs))), Code: "invalid",
		Lines: errs}
}

// printModule writes the one-line summaries. platform, when set, marks the
// services and probes that the node will not load.
func printModule(w io.Writer, mod *manifest.Module, enabled bool, platform string) {
	state := ""
	if !enabled {
		state = ", disabled"
	}
	fmt.Fprintf(w, "module %s %s (%s): %d service%s, %d probe%s, network %s%s\n", mod.Name, mod.Version, mod.Dir,
		len(mod.Services), words.Plural(len(mod.Services)), len(mod.Probes), words.Plural(len(mod.Probes)),
		mod.Sandbox.Network, state)
	for _, warn := range mod.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", warn)
	}
	for _, s := range mod.Services {
		fmt.Fprintf(w, "  service %s: %s, pools %s, capabilities %s, platforms %s, start timeout %v, idle timeout %v%s\n",
			s.FullName(), s.Lifecycle, listOrNone(s.Pools), listOrNone(s.Capabilities), platforms(s.Platforms),
			s.StartTimeout, s.IdleTimeout, skipped(platform, s.RunsOn(platform)))
	}
	for _, p := range mod.Probes {
		fmt.Fprintf(w, "  probe %s/%s: capability %s, every %v, platforms %s%s\n",
			mod.Name, p.Name, p.Name, p.Period.Round(time.Millisecond), platforms(p.Platforms),
			skipped(platform, p.RunsOn(platform)))
	}
}

func skipped(platform string, runs bool) string {
	if platform == "" || runs {
		return ""
	}
	return " (not loaded on " + platform + ")"
}

func platforms(p []string) string {
	if p == nil {
		return "all"
	}
	return strings.Join(p, ",")
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ",")
}

// sandboxRefusals lists the modules of c that svcrun would refuse to run on
// this host (sandbox = "require" missing a layer, or a sandbox unsound in
// both modes), each with the fix: a file that validates must run its
// modules. It is this host's verdict, as svcrun judges it at start, so it
// is right when validate runs where and as svcrun does (root on the node).
func sandboxRefusals(c *nodeconfig.Config, mods []nodeconfig.LoadedModule) []string {
	var out []string
	for _, m := range mods {
		p, err := sandbox.PlanFor(c, m)
		if err == nil {
			err = p.Err()
		}
		if err == nil {
			continue
		}
		line := fmt.Sprintf("%s: module %s would be refused at run time: %v", c.File, m.Manifest.Name, err)
		if p != nil &&
			slices.ContainsFunc(p.Missing, func(x sandbox.Missing) bool { return x.Layer == sandbox.LayerRunAs }) &&
			c.RunAs == "" {
			line += `; with svcrun as root, set run_as to an unprivileged user that can read the bundle (the package creates ` +
				`svcrun-ops: run_as = "svcrun-ops")`
		}
		out = append(out, line)
	}
	return out
}
