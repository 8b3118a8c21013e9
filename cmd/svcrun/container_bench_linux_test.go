package main

import (
	"context"
	"testing"

	"github.com/oarbank/svcrun/api"
	"github.com/oarbank/svcrun/internal/podmantest"
)

// BenchmarkContainerCycle is a container's whole life, create, start,
// wait and remove, straight to podman and through svcrun's API (the
// broker, under one lease), side by side on one podman:
//
//	REQUIRE_KERNEL_FEATURES=1 go test ./cmd/svcrun -run '^$' -bench ContainerCycle -benchtime 20x
func BenchmarkContainerCycle(b *testing.B) {
	rt := podmantest.Start(b)
	image := podmantest.TestImage(b, rt)
	ctx := context.Background()
	b.Run("podman", func(b *testing.B) {
		for b.Loop() {
			if err := podmantest.Cycle(ctx, rt.Client, image, rt.Labels); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("broker", func(b *testing.B) {
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
		req := api.ContainerRequest{Image: image, Command: []string{podmantest.ImageBinary, "exit", "0"}, MemGB: 0.0625, Pids: 64}
		for b.Loop() {
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
		}
		b.StopTimer()
		c.Release(ctx, g.Lease)
	})
}

// BenchmarkContainerList lists a lease's containers (one running)
// through svcrun's API: the issue asks 10 ms at most.
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
	if _, err := c.CreateContainer(ctx, g.Lease, api.ContainerRequest{Image: image, Command: []string{podmantest.ImageBinary, "sleep", "300"}}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		list, err := c.Containers(ctx, g.Lease)
		if err != nil || len(list.Containers) != 1 {
			b.Fatalf("list: %+v %v", list, err)
		}
	}
}
