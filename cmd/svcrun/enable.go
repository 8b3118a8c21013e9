package main

import (
	"context"
	"fmt"

	"github.com/oarbank/svcrun/internal/cli"
)

// runEnable is `svcrun enable MODULE`: start its always services, run its
// probes, offer its pools and capabilities.
func runEnable(ctx context.Context, m *cli.Env, args []string) error {
	return setModule(ctx, m, "enable", true, args)
}

// runDisable is `svcrun disable MODULE`: stop its services gracefully and
// withdraw what it offers.
func runDisable(ctx context.Context, m *cli.Env, args []string) error {
	return setModule(ctx, m, "disable", false, args)
}

// setModule changes a module until the next reload or restart; the node
// configuration file is not changed (edit it and svcrun reload to keep the
// change).
func setModule(ctx context.Context, m *cli.Env, cmd string, enable bool, args []string) error {
	fs := m.FlagSet(cmd, "[--json] [--socket PATH | --config FILE] MODULE")
	sock := addSocketFlags(m, fs)
	asJSON := m.JSONFlag(fs, "print the answer as JSON: ok, message, module, enabled (a failure: ok, error, code)")
	c, name, err := connectOne(fs, sock, args, "MODULE", " (svcrun status lists the modules of the services)")
	if err != nil {
		return err
	}
	defer c.Close()
	d, err := c.SetModuleEnabled(ctx, name, enable)
	if err != nil {
		return err
	}
	if *asJSON {
		return cli.PrintJSON(m.Stdout, moduleDone{OK: d.OK, Message: d.Message, Module: name, Enabled: enable})
	}
	fmt.Fprintln(m.Stdout, d.Message)
	return nil
}

// moduleDone is what enable --json and disable --json print.
type moduleDone struct {
	OK      bool   `json:"ok"`
	Message string `json:"message"`
	Module  string `json:"module"`
	Enabled bool   `json:"enabled"`
}
