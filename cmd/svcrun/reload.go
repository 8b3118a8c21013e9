package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/oarbank/svcrun/internal/cli"
)

// runReload is `svcrun reload`: svcrun reads its configuration and modules
// again (as on SIGHUP), and this waits for the verdict. A configuration
// with errors, or one changing a setting that needs a restart, changes
// nothing and fails the command with every error: the unit's ExecReload
// runs it, so that systemctl reload fails too.
func runReload(ctx context.Context, m *cli.Env, args []string) error {
	fs := m.FlagSet("reload", "[--json] [--socket PATH | --config FILE]")
	sock := addSocketFlags(m, fs)
	asJSON := m.JSONFlag(fs, "print the answer as JSON: ok, restart_needed (a failure: ok, error, code)")
	c, err := connect(fs, sock, args)
	if err != nil {
		return err
	}
	defer c.Close()
	r, err := c.Reload(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		if r.RestartNeeded == nil {
			r.RestartNeeded = []string{}
		}
		return cli.PrintJSON(m.Stdout, reloaded{OK: true, RestartNeeded: r.RestartNeeded})
	}
	fmt.Fprintln(m.Stdout, "configuration reloaded")
	if len(r.RestartNeeded) > 0 {
		fmt.Fprintf(m.Stdout, "changed but applied only at the next start of svcrun: %s\n",
			strings.Join(r.RestartNeeded, ", "))
	}
	return nil
}

// reloaded is what reload --json prints.
type reloaded struct {
	OK            bool     `json:"ok"`
	RestartNeeded []string `json:"restart_needed"`
}
