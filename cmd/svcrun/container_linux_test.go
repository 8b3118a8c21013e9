package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oarbank/svcrun/agent"
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
	dir := t.TempDir()
	bundle := filepath.Join(dir, "jobs")
	if err := os.MkdirAll(filepath.Join(bundle, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := fmt.Sprintf("[module]\nname = \"jobs\"\nversion = \"1\"\n[sandbox]\ncontainers = [%q]\n[[probes]]\nname = \"jobs-sh\"\nexec = [\"bin/probe\"]\n", image)
	if err := os.WriteFile(filepath.Join(bundle, "module.toml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bundle, "bin", "probe"), []byte("#!/bin/sh\nprintf '{\"healthy\":true}\\n'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	sdir, err := os.MkdirTemp("", "ct")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sdir) })
	sock = filepath.Join(sdir, "s.sock")
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
pull = "never"

[[modules]]
bundle = %q
grants = { containers = [%q] }
`, node, sock, rt.Socket, max, bundle, image)
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	// Whatever a failed test leaves of the broker's containers goes.
	rt.RemoveAtCleanup(t, map[string]string{protocol.LabelNode: node})
	return cfg, sock, node
}

// serveInProcess runs svcrun on cfg in this process until the test ends.
func serveInProcess(t testing.TB, cfg string) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(testLog{t}, nil))
	a, err := agent.Open(agent.Options{ConfigPath: cfg, Logger: log, NoContainers: true, PressureFile: noPressure})
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
	list, err := rt.Client.List(context.Background(), map[string]string{protocol.LabelNode: node, protocol.LabelService: broker.FullName})
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

func TestContainers(t *testing.T) {
	rt := podmantest.Start(t)
	image := podmantest.TestImage(t, rt)
	cfg, sock, node := containerNode(t, rt, image, 2)
	serveInProcess(t, cfg)

	t.Run("run --container", func(t *testing.T) {
		code, out, errs := run(t, "run", "--socket", sock, "--wait", "60s", "--container", image, "--", podmantest.ImageBinary, "print", "hello")
		if code != 0 || out != "hello\n" || !strings.Contains(errs, "err: hello") {
			t.Errorf("exit %d, stdout %q, stderr %q; want 0, hello, err: hello", code, out, errs)
		}
		code, _, errs = run(t, "run", "--socket", sock, "--wait", "60s", "--container", image, "--", podmantest.ImageBinary, "exit", "3")
		if code != 3 {
			t.Errorf("exit %d, want the container's 3\n%s", code, errs)
		}
		if left := brokerContainers(t, rt, node); len(left) != 0 {
			t.Errorf("containers left after run: %+v", left)
		}
	})

	t.Run("memory limit", func(t *testing.T) {
		code, _, errs := run(t, "run", "--socket", sock, "--wait", "60s", "--container", image, "--mem-gb", "0.0625", "--", podmantest.ImageBinary, "alloc", "256")
		// Killed by the kernel: 128+9. (podman under this test harness
		// does not always record OOMKilled, which adds a line saying so.)
		if code != 137 {
			t.Errorf("exit %d, stderr %q: want 137, killed for memory", code, errs)
		}
		code, _, errs = run(t, "run", "--socket", sock, "--wait", "60s", "--container", image, "--mem-gb", "64", "--", "true")
		if code != 125 || !strings.Contains(errs, "mem_gb: 64 is more than this node's maximum") {
			t.Errorf("exit %d, stderr %q: want 125, over the maximum", code, errs)
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
			id, err := rt.Client.Create(ctx, podman.Spec{Image: image, Command: []string{podmantest.ImageBinary, "sleep", "300"}, Labels: labels})
			if err != nil {
				t.Fatal(err)
			}
			return id
		}
		rt.RemoveAtCleanup(t, map[string]string{podmantest.TestLabel: node})
		ours := func(attempt, node string) map[string]string {
			return map[string]string{protocol.LabelAttemptID: attempt, protocol.LabelNode: node, protocol.LabelService: broker.FullName}
		}
		dead := create(ours("attempt-dead", node))
		kept := map[string]string{
			"of a live attempt": create(ours(live.Attempt, node)),
			"of another node":   create(ours("attempt-dead", "another-node")),
			"unlabelled":        create(map[string]string{}),
			"without a node":    create(map[string]string{protocol.LabelAttemptID: "attempt-dead", protocol.LabelService: broker.FullName}),
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
		code, _, errs := run(t, "run", "--socket", sock, "--wait", "60s", "--container", "docker.io/library/postgres:16", "--", "true")
		if code != 125 || !strings.Contains(errs, "image docker.io/library/postgres:16 is approved for no enabled module; approved: "+image) {
			t.Errorf("exit %d, stderr %q: want 125 and the approved images", code, errs)
		}
	})

	t.Run("labels and lease release", func(t *testing.T) {
		code, out, errs := run(t, "acquire", "--socket", sock, "--pool", "containers=1", "--job", "job-7", "--json", "--wait", "60s")
		if code != 0 {
			t.Fatalf("acquire: %s", errs)
		}
		var g struct{ Lease, Attempt string }
		if err := json.Unmarshal([]byte(out), &g); err != nil {
			t.Fatal(err)
		}
		code, out, errs = run(t, "container", "run", "--socket", sock, "--lease", g.Lease, "--detach", image, podmantest.ImageBinary, "sleep", "300")
		if code != 0 {
			t.Fatalf("container run --detach: %s", errs)
		}
		id := strings.Fields(out)[0]
		c, err := rt.Client.Inspect(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range map[string]string{protocol.LabelAttemptID: g.Attempt, protocol.LabelNode: node, protocol.LabelService: broker.FullName,
			broker.LabelLease: g.Lease, broker.LabelModule: "jobs", broker.LabelJob: "job-7"} {
			if c.Labels[k] != v {
				t.Errorf("label %s = %q, want %q", k, c.Labels[k], v)
			}
		}
		if c.Limits.MemoryBytes != 256<<20 || c.Limits.MemorySwapBytes != 256<<20 {
			t.Errorf("limits %+v, want 256 MiB and no swap", c.Limits)
		}
		// A second container is over the lease's one token.
		code, _, errs = run(t, "container", "run", "--socket", sock, "--lease", g.Lease, "--detach", image, podmantest.ImageBinary, "sleep", "300")
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
		eventually(t, "the released lease's container is still there", func() bool { return len(brokerContainers(t, rt, node)) == 0 })
	})

	t.Run("a full pool makes the lease wait", func(t *testing.T) {
		code, out, errs := run(t, "acquire", "--socket", sock, "--pool", "containers=2", "--json", "--wait", "60s")
		if code != 0 {
			t.Fatalf("acquire: %s", errs)
		}
		var first struct{ Lease string }
		json.Unmarshal([]byte(out), &first)
		if code, _, errs := run(t, "acquire", "--socket", sock, "--pool", "containers=1", "--wait", "0s"); code != 1 || !strings.Contains(errs, "containers") {
			t.Errorf("second lease with the pool full: exit %d, %q; want rejected", code, errs)
		}
		second := make(chan int, 1)
		go func() {
			code, _, _ := run(t, "run", "--socket", sock, "--wait", "60s", "--container", image, "--", podmantest.ImageBinary, "exit", "0")
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
		eventually(t, "svcrun serve does not answer", func() bool { return exec.Command(bin, "status", "--socket", sock).Run() == nil })
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
	id := strings.Fields(cli("container", "run", "--lease", g.Lease, "--detach", image, podmantest.ImageBinary, "sleep", "300"))[0]
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
	eventually(t, "the released lease's container is still there after kill -9", func() bool { return len(brokerContainers(t, rt, node)) == 0 })
}
