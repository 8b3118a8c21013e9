package podman_test

import (
	"context"
	"testing"
	"time"

	"github.com/oarbank/svcrun/internal/podmantest"
)

// BenchmarkRawCycle is a container's whole life straight through the
// client (create, start, wait, remove of "/testimage exit 0"): the floor
// the broker's own cycle is measured against.
//
//	go test ./internal/podman -run '^$' -bench RawCycle -benchtime 20x
func BenchmarkRawCycle(b *testing.B) {
	rt := podmantest.Start(b)
	image := podmantest.TestImage(b, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	for b.Loop() {
		if err := podmantest.Cycle(ctx, rt.Client, image, rt.Labels); err != nil {
			b.Fatal(err)
		}
	}
}
