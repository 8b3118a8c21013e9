package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/oarbank/svcrun/internal/cli"
	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/nodeconfig"
)

// runValidate checks bundles or a node configuration, prints one line per
// module, service and probe when valid, and every error when not.
func runValidate(_ context.Context, m *cli.Env, args []string) error {
	fs := m.FlagSet("validate", "--bundle DIR... | --config FILE")
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
	if *config != "" {
		return validateConfig(m, *config)
	}
	return validateBundles(m, bundles)
}

func validateBundles(m *cli.Env, dirs []string) error {
	var mods []*manifest.Module
	var errs []string
	for _, d := range dirs {
		mod, err := manifest.Load(d)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		mods = append(mods, mod)
	}
	if len(errs) == 0 {
		if err := manifest.CheckSet(mods); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return invalid(m, errs)
	}
	for _, mod := range mods {
		printModule(m.Stdout, mod, true, "")
	}
	return nil
}

func validateConfig(m *cli.Env, file string) error {
	c, err := nodeconfig.Load(file)
	if err != nil {
		return invalid(m, []string{err.Error()})
	}
	mods, err := nodeconfig.LoadModules(c)
	if err != nil {
		return invalid(m, []string{err.Error()})
	}
	limits := "none"
	if c.Limits.MemGB > 0 || c.Limits.Pids > 0 {
		limits = fmt.Sprintf("mem_gb %v, pids %d", c.Limits.MemGB, c.Limits.Pids)
	}
	fmt.Fprintf(m.Stdout, "node %s (%s): platform %s, data dir %s, socket %s, memory budget %v GB, sandbox %s, %d ops at once, limits %s\n",
		c.NodeID, c.File, c.Platform, c.DataDir, c.Socket, c.MemoryBudgetGB, c.Sandbox, c.MaxConcurrentOps, limits)
	for _, w := range c.Warnings {
		m.Warnf("%s", w)
	}
	for _, mod := range mods {
		printModule(m.Stdout, mod.Manifest, mod.Config.Enabled, c.Platform)
	}
	return nil
}

func invalid(m *cli.Env, errs []string) error {
	for _, e := range errs {
		fmt.Fprintln(m.Stderr, e)
	}
	n := 0
	for _, e := range errs {
		n += strings.Count(e, "\n") + 1
	}
	fmt.Fprintf(m.Stderr, "invalid: %d error%s\n", n, plural(n))
	return cli.ExitError{Code: 1}
}

// printModule writes the one-line summaries. platform, when set, marks the
// services and probes that the node will not load.
func printModule(w io.Writer, mod *manifest.Module, enabled bool, platform string) {
	state := ""
	if !enabled {
		state = ", disabled"
	}
	fmt.Fprintf(w, "module %s %s (%s): %d service%s, %d probe%s, network %s%s\n", mod.Name, mod.Version, mod.Dir,
		len(mod.Services), plural(len(mod.Services)), len(mod.Probes), plural(len(mod.Probes)), mod.Sandbox.Network, state)
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
			mod.Name, p.Name, p.Name, p.Period.Round(time.Millisecond), platforms(p.Platforms), skipped(platform, p.RunsOn(platform)))
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

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
