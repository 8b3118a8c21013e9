package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oarbank/svcrun/api"
	"github.com/oarbank/svcrun/errdefs"
)

// rawCall makes a request on socket without the client's error mapping.
func rawCall(t *testing.T, socket, method, path, body string) (int, api.ErrorBody, string) {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}}
	defer c.CloseIdleConnections()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctxT(t, 30*time.Second), method, "http://svcrun"+path, r)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var eb api.ErrorBody
	if resp.StatusCode/100 != 2 {
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s %s: error answer is %q, not JSON: %s", method, path, ct, raw)
		}
		if err := json.Unmarshal(raw, &eb); err != nil || eb.Error == "" || eb.Code == "" {
			t.Errorf("%s %s: error body %s", method, path, raw)
		}
	}
	return resp.StatusCode, eb, string(raw)
}

func TestAPIRoutes(t *testing.T) {
	n := startNode(t, demoModules(t))
	c := n.c
	ctx := ctxT(t, 60*time.Second)

	// The socket is 0600 from the start.
	fi, err := os.Lstat(n.socket)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want a socket with 0600", fi.Mode())
	}

	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.NodeID != "test-node" || st.Sandbox != "best_effort" || len(st.Services) != 1 ||
		st.Services[0].Name != "demo/kv" || len(st.Probes) != 1 {
		t.Fatalf("status %+v", st)
	}

	// Events: subscribed before anything below happens.
	ev, err := c.Events(ctx, api.EventsQuery{})
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()

	g, err := c.Acquire(ctx, api.AcquireRequest{Job: "j1", Capabilities: []string{"kv"},
		Pools: map[string]int64{"kv-slots": 1}, Wait: api.Duration(20 * time.Second), TTL: api.Duration(30 * time.Second)})
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	if !strings.HasPrefix(g.Lease, "lease-") || !strings.HasPrefix(g.Attempt, "attempt-") ||
		len(g.Services) != 1 || g.Services[0] != "demo/kv" || g.Expires.IsZero() {
		t.Fatalf("grant %+v", g)
	}
	// The grant says what the lease uses, with its latest fingerprint's
	// attrs: the demo service's objects dir.
	if u := g.Uses.Services; g.NodeID != "test-node" || len(u) != 1 || u[0].Name != "demo/kv" ||
		len(u[0].Capabilities) != 1 ||
		u[0].Attrs["objects_dir"] != filepath.Join(n.dataDir, "modules", "demo", "objects") || len(g.Uses.Probes) != 0 {
		t.Fatalf("grant's uses %+v", g)
	}
	pg, err := c.Acquire(ctx, api.AcquireRequest{Capabilities: []string{"posix-sh"}, Wait: api.Duration(20 * time.Second)})
	if err != nil {
		t.Fatalf("acquire posix-sh: %v", err)
	}
	if p := pg.Uses.Probes; len(p) != 1 || p[0].Name != "demo/posix-sh" ||
		p[0].Capability != "posix-sh" || p[0].Attrs["shell"] != "/bin/sh" || len(pg.Uses.Services) != 0 {
		t.Fatalf("grant of a probe's capability: %+v", pg)
	}
	if err := c.Release(ctx, pg.Lease); err != nil {
		t.Fatal(err)
	}

	// Beyond the pool's capacity: 409 with the reason.
	_, err = c.Acquire(ctx, api.AcquireRequest{Pools: map[string]int64{"kv-slots": 2},
		Wait: api.Duration(300 * time.Millisecond)})
	var rej *errdefs.RejectedError
	if !errors.As(err, &rej) || !strings.Contains(rej.Reason, "pool kv-slots") {
		t.Fatalf("oversized acquire: %v", err)
	}
	code, eb, _ := rawCall(t, n.socket, "POST", "/v1/leases", `{"attempt":"a-raw","pools":{"kv-slots":2},"wait":"100ms"}`)
	if code != http.StatusConflict || eb.Code != api.CodeRejected || !strings.Contains(eb.Reason,
		"pool kv-slots") || !strings.Contains(eb.Error, eb.Reason) {
		t.Errorf("raw rejected acquire: %d %+v", code, eb)
	}
	code, eb, _ = rawCall(t, n.socket, "POST", "/v1/leases", `{"attempt":"a-raw","capabilities":["nope"]}`)
	if code != http.StatusConflict || !strings.Contains(eb.Reason, "nope") {
		t.Errorf("unknown capability: %d %+v", code, eb)
	}
	// Bad bodies: TestAcquireBadRequests.

	r, err := c.Renew(ctx, g.Lease)
	if err != nil || r.Lease != g.Lease || r.Expires.Before(g.Expires) {
		t.Fatalf("renew: %+v %v", r, err)
	}
	st, err = c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Leases) != 1 || !st.Leases[0].Admitted || st.Leases[0].Job != "j1" || st.Services[0].Refs != 1 {
		t.Fatalf("status with a lease: %+v", st)
	}
	if s, p := st.Services[0], st.Probes[0]; !s.Healthy || s.FingerprintedAt.IsZero() ||
		s.Attrs["objects_dir"] == nil || p.Attrs["shell"] != "/bin/sh" {
		t.Errorf("status's fingerprints: service %+v, probe %+v", s, p)
	}
	if err := c.Release(ctx, g.Lease); err != nil {
		t.Fatalf("release: %v", err)
	}
	if err := c.Release(ctx, g.Lease); !errors.Is(err, errdefs.ErrUnknownLease) ||
		!strings.Contains(err.Error(), g.Lease) {
		t.Errorf("second release: %v", err)
	}
	if _, err := c.Renew(ctx, "lease-nope"); !errors.Is(err, errdefs.ErrUnknownLease) {
		t.Errorf("renew unknown: %v", err)
	}
	if code, eb, _ := rawCall(t, n.socket, "DELETE", "/v1/leases/lease-nope",
		""); code != http.StatusNotFound || eb.Code != api.CodeUnknownLease {
		t.Errorf("raw release unknown: %d %+v", code, eb)
	}

	// The event stream saw the admission and the release.
	seen := map[string]bool{}
	deadline := time.AfterFunc(10*time.Second, func() { ev.Close() })
	for !seen["admitted"] || !seen["released"] {
		rec, err := ev.Next()
		if err != nil {
			t.Fatalf("events: %v (seen %v)", err, seen)
		}
		if strings.Contains(rec.Text, g.Lease) {
			seen[rec.Kind] = true
		}
		if rec.At.IsZero() || rec.Kind == "" {
			t.Errorf("record %+v", rec)
		}
	}
	deadline.Stop()

	if d, err := c.Doctor(ctx); err != nil || !d.OK {
		t.Errorf("doctor: %+v %v", d, err)
	}
	if r, err := c.Reap(ctx); err != nil || r.Round == 0 || len(r.Services) != 1 || r.Services[0].Service != "demo/kv" {
		t.Errorf("reap: %+v %v", r, err)
	}
	_, err = c.Reset(ctx, "demo/nope")
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Status != http.StatusNotFound || !strings.Contains(err.Error(), "demo/kv") {
		t.Errorf("reset unknown service: %v", err)
	}
	if d, err := c.Reset(ctx, "demo/kv"); err != nil || !d.OK {
		t.Errorf("reset: %+v %v", d, err)
	}
	if _, err := c.Reset(ctx, "kv"); err == nil || !strings.Contains(err.Error(), "MODULE/NAME") {
		t.Errorf("reset without module: %v", err)
	}

	// Disable: the module's capability is gone; enable: back.
	if _, err := c.SetModuleEnabled(ctx, "demo", false); err != nil {
		t.Fatalf("disable: %v", err)
	}
	st, _ = c.Status(ctx)
	if st.Services[0].Enabled {
		t.Errorf("disabled module's service still enabled: %+v", st.Services[0])
	}
	if _, err := c.Acquire(ctx, api.AcquireRequest{Capabilities: []string{"kv"}}); !errors.As(err, &rej) {
		t.Errorf("acquire from a disabled module: %v", err)
	}
	if _, err := c.SetModuleEnabled(ctx, "nope", true); !errors.As(err, &ae) ||
		ae.Status != http.StatusNotFound || !strings.Contains(err.Error(), "modules: demo") {
		t.Errorf("enable unknown module: %v", err)
	}
	if _, err := c.SetModuleEnabled(ctx, "demo", true); err != nil {
		t.Fatalf("enable: %v", err)
	}
	g, err = c.Acquire(ctx, api.AcquireRequest{Capabilities: []string{"kv"}, Wait: api.Duration(20 * time.Second)})
	if err != nil {
		t.Fatalf("acquire after enable: %v", err)
	}
	if err := c.Release(ctx, g.Lease); err != nil {
		t.Fatal(err)
	}

	rr, err := c.Reload(ctx)
	if err != nil || rr.RestartNeeded == nil || len(rr.RestartNeeded) != 0 {
		t.Errorf("reload: %+v %v", rr, err)
	}

	m, err := c.Metrics(ctx)
	if err != nil || !strings.Contains(m, `svcrun_service_ready{service="demo/kv"`) ||
		!strings.Contains(m, "# TYPE svcrun_leases gauge") {
		t.Errorf("metrics: %v\n%s", err, m)
	}

	// Routes that do not exist, and wrong methods: JSON too.
	if code, eb, _ := rawCall(t, n.socket, "GET", "/v2/status", ""); code != http.StatusNotFound ||
		eb.Code != api.CodeNotFound {
		t.Errorf("unknown route: %d %+v", code, eb)
	}
	if code, eb, _ := rawCall(t, n.socket, "POST", "/v1/status",
		""); code != http.StatusMethodNotAllowed || eb.Code != api.CodeNotAllowed || !strings.Contains(eb.Error, "GET") {
		t.Errorf("wrong method: %d %+v", code, eb)
	}
	if code, _, body := rawCall(t, n.socket, "GET", "/v1/status", ""); code != http.StatusOK ||
		!strings.Contains(body, `"services":[{"name":"demo/kv"`) {
		t.Errorf("status JSON: %d %s", code, body)
	}
}

func TestAPIReloadRefused(t *testing.T) {
	n := startNode(t, demoModules(t))
	cfg := n.a.Config().File
	orig, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, append(orig, []byte("\nbogus = 1\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = n.c.Reload(ctxT(t, 30*time.Second))
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Status != http.StatusUnprocessableEntity ||
		!strings.Contains(err.Error(), "bogus") || !strings.Contains(err.Error(), "running configuration stays") {
		t.Errorf("bad reload: %v", err)
	}
}

func TestSecondServerFails(t *testing.T) {
	n := startNode(t, demoModules(t))
	_, err := New(n.a, n.socket, nil)
	if err == nil || !strings.Contains(err.Error(), "another svcrun listens on "+n.socket) {
		t.Fatalf("second server: %v", err)
	}
	// The first one still serves.
	if _, err := n.c.Status(ctxT(t, 10*time.Second)); err != nil {
		t.Fatalf("first server after the second's attempt: %v", err)
	}
}

func TestStaleSocketReplaced(t *testing.T) {
	sock := filepath.Join(shortTempDir(t), "sub", "s.sock")
	if err := os.MkdirAll(filepath.Dir(sock), 0o755); err != nil {
		t.Fatal(err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close() // the file stays, nobody listens: stale
	if _, err := os.Lstat(sock); err != nil {
		t.Fatal(err)
	}
	srv, err := New(nil, sock, nil)
	if err != nil {
		t.Fatalf("over a stale socket: %v", err)
	}
	c, err := api.Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	if code, eb, _ := rawCall(t, sock, "GET", "/nope", ""); code != http.StatusNotFound {
		t.Errorf("new server: %d %+v", code, eb)
	}
	c.Close()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left after close: %v", err)
	}
	_, err = api.Dial(sock)
	var ue *api.UnreachableError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(),
		"cannot reach svcrun at "+sock+": is `svcrun serve` running?") ||
		!strings.Contains(err.Error(), "(connect: no such file or directory)") {
		t.Errorf("dial after close: %v", err)
	}
}

func TestSocketPathChecks(t *testing.T) {
	dir := shortTempDir(t)
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New(nil, file, nil); err == nil || !strings.Contains(err.Error(), "is not a socket") {
		t.Errorf("over a regular file: %v", err)
	}
	long := filepath.Join(dir, strings.Repeat("x", 120))
	if _, err := New(nil, long, nil); err == nil || !strings.Contains(err.Error(), "more than the 103") {
		t.Errorf("long path: %v", err)
	}
	// A missing parent is created 0755.
	sock := filepath.Join(dir, "new", "s.sock")
	srv, err := New(nil, sock, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	fi, err := os.Stat(filepath.Dir(sock))
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("parent dir: %v %v", fi.Mode(), err)
	}
}

// TestShutdownEndsStreamsAndWaits: Close returns with an event stream
// open and an acquire waiting, without waiting for either to end; the
// waiting client gets 503.
func TestShutdownEndsStreamsAndWaits(t *testing.T) {
	n := startNode(t, demoModules(t))
	// The waiting acquire would wait ten minutes: Close returning within
	// closeGuard shows it did not wait for it, on however loaded a machine.
	const closeGuard, acquireWait = time.Minute, 10 * time.Minute
	ctx := ctxT(t, acquireWait+time.Minute)
	ev, err := n.c.Events(ctx, api.EventsQuery{})
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	// Both slots held, so the next request waits.
	if _, err := n.c.Acquire(ctx, api.AcquireRequest{Pools: map[string]int64{"kv-slots": 2},
		Wait: api.Duration(20 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	res := make(chan error, 1)
	go func() {
		_, err := n.c.Acquire(ctx, api.AcquireRequest{Pools: map[string]int64{"kv-slots": 1},
			Wait: api.Duration(acquireWait)})
		res <- err
	}()
	waitFor(t, "the second acquire waiting", func() bool {
		st, err := n.c.Status(ctx)
		return err == nil && len(st.Leases) == 2 && st.Leases[0].Admitted != st.Leases[1].Admitted
	})
	closed := make(chan error, 1)
	go func() { closed <- n.srv.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(closeGuard):
		t.Fatalf("Close has not returned in %v: it waits for the event stream or the acquire waiting %v", closeGuard,
			acquireWait)
	}
	for {
		if _, err := ev.Next(); err != nil {
			break // the stream ended
		}
	}
	if err := <-res; !errors.Is(err, errdefs.ErrStopping) {
		t.Errorf("the waiting acquire: %v, want svcrun is stopping", err)
	}
}
