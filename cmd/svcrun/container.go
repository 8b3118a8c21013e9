package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oarbank/svcrun/api"
	"github.com/oarbank/svcrun/internal/cli"
	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/svcenv"
)

// containerFlags are what run --container and container run ask of the
// container: its image and limits.
type containerFlags struct {
	image   *string
	memGB   *float64
	cpus    *float64
	network *string
	env     multiFlag
	workdir *string
	user    *string
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func addContainerFlags(fs *flag.FlagSet, imageFlag bool) *containerFlags {
	f := &containerFlags{image: new(string)}
	if imageFlag {
		f.image = fs.String("container", "",
			"run CMD in a container of `IMAGE` (approved in the node's grants.containers), reserving one containers token")
	}
	f.memGB = fs.Float64("mem-gb", 0,
		"the container's memory limit in `GB`, no swap (default: the node's [containers].mem_gb)")
	f.cpus = fs.Float64("cpus", 0, "the container's CPU limit, in `CPUS` (default: the node's [containers].cpus)")
	f.network = fs.String("network", "",
		"the container's network, `none` or bridge where the node allows it (default: none)")
	fs.Var(&f.env, "env", "set `NAME=VALUE` in the container (repeatable)")
	f.workdir = fs.String("workdir", "", "the container's working `DIR`")
	f.user = fs.String("user", "", "the `USER` the container's command runs as")
	return f
}

func (f *containerFlags) request(argv []string) (api.ContainerRequest, error) {
	req := api.ContainerRequest{Image: *f.image, Command: argv, Network: *f.network, MemGB: *f.memGB, CPUs: *f.cpus,
		WorkDir: *f.workdir, User: *f.user}
	for _, kv := range f.env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return api.ContainerRequest{}, cli.UsageError{Msg: fmt.Sprintf("--env %q: give NAME=VALUE", kv)}
		}
		if req.Env == nil {
			req.Env = map[string]string{}
		}
		req.Env[k] = v
	}
	return req, nil
}

// reserve adds the container's token to a lease request.
func reserveContainer(req *api.AcquireRequest) {
	if req.Pools == nil {
		req.Pools = map[string]int64{}
	}
	req.Pools[manifest.ContainersPool]++
}

// runInContainer runs CMD in a container of the lease g: it creates it,
// streams its output, waits for it, removes it, and returns its exit
// status (137 when it was killed for memory). ctx ended (SIGINT or
// SIGTERM) stops the container, whose status is then returned: the
// terminal's SIGINT never reaches a container.
func runInContainer(ctx context.Context, m *cli.Env, c *api.Client, g api.Grant,
	req api.ContainerRequest) (int, error) {
	if req.Env == nil {
		req.Env = map[string]string{}
	}
	for k, v := range map[string]string{svcenv.VarAttemptID: g.Attempt, svcenv.VarLeaseID: g.Lease,
		svcenv.VarNodeID: g.NodeID} {
		if _, set := req.Env[k]; !set {
			req.Env[k] = v
		}
	}
	bg := context.WithoutCancel(ctx)
	ct, err := c.CreateContainer(bg, g.Lease, req)
	if err != nil {
		return 0, fmt.Errorf("create a container of %s: %w", req.Image, err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(bg, time.Minute)
		defer cancel()
		if err := c.RemoveContainer(rctx, g.Lease, ct.ID); err != nil {
			m.Printf("cannot remove container %s: %v (it goes with the lease)", ct.ID, err)
		}
	}()
	var wg sync.WaitGroup
	wg.Add(1)
	var logErr error
	go func() {
		defer wg.Done()
		logErr = c.ContainerLogs(bg, g.Lease, ct.ID, true, m.Stdout, m.Stderr)
	}()
	stopped := make(chan struct{})
	var stopping atomic.Bool
	go func() {
		select {
		case <-ctx.Done():
			stopping.Store(true)
			sctx, cancel := context.WithTimeout(bg, time.Minute)
			defer cancel()
			if err := c.StopContainer(sctx, g.Lease, ct.ID); err != nil {
				m.Printf("cannot stop container %s: %v", ct.ID, err)
			}
		case <-stopped:
		}
	}()
	end, err := c.WaitContainer(bg, g.Lease, ct.ID)
	close(stopped)
	wg.Wait()
	if err != nil {
		return 0, fmt.Errorf("wait for container %s: %w", ct.ID, err)
	}
	if logErr != nil {
		m.Printf("the output of container %s may be cut: %v", ct.ID, logErr)
	}
	switch {
	case end.OOMKilled:
		m.Printf("container %s was killed for using more memory than its limit (--mem-gb)", ct.ID)
		if end.ExitCode == 0 {
			return 137, nil
		}
	case end.ExitCode == 137 && !stopping.Load():
		// Podman 4.3 does not record the kernel's OOM kill (conmon leaves
		// its marker where podman does not look): a SIGKILL that svcrun
		// did not send is most likely the memory limit's.
		m.Printf(
			"container %s was killed by SIGKILL (exit 137), most likely for using more memory than its limit (--mem-gb); "+
				"the runtime does not say", ct.ID)
	}
	return end.ExitCode, nil
}

// runContainerCmd is `svcrun container run|ls|wait|logs|stop|rm`: the
// containers of the lease of the `svcrun run` it runs under (found by
// OARBANK_LEASE_ID, or --lease).
func runContainerCmd(ctx context.Context, m *cli.Env, args []string) error {
	if len(args) == 0 {
		return cli.UsageError{Msg: "give a subcommand: run, ls, wait, logs, stop or rm (svcrun container run -h)"}
	}
	sub, args := args[0], args[1:]
	fs := m.FlagSet("container "+sub, map[string]string{
		"run":  "[--detach] [--mem-gb N] [--cpus N] [--network none|bridge] [--env NAME=VALUE]... IMAGE [CMD [ARGS]...]",
		"ls":   "[--json]",
		"wait": "CONTAINER",
		"logs": "[-f] CONTAINER",
		"stop": "CONTAINER",
		"rm":   "CONTAINER",
	}[sub])
	sock := addSocketFlags(m, fs)
	lease := fs.String("lease", os.Getenv(svcenv.VarLeaseID),
		"the `LEASE` whose containers these are (default: $"+svcenv.VarLeaseID+", set by svcrun run)")
	var cf *containerFlags
	var detach, follow, asJSON *bool
	switch sub {
	case "run":
		cf = addContainerFlags(fs, false)
		detach = fs.Bool("detach", false, "leave the container running for the lease's life and print its id and address")
	case "ls":
		asJSON = m.JSONFlag(fs, "print the containers as JSON")
	case "logs":
		follow = fs.Bool("f", false, "follow the output until the container exits")
	case "wait", "stop", "rm":
	default:
		return cli.UsageError{Msg: fmt.Sprintf("unknown subcommand %q: use run, ls, wait, logs, stop or rm", sub)}
	}
	if err := cli.ParseLeading(fs, args); err != nil {
		return err
	}
	if *lease == "" {
		return cli.UsageError{
			Msg: "no lease: run this under svcrun run (which sets " + svcenv.VarLeaseID + "), or give --lease"}
	}
	rest := fs.Args()
	if sub != "run" && sub != "ls" && len(rest) != 1 {
		return cli.UsageError{Msg: "give one CONTAINER id (svcrun container ls lists them)"}
	}
	c, err := sock.dial()
	if err != nil {
		return err
	}
	defer c.Close()
	switch sub {
	case "run":
		if len(rest) == 0 {
			return cli.UsageError{Msg: "give the IMAGE, then the command, e.g. svcrun container run alpine -- echo hi"}
		}
		*cf.image, rest = rest[0], rest[1:]
		if len(rest) > 0 && rest[0] == "--" {
			rest = rest[1:]
		}
		req, err := cf.request(rest)
		if err != nil {
			return err
		}
		g := api.Grant{Lease: *lease, Attempt: os.Getenv(svcenv.VarAttemptID), NodeID: os.Getenv(svcenv.VarNodeID)}
		if *detach {
			ct, err := c.CreateContainer(ctx, g.Lease, req)
			if err != nil {
				return fmt.Errorf("create a container of %s: %w", req.Image, err)
			}
			fmt.Fprintf(m.Stdout, "%s %s\n", ct.ID, ct.Address)
			return nil
		}
		code, err := runInContainer(ctx, m, c, g, req)
		if err != nil {
			return err
		}
		if code != 0 {
			return cli.ChildExit{Code: code}
		}
		return nil
	case "ls":
		list, err := c.Containers(ctx, *lease)
		if err != nil {
			return err
		}
		if *asJSON {
			return cli.PrintJSON(m.Stdout, list)
		}
		for _, ct := range list.Containers {
			addr := ct.Address
			if addr == "" {
				addr = "-"
			}
			fmt.Fprintf(m.Stdout, "%s %s %s exit=%d %s\n", ct.ID, ct.State, ct.Image, ct.ExitCode, addr)
		}
		return nil
	case "wait":
		end, err := c.WaitContainer(ctx, *lease, rest[0])
		if err != nil {
			return err
		}
		fmt.Fprintf(m.Stdout, "%d\n", end.ExitCode)
		if end.ExitCode != 0 {
			return cli.ChildExit{Code: end.ExitCode}
		}
		return nil
	case "logs":
		return c.ContainerLogs(ctx, *lease, rest[0], *follow, m.Stdout, m.Stderr)
	case "stop":
		return c.StopContainer(ctx, *lease, rest[0])
	case "rm":
		return c.RemoveContainer(ctx, *lease, rest[0])
	}
	return nil
}

// runLeasedContainer is svcrun run --container once the lease is held:
// CMD runs in a container, the lease renewed meanwhile, and released
// after (release). It exits with CMD's status.
func runLeasedContainer(ctx context.Context, m *cli.Env, c *api.Client, g api.Grant, cf *containerFlags, argv []string,
	ttl time.Duration,
	away *awayNotice, release func()) error {
	defer release()
	req, err := cf.request(argv)
	if err != nil {
		return err
	}
	renewCtx, stopRenew := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	if ttl > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			every := ttl / 3
			select {
			case <-renewCtx.Done():
				return
			case <-time.After(every):
			}
			keepRenewing(renewCtx, m, away, c, g.Lease, every)
		}()
	}
	code, err := runInContainer(ctx, m, c, g, req)
	stopRenew()
	wg.Wait()
	if err != nil {
		return err
	}
	if code != 0 {
		return cli.ChildExit{Code: code}
	}
	return nil
}
