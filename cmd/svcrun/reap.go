package main

import (
	"context"

	"github.com/oarbank/svcrun/api"
	"github.com/oarbank/svcrun/internal/cli"
)

// runReap is `svcrun reap`: start a reap round now.
func runReap(ctx context.Context, m *cli.Env, args []string) error {
	return runDone(ctx, m, args, "reap", (*api.Client).Reap)
}
