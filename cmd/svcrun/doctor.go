package main

import (
	"context"
	"fmt"
)

// runDoctor is `svcrun doctor`: run every probe again now.
func runDoctor(ctx context.Context, m *Main, args []string) error {
	fs := newFlagSet(m, "doctor", "")
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
	d, err := c.Doctor(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(m.Stdout, d.Message)
	return nil
}
