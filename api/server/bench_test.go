package server

import (
	"slices"
	"testing"
	"time"

	"github.com/oarbank/svcrun/agent"
	"github.com/oarbank/svcrun/api"
)

// BenchmarkAPIAcquireRelease measures one acquire plus one release over the
// socket against a ready service (demo/kv, held ready by a lease taken
// before), and reports the round trip's p50 and p99. Each round trip
// persists the lease and forgets it (two records of the state's
// write-ahead log, each fdatasynced). The garbage collector runs as in
// svcrun serve (agent.TuneGC).
func BenchmarkAPIAcquireRelease(b *testing.B) {
	defer agent.TuneGC()() // as svcrun serve runs
	n := startNode(b, demoModules(b))
	ctx := ctxT(b, 10*time.Minute)
	hold, err := n.c.Acquire(ctx, api.AcquireRequest{Capabilities: []string{"kv"}, Wait: api.Duration(30 * time.Second)})
	if err != nil {
		b.Fatal(err)
	}
	defer n.c.Release(ctx, hold.Lease)
	req := api.AcquireRequest{Job: "bench", Capabilities: []string{"kv"},
		Pools: map[string]int64{"kv-slots": 1}, Wait: api.Duration(10 * time.Second)}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		g, err := n.c.Acquire(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if err := n.c.Release(ctx, g.Lease); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	q := func(p int) float64 {
		i := (len(lat)*p + 99) / 100
		return float64(lat[max(0, min(len(lat)-1, i-1))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(q(50), "p50-µs")
	b.ReportMetric(q(99), "p99-µs")
}
