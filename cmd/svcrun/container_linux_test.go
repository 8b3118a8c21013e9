package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/oarbank/svcrun/agent"
	"github.com/oarbank/svcrun/api"
	"github.com/oarbank/svcrun/broker"
	"github.com/oarbank/svcrun/internal/podman"
	"github.com/oarbank/svcrun/internal/podmantest"
	"github.com/oarbank/svcrun/internal/testhost"
	"github.com/oarbank/svcrun/protocol"
)

// containerNode writes a node configuration whose broker uses rt, with a
// module approved for image, and returns it with its socket and node id.
func containerNode(t testing.TB, rt *podmantest.Runtime, image string, max int) (cfg, sock, node string) {
	t.Helper()
	return containerNodeWith(t, rt, nodeOpts{images: []string{image}, max: max, pull: "never"})
}

// nodeOpts are what a test's node configuration varies.
type nodeOpts struct {
	images   []string // the module's: asked for in its manifest and approved
	max      int
	pull     string
	networks []string // [containers].networks; nil: the default, none only
}

// containerNodeWith writes a node configuration as containerNode does, from o.
func containerNodeWith(t testing.TB, rt *podmantest.Runtime, o nodeOpts) (cfg, sock, node string) {
	t.Helper()
	dir := t.TempDir()
	bundle := filepath.Join(dir, "jobs")
	if err := os.MkdirAll(filepath.Join(bundle, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	images, err := json.Marshal(o.images)
	if err != nil {
		t.Fatal(err)
	}
	manifest := fmt.Sprintf("[module]\nname = \"jobs\"\nversion = \"1\"\n[sandbox]\ncontainers = %s\n[[probes]]\n"+
		"name = \"jobs-sh\"\nexec = [\"bin/probe\"]\n", images)
	if err := os.WriteFile(filepath.Join(bundle, "module.toml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bundle, "bin", "probe"), []byte("#!/bin/sh\nprintf '{\"healthy\":true}\\n'\n"),
		0o755); err != nil {
		t.Fatal(err)
	}
	sdir, err := os.MkdirTemp("", "ct")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sdir) })
	sock = filepath.Join(sdir, "s.sock")
	networks := ""
	if o.networks != nil {
		b, err := json.Marshal(o.networks)
		if err != nil {
			t.Fatal(err)
		}
		networks = "networks = " + string(b)
	}
	node = testhost.NodeID("ct")
	cfg = filepath.Join(dir, "svcrun.toml")
	text := fmt.Sprintf(`node_id = %q
data_dir = "data"
socket = %q
memory_budget_gb = 1
sandbox = "best_effort"
# No periodic reap within a test: a released lease's containers must go
# at once, not at the next round (svcrun reap still runs one).
reap_period_s = 3600

[containers]
enabled = true
socket = %q
max = %d
mem_gb = 0.25
pull = %q
%s

[[modules]]
bundle = %q
grants = { containers = %s }
`, node, sock, rt.Socket, o.max, o.pull, networks, bundle, images)
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	// Whatever a failed test leaves of the broker's containers goes.
	rt.RemoveAtCleanup(t, map[string]string{protocol.LabelNode: node})
	return cfg, sock, node
}

// serveInProcess runs svcrun on cfg in this process until the test ends.
func serveInProcess(t testing.TB, cfg string) { serveInProcessWith(t, cfg, nil) }

// serveInProcessWith runs svcrun on cfg whose broker uses runtime (nil:
// the podman of the configuration).
func serveInProcessWith(t testing.TB, cfg string, runtime broker.Runtime) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(testLog{t}, nil))
	a, err := agent.Open(
		agent.Options{ConfigPath: cfg, Logger: log, NoContainers: true, PressureFile: noPressure, ContainerRuntime: runtime})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := startAPI(ctx, a, log)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		srv.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent: %v", err)
		}
	})
}

// brokerContainers lists the broker's containers of node at the runtime.
func brokerContainers(t *testing.T, rt *podmantest.Runtime, node string) []podman.Container {
	t.Helper()
	list, err := rt.Client.List(context.Background(),
		map[string]string{protocol.LabelNode: node, protocol.LabelService: broker.FullName})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// eventually polls cond until it holds, failing the test after 60 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 60 s: %s", what)
		}
		time.Sleep(20 * time.Millisecond) // polling the runtime, a bound only as a failure cutoff
	}
}

// absentImage is approved but on no node: the pull policy "never" refuses it.
const absentImage = "localhost/svcrun-absent:1"

// apiLease acquires a lease of n containers tokens through svcrun's API,
// released when the test ends.
func apiLease(t *testing.T, sock string, n int64) (*api.Client, api.Grant) {
	t.Helper()
	c, err := api.Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	g, err := c.Acquire(context.Background(),
		api.AcquireRequest{Pools: map[string]int64{"containers": n}, Wait: api.Duration(60 * time.Second)})
	if err != nil {
		c.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Release(context.Background(), g.Lease)
		c.Close()
	})
	return c, g
}

// runToEnd creates a container through svcrun's API, waits for it and
// returns it as it ended, its output, and its limits as podman applied them.
func runToEnd(t *testing.T, rt *podmantest.Runtime, c *api.Client, lease string,
	req api.ContainerRequest) (api.Container, string, podman.Limits) {
	t.Helper()
	ctx := context.Background()
	ct, err := c.CreateContainer(ctx, lease, req)
	if err != nil {
		t.Fatal(err)
	}
	defer c.RemoveContainer(ctx, lease, ct.ID)
	in, err := rt.Client.Inspect(ctx, ct.ID)
	if err != nil {
		t.Fatal(err)
	}
	end, err := c.WaitContainer(ctx, lease, ct.ID)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := c.ContainerLogs(ctx, lease, ct.ID, false, &out, &out); err != nil {
		t.Fatal(err)
	}
	return end, out.String(), in.Limits
}

func TestContainers(t *testing.T) {
	rt := podmantest.Start(t)
	image := podmantest.TestImage(t, rt)
	cfg, sock, node := containerNodeWith(t, rt, nodeOpts{images: []string{image, absentImage}, max: 2, pull: "never"})
	serveInProcess(t, cfg)

	t.Run("run --container", func(t *testing.T) {
		code, out, errs := run(t, "run", "--socket", sock, "--wait", "60s", "--container", image, "--",
			podmantest.ImageBinary, "print", "hello")
		if code != 0 || out != "hello\n" || !strings.Contains(errs, "err: hello") {
			t.Errorf("exit %d, stdout %q, stderr %q; want 0, hello, err: hello", code, out, errs)
		}
		code, _, errs = run(t, "run", "--socket", sock, "--wait", "60s", "--container", image, "--", podmantest.ImageBinary,
			"exit", "3")
		if code != 3 {
			t.Errorf("exit %d, want the container's 3\n%s", code, errs)
		}
		if left := brokerContainers(t, rt, node); len(left) != 0 {
			t.Errorf("containers left after run: %+v", left)
		}
	})

	t.Run("memory limit", func(t *testing.T) {
		code, _, errs := run(t, "run", "--socket", sock, "--wait", "60s", "--container", image, "--mem-gb", "0.0625", "--",
			podmantest.ImageBinary, "alloc", "256")
		// Killed by the kernel: 128+9, and a line saying why (podman 4.3
		// does not record the OOM kill: the line says it is most likely).
		if code != 137 || !strings.Contains(errs, "for using more memory than its limit") {
			t.Errorf("exit %d, stderr %q: want 137, killed for memory", code, errs)
		}
		// Through the API: the exit status, and OOMKilled as podman says.
		c, g := apiLease(t, sock, 1)
		end, _, limits := runToEnd(t, rt, c, g.Lease,
			api.ContainerRequest{Image: image, Command: []string{podmantest.ImageBinary, "alloc", "256"}, MemGB: 0.0625})
		if end.ExitCode != 137 || limits.MemoryBytes != 64<<20 || limits.MemorySwapBytes != 64<<20 {
			t.Errorf("alloc 256 MB in 64 MB: exit %d, limits %+v; want 137, 64 MiB without swap", end.ExitCode, limits)
		}
		code, _, errs = run(t, "run", "--socket", sock, "--wait", "60s", "--container", image, "--mem-gb", "64", "--", "true")
		if code != 125 || !strings.Contains(errs, "mem_gb: 64 is more than this node's maximum") {
			t.Errorf("exit %d, stderr %q: want 125, over the maximum", code, errs)
		}
	})

	t.Run("pids limit", func(t *testing.T) {
		c, g := apiLease(t, sock, 1)
		// Each process of the helper is a Go program of a few threads,
		// each of which counts: 4 fit in 64, 64 do not.
		end, out, limits := runToEnd(t, rt, c, g.Lease,
			api.ContainerRequest{Image: image, Command: []string{podmantest.ImageBinary, "fork", "4"}, Pids: 64})
		if end.ExitCode != 0 || !strings.Contains(out, "forked 4") || limits.Pids != 64 {
			t.Errorf("fork 4 within 64 pids: exit %d, output %q, limits %+v", end.ExitCode, out, limits)
		}
		end, out, _ = runToEnd(t, rt, c, g.Lease,
			api.ContainerRequest{Image: image, Command: []string{podmantest.ImageBinary, "fork", "64"}, Pids: 64})
		if end.ExitCode == 0 || !regexp.MustCompile(`fork \d+ failed|failed to create new OS thread`).MatchString(out) {
			t.Errorf("fork 64 within 64 pids: exit %d, output %q; want a fork failing", end.ExitCode, out)
		}
	})

	t.Run("cpu limit", func(t *testing.T) {
		c, g := apiLease(t, sock, 1)
		for _, tc := range []struct {
			ask, want float64
		}{{0.5, 0.5}, {0, 1}} { // 0: the node's default, [containers].cpus
			_, _, limits := runToEnd(t, rt, c, g.Lease,
				api.ContainerRequest{Image: image, Command: []string{podmantest.ImageBinary, "exit", "0"}, CPUs: tc.ask})
			if limits.CPUs != tc.want {
				t.Errorf("cpus %v asked: podman applied %v, want %v", tc.ask, limits.CPUs, tc.want)
			}
		}
	})

	t.Run("pull never", func(t *testing.T) {
		c, g := apiLease(t, sock, 1)
		_, err := c.CreateContainer(context.Background(), g.Lease,
			api.ContainerRequest{Image: absentImage, Command: []string{"true"}})
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Status != 404 ||
			!strings.Contains(ae.Message, `image `+absentImage+` is not on this node and [containers].pull is "never"`) {
			t.Errorf("create of an absent image: %v; want a 404 naming the image and the policy", err)
		}
	})

	t.Run("pull missing, image present", func(t *testing.T) {
		// A node of its own whose policy is "missing": the test image is
		// there, so no registry is asked (none answers here).
		cfg, sock, _ := containerNodeWith(t, rt, nodeOpts{images: []string{image}, max: 1, pull: "missing"})
		serveInProcess(t, cfg)
		c, g := apiLease(t, sock, 1)
		end, out, _ := runToEnd(t, rt, c, g.Lease,
			api.ContainerRequest{Image: image, Command: []string{podmantest.ImageBinary, "print", "here"}})
		if end.ExitCode != 0 || !strings.Contains(out, "here") {
			t.Errorf("exit %d, output %q", end.ExitCode, out)
		}
		m, err := c.Metrics(context.Background())
		if err != nil || !strings.Contains(m, "\nsvcrun_container_pulls_total 0\n") {
			t.Errorf("metrics: %v, want no pull:\n%s", err, m)
		}
	})

	t.Run("reap", func(t *testing.T) {
		code, out, errs := run(t, "acquire", "--socket", sock, "--pool", "containers=1", "--json", "--wait", "60s")
		if code != 0 {
			t.Fatalf("acquire: %s", errs)
		}
		var live struct{ Lease, Attempt string }
		json.Unmarshal([]byte(out), &live)
		defer run(t, "release", "--socket", sock, live.Lease)
		ctx := context.Background()
		create := func(labels map[string]string) string {
			t.Helper()
			labels[podmantest.TestLabel] = node
			id, err := rt.Client.Create(ctx,
				podman.Spec{Image: image, Command: []string{podmantest.ImageBinary, "sleep", "300"}, Labels: labels})
			if err != nil {
				t.Fatal(err)
			}
			return id
		}
		rt.RemoveAtCleanup(t, map[string]string{podmantest.TestLabel: node})
		ours := func(attempt, node string) map[string]string {
			return map[string]string{protocol.LabelAttemptID: attempt, protocol.LabelNode: node,
				protocol.LabelService: broker.FullName}
		}
		dead := create(ours("attempt-dead", node))
		kept := map[string]string{
			"of a live attempt": create(ours(live.Attempt, node)),
			"of another node":   create(ours("attempt-dead", "another-node")),
			"unlabelled":        create(map[string]string{}),
			"without a node": create(
				map[string]string{protocol.LabelAttemptID: "attempt-dead", protocol.LabelService: broker.FullName}),
		}
		if code, out, errs := run(t, "reap", "--socket", sock); code != 0 {
			t.Fatalf("reap: %s %s", out, errs)
		}
		eventually(t, "the dead attempt's container is still there", func() bool {
			_, err := rt.Client.Inspect(ctx, dead)
			return errors.Is(err, podman.ErrNotFound)
		})
		for what, id := range kept {
			if _, err := rt.Client.Inspect(ctx, id); err != nil {
				t.Errorf("the container %s was touched: %v", what, err)
			}
		}
	})

	t.Run("unapproved image", func(t *testing.T) {
		code, _, errs := run(t, "run", "--socket", sock, "--wait", "60s", "--container", "docker.io/library/postgres:16",
			"--", "true")
		if code != 125 ||
			!strings.Contains(errs,
				"image docker.io/library/postgres:16 is approved for no enabled module; approved: "+absentImage+", "+image) {
			t.Errorf("exit %d, stderr %q: want 125 and the approved images", code, errs)
		}
	})

	t.Run("labels and lease release", func(t *testing.T) {
		code, out, errs := run(t, "acquire", "--socket", sock, "--pool", "containers=1", "--job", "job-7", "--json", "--wait",
			"60s")
		if code != 0 {
			t.Fatalf("acquire: %s", errs)
		}
		var g struct{ Lease, Attempt string }
		if err := json.Unmarshal([]byte(out), &g); err != nil {
			t.Fatal(err)
		}
		code, out, errs = run(t, "container", "run", "--socket", sock, "--lease", g.Lease, "--detach", image,
			podmantest.ImageBinary, "sleep", "300")
		if code != 0 {
			t.Fatalf("container run --detach: %s", errs)
		}
		id := strings.Fields(out)[0]
		c, err := rt.Client.Inspect(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range map[string]string{protocol.LabelAttemptID: g.Attempt, protocol.LabelNode: node,
			protocol.LabelService: broker.FullName,
			broker.LabelLease:     g.Lease, broker.LabelModule: "jobs", broker.LabelJob: "job-7"} {
			if c.Labels[k] != v {
				t.Errorf("label %s = %q, want %q", k, c.Labels[k], v)
			}
		}
		if c.Limits.MemoryBytes != 256<<20 || c.Limits.MemorySwapBytes != 256<<20 {
			t.Errorf("limits %+v, want 256 MiB and no swap", c.Limits)
		}
		// A second container is over the lease's one token.
		code, _, errs = run(t, "container", "run", "--socket", sock, "--lease", g.Lease, "--detach", image,
			podmantest.ImageBinary, "sleep", "300")
		if code != 1 || !strings.Contains(errs, "holds 1 containers token(s) and has 1 container(s) running") {
			t.Errorf("second container: exit %d, %q; want refused", code, errs)
		}
		code, out, _ = run(t, "container", "ls", "--socket", sock, "--lease", g.Lease)
		if code != 0 || !strings.HasPrefix(out, id+" running") {
			t.Errorf("container ls: %q", out)
		}
		if code, _, errs := run(t, "release", "--socket", sock, g.Lease); code != 0 {
			t.Fatal(errs)
		}
		eventually(t, "the released lease's container is still there",
			func() bool { return len(brokerContainers(t, rt, node)) == 0 })
	})

	t.Run("a full pool makes the lease wait", func(t *testing.T) {
		code, out, errs := run(t, "acquire", "--socket", sock, "--pool", "containers=2", "--json", "--wait", "60s")
		if code != 0 {
			t.Fatalf("acquire: %s", errs)
		}
		var first struct{ Lease string }
		json.Unmarshal([]byte(out), &first)
		if code, _, errs := run(t, "acquire", "--socket", sock, "--pool", "containers=1", "--wait", "0s"); code != 1 ||
			!strings.Contains(errs, "containers") {
			t.Errorf("second lease with the pool full: exit %d, %q; want rejected", code, errs)
		}
		second := make(chan int, 1)
		go func() {
			code, _, _ := run(t, "run", "--socket", sock, "--wait", "60s", "--container", image, "--", podmantest.ImageBinary,
				"exit", "0")
			second <- code
		}()
		eventually(t, "the second lease does not wait", func() bool {
			_, out, _ := run(t, "status", "--socket", sock, "--json")
			var st struct{ Leases []struct{ Admitted bool } }
			json.Unmarshal([]byte(out), &st)
			return len(st.Leases) == 2 && !st.Leases[0].Admitted || len(st.Leases) == 2 && !st.Leases[1].Admitted
		})
		select {
		case code := <-second:
			t.Fatalf("the second run ended (%d) while the pool was full", code)
		default:
		}
		run(t, "release", "--socket", sock, first.Lease)
		if code := <-second; code != 0 {
			t.Errorf("second run: exit %d", code)
		}
	})
}

// TestContainersDocs runs the commands of docs/containers.md, their
// images (not on an offline node) replaced by the test image.
func TestContainersDocs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	rt := podmantest.Start(t)
	image := podmantest.TestImage(t, rt)
	cfg, sock, node := containerNode(t, rt, image, 2)
	serveInProcess(t, cfg)
	bin := buildSvcrun(t)
	doc, err := os.ReadFile("../../docs/containers.md")
	if err != nil {
		t.Fatal(err)
	}
	replace := strings.NewReplacer(
		"--detach postgres:16", "--detach "+image+" "+podmantest.ImageBinary+" sleep 300",
		"postgres:16 --mem-gb 2 -- pg_dump --version", image+" --mem-gb 1 -- "+podmantest.ImageBinary+" print pg_dump 16",
		"alpine:3 -- echo hello", image+" -- "+podmantest.ImageBinary+" print hello",
	)
	var blocks []string
	for _, part := range strings.Split(string(doc), "```sh\n")[1:] {
		blocks = append(blocks, replace.Replace(strings.SplitN(part, "```", 2)[0]))
	}
	if len(blocks) != 2 {
		t.Fatalf("%d sh blocks in docs/containers.md, want the 2 this test knows", len(blocks))
	}
	for i, want := range []string{"pg_dump 16\n", "hello\n"} {
		cmd := exec.Command("sh", "-ec", blocks[i])
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"), EnvSocket+"="+sock)
		out, err := cmd.Output()
		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("docs block %d:\n%s\n: %v, output %q, want %q", i, blocks[i], err, out, want)
		}
	}
	if left := brokerContainers(t, rt, node); len(left) != 0 {
		t.Errorf("containers left: %+v", left)
	}
}

// TestContainersAdoptedAfterKill9 kills svcrun while a lease holds a
// container: the new svcrun finds it by its labels, and removes it when
// the lease is released.
func TestContainersAdoptedAfterKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	rt := podmantest.Start(t)
	image := podmantest.TestImage(t, rt)
	cfg, sock, node := containerNode(t, rt, image, 2)
	bin := buildSvcrun(t)
	serve := func() *exec.Cmd {
		cmd := exec.Command(bin, "serve", "--config", cfg, "--log-format", "text")
		cmd.Stderr = &testLog{t}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		eventually(t, "svcrun serve does not answer",
			func() bool { return exec.Command(bin, "status", "--socket", sock).Run() == nil })
		return cmd
	}
	cli := func(args ...string) string {
		n := 1
		if args[0] == "container" {
			n = 2 // after the subcommand
		}
		full := append(append(args[:n:n], "--socket", sock), args[n:]...)
		out, err := exec.Command(bin, full...).Output()
		if err != nil {
			t.Fatalf("svcrun %v: %v", args, err)
		}
		return string(out)
	}
	s1 := serve()
	var g struct{ Lease string }
	if err := json.Unmarshal([]byte(cli("acquire", "--pool", "containers=1", "--json", "--wait", "60s")), &g); err != nil {
		t.Fatal(err)
	}
	id := strings.Fields(
		cli("container", "run", "--lease", g.Lease, "--detach", image, podmantest.ImageBinary, "sleep", "300"))[0]
	s1.Process.Signal(syscall.SIGKILL)
	s1.Wait()

	s2 := serve()
	t.Cleanup(func() {
		s2.Process.Signal(syscall.SIGTERM)
		s2.Wait()
	})
	if out := cli("container", "ls", "--lease", g.Lease); !strings.HasPrefix(out, id+" running") {
		t.Errorf("after kill -9, the lease's containers: %q, want %s running", out, id)
	}
	cli("release", g.Lease)
	eventually(t, "the released lease's container is still there after kill -9",
		func() bool { return len(brokerContainers(t, rt, node)) == 0 })
}

// createOnList creates a container when the broker's list_owned lists,
// once armed: a container made after the reap round's snapshot.
type createOnList struct {
	*podman.Client
	armed atomic.Bool
	made  chan string
	spec  podman.Spec
}

func (r *createOnList) List(ctx context.Context, labels map[string]string) ([]podman.Container, error) {
	if len(labels) == 1 && labels[protocol.LabelService] == broker.FullName && r.armed.CompareAndSwap(true, false) {
		id, err := r.Client.Create(ctx, r.spec)
		if err != nil {
			return nil, err
		}
		r.made <- id
	}
	return r.Client.List(ctx, labels)
}

// TestContainersReapSnapshot checks the reap's snapshot rule with podman:
// a dead attempt's container made after the round's snapshot is kept by
// that round and destroyed by the next; one made before is destroyed.
func TestContainersReapSnapshot(t *testing.T) {
	rt := podmantest.Start(t)
	image := podmantest.TestImage(t, rt)
	cfg, sock, node := containerNode(t, rt, image, 2)
	labels := map[string]string{protocol.LabelAttemptID: "attempt-dead", protocol.LabelNode: node,
		protocol.LabelService: broker.FullName}
	spec := rt.Spec(podman.Spec{Image: image, Command: []string{podmantest.ImageBinary, "sleep", "300"}, Labels: labels})
	r := &createOnList{Client: rt.Client, made: make(chan string, 1), spec: spec}
	serveInProcessWith(t, cfg, r)
	c, err := api.Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	// The first round after svcrun starts is done before the hook is armed.
	if _, err := c.Reap(ctx); err != nil {
		t.Fatal(err)
	}
	older, err := rt.Client.Create(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	r.armed.Store(true)
	outcomes := func() map[string]string {
		t.Helper()
		res, err := c.Reap(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, s := range res.Services {
			for _, o := range s.Objects {
				out[o.ID] = o.Outcome + " " + o.Reason
			}
		}
		return out
	}
	first := outcomes()
	var newer string
	select {
	case newer = <-r.made:
	default:
		t.Fatalf("the round did not list the broker's containers: %v", first)
	}
	want := map[string]string{older: "destroyed ", newer: "kept created after the snapshot"}
	if diff := cmp.Diff(want, first); diff != "" {
		t.Errorf("first round (-want +got):\n%s", diff)
	}
	if _, err := rt.Client.Inspect(ctx, newer); err != nil {
		t.Errorf("the container newer than the snapshot: %v", err)
	}
	if got := outcomes(); got[newer] != "destroyed " {
		t.Errorf("second round: %v, want %s destroyed", got, newer)
	}
}

// TestContainersBridge runs two containers on the bridge network, through
// svcrun's API, in a podman of the test's own in a network namespace of
// its own (the host's firewall and forwarding are never touched): one
// listens, left running, and the other reaches it at the address the
// answer gave.
func TestContainersBridge(t *testing.T) {
	rt := podmantest.StartOwnNetwork(t)
	image := podmantest.TestImage(t, rt)
	cfg, sock, _ := containerNodeWith(t, rt,
		nodeOpts{images: []string{image}, max: 2, pull: "never", networks: []string{"none", "bridge"}})
	serveInProcess(t, cfg)
	c, g := apiLease(t, sock, 2)
	ctx := context.Background()
	listener, err := c.CreateContainer(ctx, g.Lease, api.ContainerRequest{Image: image, Network: "bridge",
		Command: []string{podmantest.ImageBinary, "listen", "8080"}})
	if err != nil {
		t.Fatal(err)
	}
	if listener.Address == "" {
		t.Fatalf("the listener on the bridge has no address: %+v", listener)
	}
	end, out, _ := runToEnd(t, rt, c, g.Lease, api.ContainerRequest{Image: image, Network: "bridge",
		Command: []string{podmantest.ImageBinary, "connect", net.JoinHostPort(listener.Address, "8080")}})
	if end.ExitCode != 0 || !strings.Contains(out, "hello from the listener") {
		t.Errorf("connect to %s: exit %d, output %q", listener.Address, end.ExitCode, out)
	}
	// On network none there is no address, and nothing to reach.
	end, out, _ = runToEnd(t, rt, c, g.Lease, api.ContainerRequest{Image: image,
		Command: []string{podmantest.ImageBinary, "connect", "192.0.2.1:8080"}})
	if end.ExitCode == 0 || !strings.Contains(out, "network is unreachable") {
		t.Errorf("connect on network none: exit %d, output %q; want unreachable", end.ExitCode, out)
	}
}
