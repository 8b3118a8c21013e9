package main

import (
	"context"
	"fmt"

	"github.com/oarbank/svcrun/internal/cli"
	"github.com/oarbank/svcrun/nodeconfig"
	"github.com/oarbank/svcrun/sandbox"
)

// runSandbox is `svcrun sandbox [--config FILE]`: what this host supports
// of the sandbox (docs/sandbox.md), and with a node configuration how each
// of its modules would be sandboxed here. It exits 1 when a module would
// be refused (sandbox = "require" with a layer missing, or a grant that
// makes the sandbox unsound).
func runSandbox(_ context.Context, m *cli.Env, args []string) error {
	fs := m.FlagSet("sandbox", "[--config FILE]")
	config := fs.String("config", "", "also show how each module of the node configuration `FILE` is sandboxed on this host")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if err := cli.NoArgs(fs); err != nil {
		return err
	}
	fmt.Fprint(m.Stdout, sandbox.Probe())
	if *config == "" {
		return nil
	}
	c, err := nodeconfig.Load(*config)
	if err != nil {
		return invalid(m, []string{err.Error()})
	}
	mods, err := nodeconfig.LoadModules(c)
	if err != nil {
		return invalid(m, []string{err.Error()})
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
		return fmt.Errorf("%d module%s would be refused on this host", refused, plural(refused))
	}
	return nil
}
