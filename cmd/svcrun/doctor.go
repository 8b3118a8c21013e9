package main

import (
	"context"

	"github.com/oarbank/svcrun/api"
)

// runDoctor is `svcrun doctor`: run every probe again now.
func runDoctor(ctx context.Context, m *Main, args []string) error {
	return runDone(ctx, m, args, "doctor", (*api.Client).Doctor)
}
