package main

import (
	"context"
	"fmt"
	"strings"
)

// runReset is `svcrun reset MODULE/SERVICE`: clear a service's failures and
// its unhealthy mark.
func runReset(ctx context.Context, m *Main, args []string) error {
	fs := newFlagSet(m, "reset", "MODULE/SERVICE")
	sock := addSocketFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	name, err := oneArg(fs, "the service as MODULE/SERVICE, e.g. demo/kv")
	if err != nil {
		return err
	}
	if mod, svc, ok := strings.Cut(name, "/"); !ok || mod == "" || svc == "" || strings.Contains(svc, "/") {
		return usageError{fmt.Sprintf("%q: name the service MODULE/SERVICE, e.g. demo/kv (svcrun status lists them)", name)}
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
	fmt.Fprintln(m.Stdout, d.Message)
	return nil
}
