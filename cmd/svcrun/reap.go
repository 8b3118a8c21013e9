package main

import (
	"context"

	"github.com/oarbank/svcrun/api"
)

// runReap is `svcrun reap`: start a reap round now.
func runReap(ctx context.Context, m *Main, args []string) error {
	return runDone(ctx, m, args, "reap", (*api.Client).Reap)
}
