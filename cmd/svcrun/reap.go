package main

import (
	"context"
	"fmt"
)

// runReap is `svcrun reap`: start a reap round now.
func runReap(ctx context.Context, m *Main, args []string) error {
	fs := newFlagSet(m, "reap", "")
	sock := addSocketFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	c, err := sock.dial()
	if err != nil {
		return err
	}
	defer c.Close()
	d, err := c.Reap(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(m.Stdout, d.Message)
	return nil
}
