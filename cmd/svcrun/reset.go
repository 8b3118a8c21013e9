package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/oarbank/svcrun/internal/cli"
)

// runReset is `svcrun reset MODULE/SERVICE`: clear a service's failures and
// its unhealthy mark.
func runReset(ctx context.Context, m *cli.Env, args []string) error {
	fs := m.FlagSet("reset", "[--json] [--socket PATH | --config FILE] MODULE/SERVICE")
	sock := addSocketFlags(m, fs)
	asJSON := m.JSONFlag(fs, "print the answer as JSON: ok, message, service (a failure: ok, error, code)")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	name, err := cli.OneArg(fs, "MODULE/SERVICE", ", e.g. demo/kv (svcrun status lists the services)")
	if err != nil {
		return err
	}
	if mod, svc, ok := strings.Cut(name, "/"); !ok || mod == "" || svc == "" || strings.Contains(svc, "/") {
		return cli.Usagef("%q: name the service MODULE/SERVICE, e.g. demo/kv (svcrun status lists them)", name)
	}
	c, err := sock.dial()
	if err != nil {
		return err
	}
	defer c.Close()
	d, err := c.Reset(ctx, name)
	if err != nil {
		return err
	}
	if *asJSON {
		return cli.PrintJSON(m.Stdout, serviceDone{OK: d.OK, Message: d.Message, Service: name})
	}
	fmt.Fprintln(m.Stdout, d.Message)
	return nil
}

// serviceDone is what reset --json prints.
type serviceDone struct {
	OK      bool   `json:"ok"`
	Message string `json:"message"`
	Service string `json:"service"`
}
