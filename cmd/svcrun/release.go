package main

import "context"

// runRelease is `svcrun release LEASE`: end a lease.
func runRelease(ctx context.Context, m *Main, args []string) error {
	fs := newFlagSet(m, "release", "LEASE")
	sock := addSocketFlags(fs)
	c, lease, err := connectOne(fs, sock, args, "LEASE (the id svcrun acquire printed)")
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Release(ctx, lease); err != nil {
		return unknownLease(m, "release", err)
	}
	return nil
}
