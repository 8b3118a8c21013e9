package podman_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oarbank/svcrun/internal/podman"
	"github.com/oarbank/svcrun/internal/podmantest"
)

// These tests answer the client from podman 4.3.1's recorded answers
// (podmantest.Fake); no podman runs.

func fake(t *testing.T) (*podman.Client, *podmantest.Fake, context.Context) {
	f := podmantest.NewFake(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return podman.New(f.Socket), f, ctx
}

func TestFakePing(t *testing.T) {
	c, _, ctx := fake(t)
	v, err := c.Ping(ctx)
	if err != nil || v != "4.3.1" {
		t.Errorf("ping: %q, %v", v, err)
	}
}

// TestCreateHardens checks what Create asks of podman: the hardening
// and the limits are in the request, whatever the spec says.
func TestCreateHardens(t *testing.T) {
	c, f, ctx := fake(t)
	id, err := c.Create(ctx,
		podman.Spec{Name: podmantest.RecExit, Image: "localhost/x:1", Command: []string{"/testimage", "print", "hello"},
			Labels: map[string]string{"rec": "1"}, MemoryBytes: 64 << 20, CPUs: 0.5, Pids: 32})
	if err != nil || len(id) != 64 {
		t.Fatalf("create: %q, %v", id, err)
	}
	reqs := f.Requests()
	var body map[string]any
	if err := json.Unmarshal(reqs[len(reqs)-1].Body, &body); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"init": true, "no_new_privileges": true, "privileged": false,
		"netns":  map[string]any{"nsmode": "none"},
		"labels": map[string]any{"rec": "1"},
		"resource_limits": map[string]any{
			"memory": map[string]any{"limit": float64(64 << 20), "swap": float64(64 << 20)},
			"cpu":    map[string]any{"quota": float64(50000), "period": float64(100000)},
			"pids":   map[string]any{"limit": float64(32)},
		},
	}
	for k, v := range want {
		got, _ := json.Marshal(body[k])
		w, _ := json.Marshal(v)
		if !bytes.Equal(got, w) {
			t.Errorf("create sent %s: %s, want %s", k, got, w)
		}
	}
	for _, k := range []string{"mounts", "devices", "volumes", "cap_add"} {
		if _, ok := body[k]; ok {
			t.Errorf("create sent %s: %v", k, body[k])
		}
	}
}

func TestCreateRefuses(t *testing.T) {
	tests := []struct {
		name string
		spec podman.Spec
		want string
	}{
		{"network", podman.Spec{Image: "localhost/x:1", Network: "host"}, `network "host"`},
		{"memory", podman.Spec{Image: "localhost/x:1", MemoryBytes: -1}, "negative"},
		{"cpus", podman.Spec{Image: "localhost/x:1", CPUs: -0.5}, "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, f, ctx := fake(t)
			_, err := c.Create(ctx, tt.spec)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "localhost/x:1") {
				t.Errorf("create: %v, want an error naming the image and %s", err, tt.want)
			}
			if n := len(f.Requests()); n != 0 {
				t.Errorf("%d requests sent", n)
			}
		})
	}
}

func TestFakeContainerLife(t *testing.T) {
	c, _, ctx := fake(t)
	if err := c.Start(ctx, podmantest.RecExit); err != nil {
		t.Fatal(err)
	}
	if code, err := c.Wait(ctx, podmantest.RecExit); code != 0 || err != nil {
		t.Errorf("wait: %d, %v", code, err)
	}
	if code, err := c.Wait(ctx, podmantest.RecCode); code != 7 || err != nil {
		t.Errorf("wait: %d, %v; want 7", code, err)
	}
	var out, errb bytes.Buffer
	if err := c.Logs(ctx, podmantest.RecExit, false, &out, &errb); err != nil || out.String() != "hello\n" ||
		errb.String() != "err: hello\n" {
		t.Errorf("logs: %q, %q, %v", out.String(), errb.String(), err)
	}
	ct, err := c.Inspect(ctx, podmantest.RecExit)
	if err != nil {
		t.Fatal(err)
	}
	wantLimits := podman.Limits{MemoryBytes: 64 << 20, MemorySwapBytes: 64 << 20, CPUs: 0.5, Pids: 32}
	if len(ct.ID) != 64 || ct.Name != podmantest.RecExit || ct.State != "exited" || ct.ExitCode != 0 ||
		ct.Labels["rec"] != "1" ||
		ct.Limits != wantLimits || ct.Created.IsZero() || ct.StartedAt.IsZero() || ct.FinishedAt.Before(ct.Created) ||
		!strings.HasPrefix(ct.Image, podmantest.ImageName+":") || ct.IPAddress != "" {
		t.Errorf("inspect: %+v", ct)
	}
	cs, err := c.List(ctx, map[string]string{"rec": "1"})
	if err != nil || len(cs) != 1 {
		t.Fatalf("list: %+v, %v", cs, err)
	}
	if l := cs[0]; l.ID != ct.ID || l.Name != ct.Name || l.State != "exited" || l.Labels["rec"] != "1" ||
		l.Image != ct.Image ||
		!l.Created.Equal(ct.Created) || l.StartedAt.Unix() != ct.StartedAt.Unix() ||
		l.FinishedAt.Unix() != ct.FinishedAt.Unix() {
		t.Errorf("list: %+v, inspect %+v", l, ct)
	}
	// Stop and remove: done, then absent (404): no error either time.
	for i := range 2 {
		if err := c.Stop(ctx, podmantest.RecExit, time.Second); err != nil {
			t.Errorf("stop %d: %v", i, err)
		}
		if err := c.Remove(ctx, podmantest.RecExit); err != nil {
			t.Errorf("remove %d: %v", i, err)
		}
	}
	if err := c.Stop(ctx, podmantest.RecSleep, time.Second); err != nil {
		t.Errorf("stop of a running container: %v", err)
	}
	if ct, err := c.Inspect(ctx, podmantest.RecSleep); err != nil || ct.State != "exited" || ct.ExitCode != 143 {
		t.Errorf("inspect after stop: %+v, %v", ct, err)
	}
}

func TestFakeErrors(t *testing.T) {
	tests := []struct {
		name     string
		call     func(context.Context, *podman.Client) error
		notFound bool
		status   int
		want     []string // in the message
	}{
		// The recording asked about rec-exit before its removal and
		// after: the second answer is the 404.
		{"inspect absent", func(ctx context.Context, c *podman.Client) error {
			c.Inspect(ctx, podmantest.RecExit)
			_, err := c.Inspect(ctx, podmantest.RecExit)
			return err
		}, true, 404, []string{"podman inspect rec-exit", "no such container"}},
		{"wait absent", func(ctx context.Context, c *podman.Client) error {
			c.Wait(ctx, podmantest.RecExit)
			_, err := c.Wait(ctx, podmantest.RecExit)
			return err
		}, true, 404, []string{"podman wait rec-exit"}},
		{"create of an absent image", func(ctx context.Context, c *podman.Client) error {
			_, err := c.Create(ctx, podman.Spec{Name: podmantest.RecNoImage, Image: podmantest.RecAbsentImage})
			return err
		}, true, 500, []string{"podman create " + podmantest.RecAbsentImage, "image not known"}},
		{"start fails", func(ctx context.Context, c *podman.Client) error {
			return c.Start(ctx, podmantest.RecBadUser)
		}, false, 500, []string{"podman start rec-baduser", "unable to find user absent"}},
		{"pull fails in its stream", func(ctx context.Context, c *podman.Client) error {
			return c.Pull(ctx, podmantest.RecAbsentImage)
		}, false, 0, []string{"podman pull " + podmantest.RecAbsentImage, "pinging container registry"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, ctx := fake(t)
			err := tt.call(ctx, c)
			if err == nil {
				t.Fatal("no error")
			}
			if errors.Is(err, podman.ErrNotFound) != tt.notFound {
				t.Errorf("%v: errors.Is ErrNotFound %v, want %v", err, !tt.notFound, tt.notFound)
			}
			var ae *podman.APIError
			if tt.status != 0 && (!errors.As(err, &ae) || ae.Status != tt.status) {
				t.Errorf("%v: want an APIError of status %d", err, tt.status)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v: lacks %q", err, w)
				}
			}
		})
	}
}

func TestFakeImages(t *testing.T) {
	c, _, ctx := fake(t)
	for ref, want := range map[string]bool{podmantest.RecImported: true, podmantest.RecAbsentImage: false} {
		if ok, err := c.ImageExists(ctx, ref); ok != want || err != nil {
			t.Errorf("exists %s: %v, %v; want %v", ref, ok, err, want)
		}
	}
	if err := c.Import(ctx, podmantest.RecImported, strings.NewReader("a tarball")); err != nil {
		t.Errorf("import: %v", err)
	}
}

func TestUnreachable(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "absent.sock")
	c := podman.New(sock)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := c.Ping(ctx)
	var ue *podman.UnreachableError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), sock) ||
		!strings.Contains(err.Error(), "API service is not running") {
		t.Errorf("ping of %s: %v", sock, err)
	}
	if err := c.Remove(ctx, "x"); !errors.As(err, &ue) || !strings.Contains(err.Error(), "podman rm x") {
		t.Errorf("remove: %v", err)
	}
}

// TestExitRaceAsksAgain: libpod 4.3 answers a request about a container
// whose process is ending with a 500 about its /proc cgroup file; a
// request that may be sent twice (a look, a wait, a stop, a remove) is
// sent again and gets its answer, a start is not, and a race that does
// not pass is told.
func TestExitRaceAsksAgain(t *testing.T) {
	const race = `{"cause":"no such process","message":"read /proc/31640/cgroup: no such process","response":500}`
	inspect := "/v4.3.1/libpod/containers/" + podmantest.RecExit + "/json"
	wait := "/v4.3.1/libpod/containers/" + podmantest.RecExit + "/wait"
	start := "/v4.3.1/libpod/containers/" + podmantest.RecBadUser + "/start"
	stop := "/v4.3.1/libpod/containers/" + podmantest.RecSleep + "/stop"
	remove := "/v4.3.1/libpod/containers/" + podmantest.RecExit

	t.Run("inspect", func(t *testing.T) {
		c, f, ctx := fake(t)
		f.AnswerFirst("GET", inspect, 500, race)
		f.AnswerFirst("GET", inspect, 500, strings.Replace(race, "read", "open", 1))
		ct, err := c.Inspect(ctx, podmantest.RecExit)
		if err != nil || ct.State != "exited" {
			t.Fatalf("inspect after two races: %+v, %v", ct, err)
		}
		if n := len(f.Requests()); n != 3 {
			t.Errorf("%d requests, want 3", n)
		}
	})
	t.Run("wait", func(t *testing.T) {
		c, f, ctx := fake(t)
		f.AnswerFirst("POST", wait, 500, race)
		if code, err := c.Wait(ctx, podmantest.RecExit); err != nil || code != 0 {
			t.Fatalf("wait after a race: %d, %v", code, err)
		}
	})
	t.Run("stop and remove", func(t *testing.T) {
		c, f, ctx := fake(t)
		f.AnswerFirst("POST", stop, 500, race)
		f.AnswerFirst("DELETE", remove, 500, race)
		if err := c.Stop(ctx, podmantest.RecSleep, time.Second); err != nil {
			t.Errorf("stop after a race: %v", err)
		}
		if err := c.Remove(ctx, podmantest.RecExit); err != nil {
			t.Errorf("remove after a race: %v", err)
		}
		if n := len(f.Requests()); n != 4 {
			t.Errorf("%d requests, want 4", n)
		}
	})
	t.Run("a start is not sent again", func(t *testing.T) {
		c, f, ctx := fake(t)
		f.AnswerFirst("POST", start, 500, race)
		err := c.Start(ctx, podmantest.RecBadUser)
		if err == nil || !strings.Contains(err.Error(), "/cgroup: no such process") {
			t.Fatalf("start: %v", err)
		}
		if n := len(f.Requests()); n != 1 {
			t.Errorf("%d requests, want 1", n)
		}
	})
	t.Run("a race that lasts", func(t *testing.T) {
		c, f, ctx := fake(t)
		for range 10 {
			f.AnswerFirst("GET", inspect, 500, race)
		}
		_, err := c.Inspect(ctx, podmantest.RecExit)
		var ae *podman.APIError
		if !errors.As(err, &ae) || ae.Status != 500 {
			t.Fatalf("inspect: %v", err)
		}
		if n := len(f.Requests()); n != 5 {
			t.Errorf("%d requests, want 5", n)
		}
	})
	for _, msg := range []string{
		"read /proc/31640/status: no such process", "read /proc/self/cgroup: no such process",
		"read /proc//cgroup: no such process", "read /proc/31640/cgroup: permission denied",
		"container state improper",
	} {
		t.Run("not: "+msg, func(t *testing.T) {
			c, f, ctx := fake(t)
			f.AnswerFirst("GET", inspect, 500, `{"message":"`+msg+`"}`)
			if _, err := c.Inspect(ctx, podmantest.RecExit); err == nil {
				t.Fatal("no error")
			}
			if n := len(f.Requests()); n != 1 {
				t.Errorf("%d requests, want 1", n)
			}
		})
	}
}
