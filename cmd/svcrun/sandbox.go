package main

import (
	"context"
	"fmt"

	"github.com/oarbank/svcrun/internal/cli"
	"github.com/oarbank/svcrun/internal/words"
	"github.com/oarbank/svcrun/nodeconfig"
	"github.com/oarbank/svcrun/sandbox"
)

// runSandbox is `svcrun sandbox [--config FILE]`: what this host supports
// of the sandbox (docs/sandbox.md), and with a node configuration how each
// of its modules would be sandboxed here. It exits 1 when a module would
// be refused (sandbox = "require" with a layer missing, or a grant that
// makes the sandbox unsound).
func runSandbox(_ context.Context, m *cli.Env, args []string) error {
	fs := m.FlagSet("sandbox", "[--json] [--config FILE]")
	config := fs.String("config", "",
		"also show how each module of the node configuration `FILE` is sandboxed on this host")
	asJSON := m.JSONFlag(fs, "print one JSON document: the host's support and each module's plan, or the failure")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if err := cli.NoArgs(fs); err != nil {
		return err
	}
	if *asJSON {
		return sandboxJSON(m, *config)
	}
	fmt.Fprint(m.Stdout, sandbox.Probe())
	if *config == "" {
		return nil
	}
	c, err := nodeconfig.Load(*config)
	if err != nil {
		return invalid(errorLines(err))
	}
	mods, err := nodeconfig.LoadModules(c)
	if err != nil {
		return invalid(errorLines(err))
	}
	fmt.Fprintf(m.Stdout, "\nnode %s (%s): sandbox = %q\n", c.NodeID, c.File, c.Sandbox)
	refused := 0
	for _, mod := range mods {
		p, err := sandbox.PlanFor(c, mod)
		if err != nil {
			fmt.Fprintf(m.Stdout, "module %s: REFUSED: %v\n", mod.Manifest.Name, err)
			refused++
			continue
		}
		fmt.Fprint(m.Stdout, p)
		if p.Err() != nil {
			refused++
		}
	}
	if refused > 0 {
		return fmt.Errorf("%d module%s would be refused on this host", refused, words.Plural(refused))
	}
	return nil
}

// sandboxJSON prints svcrun sandbox --json: the host's support and, with
// a node configuration, each module's plan (the sandbox package's own
// types: their field names are Go's).
func sandboxJSON(m *cli.Env, config string) error {
	type modulePlan struct {
		Module  string        `json:"module"`
		Plan    *sandbox.Plan `json:"plan,omitempty"`
		Refused string        `json:"refused,omitempty"` // why the module would not run here
	}
	out := struct {
		OK      bool            `json:"ok"`
		Host    sandbox.Support `json:"host"`
		Modules []modulePlan    `json:"modules"`
	}{OK: true, Host: sandbox.Probe(), Modules: []modulePlan{}}
	refused := 0
	if config != "" {
		c, err := nodeconfig.Load(config)
		if err != nil {
			return err
		}
		mods, err := nodeconfig.LoadModules(c)
		if err != nil {
			return err
		}
		for _, mod := range mods {
			mp := modulePlan{Module: mod.Manifest.Name}
			p, err := sandbox.PlanFor(c, mod)
			if err == nil {
				mp.Plan, err = p, p.Err()
			}
			if err != nil {
				mp.Refused = err.Error()
				refused++
			}
			out.Modules = append(out.Modules, mp)
		}
	}
	out.OK = refused == 0
	if err := cli.PrintJSON(m.Stdout, out); err != nil {
		return err
	}
	if refused > 0 {
		return cli.ExitError{Code: 1}
	}
	return nil
}
