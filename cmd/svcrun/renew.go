package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/oarbank/svcrun/agent"
)

// runRenew is `svcrun renew LEASE`: extend a lease's TTL; prints the new
// expiry.
func runRenew(ctx context.Context, m *Main, args []string) error {
	fs := newFlagSet(m, "renew", "[--json] LEASE")
	sock := addSocketFlags(fs)
	asJSON := fs.Bool("json", false, "print the answer as JSON: lease, expires")
	c, lease, err := connectOne(fs, sock, args, "LEASE (the id svcrun acquire printed)")
	if err != nil {
		return err
	}
	defer c.Close()
	r, err := c.Renew(ctx, lease)
	if err != nil {
		return unknownLease(m, "renew", err)
	}
	switch {
	case *asJSON:
		return printJSON(m.Stdout, r)
	case r.Expires.IsZero():
		fmt.Fprintf(m.Stdout, "%s has no TTL: it is held until released\n", r.Lease)
	default:
		fmt.Fprintf(m.Stdout, "%s expires %s\n", r.Lease, r.Expires.Local().Format(time.RFC3339))
	}
	return nil
}

// unknownLease adds a hint to an unknown lease.
func unknownLease(m *Main, cmd string, err error) error {
	if errors.Is(err, agent.ErrUnknownLease) {
		fmt.Fprintf(m.Stderr, "svcrun %s: %v\nhint: svcrun status lists the leases svcrun holds; a lease with a TTL that was not renewed in time has expired\n", cmd, err)
		return exitError{1}
	}
	return err
}
