package podman_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/oarbank/svcrun/internal/podman"
	"github.com/oarbank/svcrun/internal/podmantest"
)

func TestMain(m *testing.M) { os.Exit(podmantest.Main(m)) }

// bound is only the failure's cutoff of a call to the real podman.
const bound = 2 * time.Minute

// run creates and starts a container of the test image running args, and
// returns its id.
func run(t *testing.T, rt *podmantest.Runtime, s podman.Spec, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	s.Image = podmantest.TestImage(t, rt)
	s.Command = append([]string{podmantest.ImageBinary}, args...)
	id, err := rt.Client.Create(ctx, rt.Spec(s))
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Client.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	return id
}

func TestContainerLife(t *testing.T) {
	rt := podmantest.Start(t)
	c := rt.Client
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	id := run(t, rt, podman.Spec{
		Labels:  map[string]string{"oarbank.lease": "L1", "extra": "x"},
		Env:     map[string]string{"GREETING": "hi"},
		WorkDir: "/proc",
		User:    "1234",
	}, "env", "a", "b")
	code, err := c.Wait(ctx, id)
	if err != nil || code != 0 {
		t.Fatalf("wait: code %d, %v", code, err)
	}
	var out, errb bytes.Buffer
	if err := c.Logs(ctx, id, false, &out, &errb); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"args=a b\n", "wd=/proc\n", "uid=1234\n", "env GREETING=hi\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	ct, err := c.Inspect(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if ct.ID != id || ct.State != "exited" || ct.ExitCode != 0 || ct.Labels["oarbank.lease"] != "L1" ||
		ct.Labels["extra"] != "x" ||
		ct.Created.IsZero() || ct.StartedAt.Before(ct.Created) || ct.FinishedAt.Before(ct.Created) || ct.IPAddress != "" {
		t.Errorf("inspect: %+v", ct)
	}
	tests := []struct {
		labels map[string]string
		found  bool
	}{
		{map[string]string{"oarbank.lease": "L1"}, true},
		{map[string]string{"oarbank.lease": ""}, true},
		{map[string]string{"oarbank.lease": "L1", "extra": "x"}, true},
		{map[string]string{"oarbank.lease": "L2"}, false},
		{map[string]string{"oarbank.lease": "L1", "extra": "y"}, false},
		{map[string]string{"absent": ""}, false},
	}
	for _, tt := range tests {
		l := map[string]string{podmantest.TestLabel: rt.Labels[podmantest.TestLabel]}
		for k, v := range tt.labels {
			l[k] = v
		}
		cs, err := c.List(ctx, l)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(cs) == 1 && cs[0].ID == id; got != tt.found || len(cs) > 1 {
			t.Errorf("list %v: %+v, want found %v", tt.labels, cs, tt.found)
		}
		if len(cs) == 1 &&
			(cs[0].State != "exited" || cs[0].Image == "" || cs[0].Name != ct.Name || cs[0].Labels["extra"] != "x" ||
				cs[0].FinishedAt.IsZero()) {
			t.Errorf("list %v: %+v", tt.labels, cs[0])
		}
	}
	// Stop and remove are idempotent: an exited container, a removed one.
	for i := range 2 {
		if err := c.Stop(ctx, id, time.Second); err != nil {
			t.Errorf("stop %d: %v", i, err)
		}
		if err := c.Remove(ctx, id); err != nil {
			t.Errorf("remove %d: %v", i, err)
		}
	}
	if _, err := c.Inspect(ctx, id); !errors.Is(err, podman.ErrNotFound) {
		t.Errorf("inspect after remove: %v, want ErrNotFound", err)
	}
}

func TestExitCodeAndLogs(t *testing.T) {
	rt := podmantest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	tests := []struct {
		args     []string
		code     int
		out, err string
	}{
		{[]string{"exit", "7"}, 7, "", ""},
		{[]string{"print", "hello", "world"}, 0, "hello world\n", "err: hello world\n"},
	}
	for _, tt := range tests {
		id := run(t, rt, podman.Spec{}, tt.args...)
		// Following from the start returns when the container exits,
		// with all of its output.
		var out, errb bytes.Buffer
		if err := rt.Client.Logs(ctx, id, true, &out, &errb); err != nil {
			t.Fatal(err)
		}
		code, err := rt.Client.Wait(ctx, id)
		if err != nil || code != tt.code {
			t.Errorf("%v: wait: code %d, %v; want %d", tt.args, code, err, tt.code)
		}
		if out.String() != tt.out || errb.String() != tt.err {
			t.Errorf("%v: logs: stdout %q, stderr %q; want %q, %q", tt.args, out.String(), errb.String(), tt.out, tt.err)
		}
	}
}

func TestStopRunning(t *testing.T) {
	rt := podmantest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	id := run(t, rt, podman.Spec{}, "sleep", "3600")
	ct, err := rt.Client.Inspect(ctx, id)
	if err != nil || ct.State != "running" {
		t.Fatalf("inspect: %+v, %v", ct, err)
	}
	// A wait ended by its context returns at once.
	wctx, wcancel := context.WithTimeout(ctx, 200*time.Millisecond)
	if _, err := rt.Client.Wait(wctx, id); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("wait on a running container past its context: %v", err)
	}
	wcancel()
	if err := rt.Client.Stop(ctx, id, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	ct, err = rt.Client.Inspect(ctx, id)
	if err != nil || ct.State != "exited" || ct.ExitCode != 143 {
		t.Errorf("after stop: %+v, %v; want exited by SIGTERM (143)", ct, err)
	}
}

func TestLimits(t *testing.T) {
	rt := podmantest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	tests := []struct {
		name      string
		spec      podman.Spec
		args      []string
		code      int
		oom       bool
		outPrefix string
	}{
		{"within", podman.Spec{MemoryBytes: 64 << 20, CPUs: 0.5, Pids: 16}, []string{"exit", "0"}, 0, false, ""},
		{"oom", podman.Spec{MemoryBytes: 32 << 20, Pids: 64}, []string{"alloc", "256"}, 137, true, ""},
		// GOMAXPROCS=1 keeps the helper's own threads few (each is a
		// pid), whatever the host's cores.
		{"pids", podman.Spec{MemoryBytes: 256 << 20, Pids: 16, Env: map[string]string{"GOMAXPROCS": "1"}},
			[]string{"fork", "64"}, 3, false, "fork "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := run(t, rt, tt.spec, tt.args...)
			code, err := rt.Client.Wait(ctx, id)
			if err != nil || code != tt.code {
				t.Errorf("wait: code %d, %v; want %d", code, err, tt.code)
			}
			ct, err := rt.Client.Inspect(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			want := podman.Limits{MemoryBytes: tt.spec.MemoryBytes, MemorySwapBytes: tt.spec.MemoryBytes, CPUs: tt.spec.CPUs,
				Pids: tt.spec.Pids}
			if ct.Limits != want {
				t.Errorf("limits applied %+v, want %+v", ct.Limits, want)
			}
			// Podman 4.3.1's API service never reports an OOM kill (see
			// docs/decisions.md, Container runtime client): the exit
			// code above, SIGKILL, is all there is. A later podman does.
			if ct.OOMKilled != tt.oom && !(tt.oom && version(t, rt) == "4.3.1") {
				t.Errorf("OOMKilled %v, want %v", ct.OOMKilled, tt.oom)
			}
			if tt.outPrefix != "" {
				var out bytes.Buffer
				if err := rt.Client.Logs(ctx, id, false, &out, nil); err != nil {
					t.Fatal(err)
				}
				if !strings.HasPrefix(out.String(), tt.outPrefix) || !strings.Contains(out.String(), "failed") {
					t.Errorf("output %q, want a failed fork", out.String())
				}
			}
		})
	}
}

func version(t *testing.T, rt *podmantest.Runtime) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	v, err := rt.Client.Ping(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestUnknownImageAndContainer(t *testing.T) {
	rt := podmantest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	const ref = "localhost/svcrun-podmantest-absent:1"
	if ok, err := rt.Client.ImageExists(ctx, ref); ok || err != nil {
		t.Errorf("image exists %s: %v, %v", ref, ok, err)
	}
	if ok, err := rt.Client.ImageExists(ctx, podmantest.TestImage(t, rt)); !ok || err != nil {
		t.Errorf("image exists (the test image): %v, %v", ok, err)
	}
	_, err := rt.Client.Create(ctx, rt.Spec(podman.Spec{Image: ref, Command: []string{"x"}}))
	if !errors.Is(err, podman.ErrNotFound) || !strings.Contains(err.Error(), ref) {
		t.Errorf("create of an unknown image: %v, want ErrNotFound naming it", err)
	}
	for name, call := range map[string]func() error{
		"inspect": func() error { _, err := rt.Client.Inspect(ctx, "absent"); return err },
		"wait":    func() error { _, err := rt.Client.Wait(ctx, "absent"); return err },
		"start":   func() error { return rt.Client.Start(ctx, "absent") },
		"logs":    func() error { return rt.Client.Logs(ctx, "absent", false, nil, nil) },
	} {
		if err := call(); !errors.Is(err, podman.ErrNotFound) || !strings.Contains(err.Error(), "absent") {
			t.Errorf("%s of an absent container: %v, want ErrNotFound naming it", name, err)
		}
	}
}
