package main

import (
	"context"

	"github.com/oarbank/svcrun/internal/cli"
)

// runRelease is `svcrun release LEASE`: end a lease.
func runRelease(ctx context.Context, m *cli.Env, args []string) error {
	fs := m.FlagSet("release", "[--json] [--socket PATH | --config FILE] LEASE")
	sock := addSocketFlags(m, fs)
	asJSON := m.JSONFlag(fs, "print the answer as JSON: ok, lease (a failure: ok, error, code, hint)")
	c, lease, err := connectOne(fs, sock, args, "LEASE", " (the id svcrun acquire printed)")
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Release(ctx, lease); err != nil {
		return leaseError(err)
	}
	if *asJSON {
		return cli.PrintJSON(m.Stdout, released{OK: true, Lease: lease})
	}
	return nil
}

// released is what release --json prints.
type released struct {
	OK    bool   `json:"ok"`
	Lease string `json:"lease"`
}
