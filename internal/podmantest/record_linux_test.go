package podmantest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/oarbank/svcrun/internal/podman"
)

// TestRecord records the exchanges Fake answers with: it runs the client
// through a recording proxy in front of a real podman and writes what
// podman answered to testdata/libpod-4.3.1.json. It runs only when asked:
//
//	PODMANTEST_RECORD=1 go test -run TestRecord ./internal/podmantest
//
// on a host with podman 4.3.1 (Debian 12's); record again when the client
// sends a request the recording lacks (the fake then fails the test
// naming it).
func TestRecord(t *testing.T) {
	if os.Getenv("PODMANTEST_RECORD") != "1" {
		t.Skip("records only with PODMANTEST_RECORD=1")
	}
	rt := Start(t)
	image := TestImage(t, rt)
	recLabels := map[string]string{"rec": "1"}
	rt.RemoveAtCleanup(t, recLabels)
	p := newRecorder(t, rt.Socket)
	c := podman.New(p.socket)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	version, err := c.Ping(ctx)
	must(err)
	if version != "4.3.1" {
		t.Fatalf("podman %s: the recording is of 4.3.1", version)
	}
	tarball, err := buildImage(t.TempDir())
	must(err)
	must(c.Import(ctx, RecImported, bytes.NewReader(tarball)))
	for _, ref := range []string{RecImported, RecAbsentImage} {
		_, err := c.ImageExists(ctx, ref)
		must(err)
	}
	// An offline pull: the registry does not answer.
	if err := c.Pull(ctx, RecAbsentImage); err == nil {
		t.Fatalf("pull of %s: no error", RecAbsentImage)
	}
	spec := func(name string, args ...string) podman.Spec {
		return podman.Spec{Name: name, Image: image, Command: append([]string{ImageBinary}, args...), Labels: recLabels,
			Env: map[string]string{"A": "1"}, MemoryBytes: 64 << 20, CPUs: 0.5, Pids: 32}
	}
	// A container's life: exit 7, its output, inspect, list, stop and
	// remove twice, then absent.
	_, err = c.Create(ctx, spec(RecExit, "print", "hello"))
	must(err)
	must(c.Start(ctx, RecExit))
	_, err = c.Wait(ctx, RecExit)
	must(err)
	must(c.Logs(ctx, RecExit, false, io.Discard, io.Discard))
	_, err = c.Inspect(ctx, RecExit)
	must(err)
	_, err = c.List(ctx, recLabels)
	must(err)
	for range 2 {
		must(c.Stop(ctx, RecExit, time.Second))
		must(c.Remove(ctx, RecExit))
	}
	if _, err := c.Inspect(ctx, RecExit); err == nil {
		t.Fatal("inspect after remove: no error")
	}
	if _, err := c.Wait(ctx, RecExit); err == nil {
		t.Fatal("wait after remove: no error")
	}
	// An exit code.
	_, err = c.Create(ctx, spec(RecCode, "exit", "7"))
	must(err)
	must(c.Start(ctx, RecCode))
	_, err = c.Wait(ctx, RecCode)
	must(err)
	must(c.Remove(ctx, RecCode))
	// A running container stopped.
	_, err = c.Create(ctx, spec(RecSleep, "sleep", "3600"))
	must(err)
	must(c.Start(ctx, RecSleep))
	must(c.Stop(ctx, RecSleep, time.Second))
	_, err = c.Inspect(ctx, RecSleep)
	must(err)
	must(c.Remove(ctx, RecSleep))
	// Failures: an image podman does not hold, a user the image lacks.
	if _, err := c.Create(ctx,
		podman.Spec{Name: RecNoImage, Image: RecAbsentImage, Command: []string{"x"}, Labels: recLabels}); err == nil {
		t.Fatal("create of an absent image: no error")
	}
	_, err = c.Create(ctx,
		podman.Spec{Name: RecBadUser, Image: image, Command: []string{ImageBinary, "exit", "0"}, User: "absent",
			Labels: recLabels})
	must(err)
	if err := c.Start(ctx, RecBadUser); err == nil {
		t.Fatal("start as an absent user: no error")
	}
	must(c.Remove(ctx, RecBadUser))
	p.write(t, filepath.Join("testdata", "libpod-4.3.1.json"), version)
}

// recorder is a proxy that records every exchange.
type recorder struct {
	socket   string
	upstream *http.Client
	mu       sync.Mutex
	rec      []Exchange
}

func newRecorder(t *testing.T, upstream string) *recorder {
	p := &recorder{socket: filepath.Join(t.TempDir(), "rec.sock")}
	p.upstream = &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", upstream)
		},
		DisableKeepAlives: true,
	}}
	l, err := net.Listen("unix", p.socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: p}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return p
}

func (p *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req, _ := http.NewRequestWithContext(r.Context(), r.Method, "http://d"+r.URL.RequestURI(), bytes.NewReader(body))
	req.Header = r.Header.Clone()
	resp, err := p.upstream.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	e := Exchange{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.Query().Encode(), Status: resp.StatusCode,
		ContentType: resp.Header.Get("Content-Type"), Body: string(answer)}
	if r.Method == http.MethodPost && filepath.Base(e.Path) == "create" {
		var spec struct {
			Name string `json:"name"`
		}
		json.Unmarshal(body, &spec)
		e.Name = spec.Name
	}
	for _, h := range recordedHeaders {
		if v := resp.Header.Get(h); v != "" {
			if e.Headers == nil {
				e.Headers = map[string]string{}
			}
			e.Headers[h] = v
		}
	}
	p.mu.Lock()
	p.rec = append(p.rec, e)
	p.mu.Unlock()
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(answer)
}

func (p *recorder) write(t *testing.T, path, version string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b, err := json.MarshalIndent(Recording{Podman: version, Exchanges: p.rec}, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %d exchanges into %s", len(p.rec), path)
}
