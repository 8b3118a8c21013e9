package main

import "context"

// runRelease is `svcrun release LEASE`: end a lease.
func runRelease(ctx context.Context, m *Main, args []string) error {
	fs := newFlagSet(m, "release", "LEASE")
	sock := addSocketFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	lease, err := oneArg(fs, "LEASE (the id svcrun acquire printed)")
	if err != nil {
		return err
	}
	c, err := sock.dial()
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Release(ctx, lease); err != nil {
		return unknownLease(m, "release", err)
	}
	return nil
}
