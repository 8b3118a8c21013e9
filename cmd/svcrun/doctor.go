package main

import (
	"context"

	"github.com/oarbank/svcrun/api"
	"github.com/oarbank/svcrun/internal/cli"
)

// runDoctor is `svcrun doctor`: run every probe again now.
func runDoctor(ctx context.Context, m *cli.Env, args []string) error {
	return runDone(ctx, m, args, "doctor", (*api.Client).Doctor)
}
