package main

import (
	"context"
	"fmt"
)

// runEnable is `svcrun enable MODULE`: start its always services, run its
// probes, offer its pools and capabilities.
func runEnable(ctx context.Context, m *Main, args []string) error {
	return setModule(ctx, m, "enable", true, args)
}

// runDisable is `svcrun disable MODULE`: stop its services gracefully and
// withdraw what it offers.
func runDisable(ctx context.Context, m *Main, args []string) error {
	return setModule(ctx, m, "disable", false, args)
}

// setModule changes a module until the next reload or restart; the node
// configuration file is not changed (edit it and svcrun reload to keep the
// change).
func setModule(ctx context.Context, m *Main, cmd string, enable bool, args []string) error {
	fs := newFlagSet(m, cmd, "MODULE")
	sock := addSocketFlags(fs)
	c, name, err := connectOne(fs, sock, args, "MODULE (svcrun status lists the modules of the services)")
	if err != nil {
		return err
	}
	defer c.Close()
	d, err := c.SetModuleEnabled(ctx, name, enable)
	if err != nil {
		return err
	}
	fmt.Fprintln(m.Stdout, d.Message)
	return nil
}
