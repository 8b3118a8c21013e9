package main

import (
	"context"
	"testing"
	"time"

	"github.com/oarbank/svcrun/api"
	"github.com/oarbank/svcrun/broker"
	"github.com/oarbank/svcrun/internal/podmantest"
	"github.com/oarbank/svcrun/protocol"
)

// BenchmarkContainerCycle is a container's whole life, create, start,
// wait and remove, straight to podman and through svcrun's API (the
// broker, under one lease), on one podman. Each iteration runs one cycle
// of each, one after the other, so that both see the same load (on a
// shared machine it moves more between two runs than the broker costs);
// it reports each side's seconds a cycle and their ratio:
//
//	REQUIRE_KERNEL_FEATURES=1 go test ./cmd/svcrun -run '^$' -bench ContainerCycle -benchtime 20x
func BenchmarkContainerCycle(b *testing.B) {
	rt := podmantest.Start(b)
	image := podmantest.TestImage(b, rt)
	ctx := context.Background()
	cfg, sock, _ := containerNode(b, rt, image, 1)
	serveInProcess(b, cfg)
	c, err := api.Dial(sock)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	g, err := c.Acquire(ctx, api.AcquireRequest{Pools: map[string]int64{"containers": 1}, Wait: api.Duration(60e9)})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Release(ctx, g.Lease)
	req := api.ContainerRequest{Image: image, Command: []string{podmantest.ImageBinary, "exit", "0"}, MemGB: 0.0625,
		Pids: 64}
	var raw, brokered time.Duration
	for b.Loop() {
		start := time.Now()
		if err := podmantest.Cycle(ctx, rt.Client, image, rt.Labels); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		ct, err := c.CreateContainer(ctx, g.Lease, req)
		if err != nil {
			b.Fatal(err)
		}
		if end, err := c.WaitContainer(ctx, g.Lease, ct.ID); err != nil || end.ExitCode != 0 {
			b.Fatalf("wait: %+v %v", end, err)
		}
		if err := c.RemoveContainer(ctx, g.Lease, ct.ID); err != nil {
			b.Fatal(err)
		}
		raw += mid.Sub(start)
		brokered += time.Since(mid)
	}
	n := float64(b.N)
	b.ReportMetric(raw.Seconds()/n, "podman-s/cycle")
	b.ReportMetric(brokered.Seconds()/n, "broker-s/cycle")
	b.ReportMetric(brokered.Seconds()/raw.Seconds(), "broker/podman")
}

// BenchmarkContainerList lists a lease's containers (one running)
// through svcrun's API (the issue asks 10 ms at most), and the same
// straight to podman in turn: one podman list is most of it.
//
//	REQUIRE_KERNEL_FEATURES=1 go test ./cmd/svcrun -run '^$' -bench ContainerList
func BenchmarkContainerList(b *testing.B) {
	rt := podmantest.Start(b)
	image := podmantest.TestImage(b, rt)
	ctx := context.Background()
	cfg, sock, _ := containerNode(b, rt, image, 1)
	serveInProcess(b, cfg)
	c, err := api.Dial(sock)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	g, err := c.Acquire(ctx, api.AcquireRequest{Pools: map[string]int64{"containers": 1}, Wait: api.Duration(60e9)})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Release(ctx, g.Lease)
	if _, err := c.CreateContainer(ctx, g.Lease,
		api.ContainerRequest{Image: image, Command: []string{podmantest.ImageBinary, "sleep", "300"}}); err != nil {
		b.Fatal(err)
	}
	// The same listing straight to podman, in turn, for what svcrun adds.
	labels := map[string]string{broker.LabelLease: g.Lease, protocol.LabelService: broker.FullName}
	var raw, through time.Duration
	for b.Loop() {
		start := time.Now()
		if cs, err := rt.Client.List(ctx, labels); err != nil || len(cs) != 1 {
			b.Fatalf("podman list: %+v %v", cs, err)
		}
		mid := time.Now()
		list, err := c.Containers(ctx, g.Lease)
		if err != nil || len(list.Containers) != 1 {
			b.Fatalf("list: %+v %v", list, err)
		}
		raw += mid.Sub(start)
		through += time.Since(mid)
	}
	n := float64(b.N)
	b.ReportMetric(float64(raw.Microseconds())/1000/n, "podman-ms/list")
	b.ReportMetric(float64(through.Microseconds())/1000/n, "svcrun-ms/list")
}
