package main

import (
	"context"
	"fmt"
	"time"

	"github.com/oarbank/svcrun/internal/cli"
)

// runRenew is `svcrun renew LEASE`: extend a lease's TTL; prints the new
// expiry.
func runRenew(ctx context.Context, m *cli.Env, args []string) error {
	fs := m.FlagSet("renew", "[--json] [--socket PATH | --config FILE] LEASE")
	sock := addSocketFlags(m, fs)
	asJSON := m.JSONFlag(fs, "print the answer as JSON: lease, expires (a failure: ok, error, code, hint)")
	c, lease, err := connectOne(fs, sock, args, "LEASE", " (the id svcrun acquire printed)")
	if err != nil {
		return err
	}
	defer c.Close()
	r, err := c.Renew(ctx, lease)
	if err != nil {
		return leaseError(err)
	}
	switch {
	case *asJSON:
		return cli.PrintJSON(m.Stdout, r)
	case r.Expires.IsZero():
		fmt.Fprintf(m.Stdout, "%s has no TTL: it is held until released\n", r.Lease)
	default:
		fmt.Fprintf(m.Stdout, "%s expires %s\n", r.Lease, r.Expires.Local().Format(time.RFC3339))
	}
	return nil
}
