//go:build linux

package agent

// The metrics listener and the node's signals in a real agent (the e2e
// harness of e2e_test.go, process groups only: neither depends on how
// services are contained).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

var processGroups = e2eMode{noContainers: true}

// metrics scrapes the agent.
func (e *e2e) metrics() map[string]*dto.MetricFamily {
	e.t.Helper()
	return scrape(e.t, e.r.a)
}

// metrics_listen serves GET /metrics on TCP, in Prometheus' format and by
// its naming conventions, and nothing else: no API on TCP.
func TestMetricsListen(t *testing.T) {
	if testing.Short() {
		t.Skip("real time, real processes")
	}
	e := newE2E(t, processGroups, map[string]string{"metrics_listen": `"127.0.0.1:0"`})
	e.start()
	addr := e.r.a.MetricsAddr()
	if addr == "" || strings.HasSuffix(addr, ":0") {
		t.Fatalf("metrics address %q", addr)
	}
	g := e.mustAcquire(AcquireRequest{Requirements: caps("cap-ondemand"), Wait: 10 * time.Second})
	e.release(g)

	client := &http.Client{Timeout: e2eGuard}
	call := func(method, path string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, "http://"+addr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		return resp, string(body)
	}
	resp, body := call("GET", "/metrics")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != MetricsContentType {
		t.Fatalf("GET /metrics: %s, Content-Type %q\n%s", resp.Status, resp.Header.Get("Content-Type"), body)
	}
	fams := parseMetrics(t, body)
	checkConventions(t, fams)
	promtoolLint(t, body)

	checks := []struct {
		what string
		ok   bool
	}{
		{"a start op, ok", count(fams, "svcrun_op_duration_seconds", "op", "start", "outcome", "ok") >= 1},
		{"no start op timed out", count(fams, "svcrun_op_duration_seconds", "op", "start", "outcome", "timeout") == 0},
		{"store writes", count(fams, "svcrun_store_write_duration_seconds") >= 1},
		{"no store write waits", value(fams, "svcrun_store_write_waiting_seconds") == 0},
		{"one lease admitted", count(fams, "svcrun_lease_wait_seconds", "outcome", "admitted") == 1},
		{"no lease waits now", value(fams, "svcrun_lease_oldest_wait_seconds") == 0},
		{"ondemand ready", value(fams, "svcrun_service_ready", "service", "e2e/ondemand") == 1},
		{"ondemand in state ready", value(fams, "svcrun_service_state", "service", "e2e/ondemand", "state", "ready") == 1},
		{"ondemand not stopped", value(fams, "svcrun_service_state", "service", "e2e/ondemand", "state", "stopped") == 0},
		{"its pool offered", value(fams, "svcrun_pool_offered_tokens", "pool", "od-slots") >= 0},
		{"the budget in bytes", value(fams, "svcrun_memory_budget_bytes") == 1<<30},
		{"no memory pressure", value(fams, "svcrun_memory_pressure") == 0},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("metrics: %s: no\n%s", c.what, body)
		}
	}

	for _, c := range []struct {
		method, path string
		code         int
	}{
		{"GET", "/v1/status", http.StatusNotFound},
		{"GET", "/v1/leases", http.StatusNotFound},
		{"POST", "/v1/leases", http.StatusNotFound},
		{"GET", "/", http.StatusNotFound},
		{"GET", "/metrics/x", http.StatusNotFound},
		{"POST", "/metrics", http.StatusMethodNotAllowed},
	} {
		if resp, body := call(c.method, c.path); resp.StatusCode != c.code {
			t.Errorf("%s %s on the metrics listener: %s, want %d\n%s", c.method, c.path, resp.Status, c.code, body)
		}
	}
}

// An address in use refuses the start, naming metrics_listen.
func TestMetricsListenInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	e := newE2E(t, processGroups, map[string]string{"metrics_listen": fmt.Sprintf("%q", ln.Addr().String())})
	a, err := Open(Options{ConfigPath: e.cfg, Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil)), NoContainers: true})
	if err == nil {
		a.Run(canceled())
		t.Fatal("Open accepted a metrics_listen address in use")
	}
	if want := "metrics_listen " + ln.Addr().String(); !strings.Contains(err.Error(), want) || !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("Open: %v; want an EADDRINUSE naming %q", err, want)
	}
	// What the refused Open had opened is closed: the store's lock too.
	if err := os.WriteFile(e.cfg, bytes.Replace(mustRead(t, e.cfg), []byte("metrics_listen"), []byte("# metrics_listen"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err = Open(Options{ConfigPath: e.cfg, Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil)), NoContainers: true})
	if err != nil {
		t.Fatalf("Open after the refused one: %v", err)
	}
	if err := a.Run(canceled()); err != nil {
		t.Errorf("Run: %v", err)
	}
}

func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

func mustRead(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pressureFile is a fake /proc/pressure/memory, replaced whole at each
// write so that a reading never sees half of one.
type pressureFile struct {
	t    *testing.T
	path string
}

func (p pressureFile) set(some, full float64) {
	p.t.Helper()
	text := fmt.Sprintf("some avg10=%.2f avg60=0.00 avg300=0.00 total=1\nfull avg10=%.2f avg60=0.00 avg300=0.00 total=1\n", some, full)
	tmp := p.path + ".tmp"
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		p.t.Fatal(err)
	}
	if err := os.Rename(tmp, p.path); err != nil {
		p.t.Fatal(err)
	}
}

// Host memory pressure from the pressure file stops the idle yieldable
// services, once when it begins, not at every reading while it lasts; once
// it has ended, pressure that begins again stops those idle by then.
func TestMemoryPressureStopsIdleServices(t *testing.T) {
	if testing.Short() {
		t.Skip("real time, real processes")
	}
	pf := pressureFile{t, filepath.Join(t.TempDir(), "memory")}
	pf.set(0, 0)
	e := newE2E(t, processGroups, nil)
	e.tune = func(o *Options) { o.PressureFile, o.SignalsEvery = pf.path, 20*time.Millisecond }
	e.ctl("big-a", "mem_gb", "0.3")
	e.ctl("big-b", "mem_gb", "0.3")
	e.start()
	ga := e.mustAcquire(AcquireRequest{Requirements: caps("cap-big-a"), Wait: 10 * time.Second})
	gb := e.mustAcquire(AcquireRequest{Requirements: caps("cap-big-b"), Wait: 10 * time.Second})
	e.release(ga) // big-a idle (idle_timeout_s 30), big-b in use

	stopped := func(name string) func() bool {
		return func() bool { return e.count(name, "stop") > 0 }
	}
	pf.set(19.9, 4.9) // under both thresholds (20, 5)
	never(t, "big-a stopped under the thresholds", time.Second, stopped("big-a"))

	pf.set(50, 0)
	e.waitFor("big-a stopped under memory pressure", func(st Status) bool { return svc(st, "big-a").State == "stopped" })
	if s := svc(e.status(), "big-b"); !s.Ready || e.count("big-b", "stop") != 0 {
		t.Fatalf("big-b, in use, stopped or not ready under pressure: %+v", s)
	}
	if n := len(e.records("host memory pressure: 1 idle yieldable service(s) stopped")); n != 1 {
		t.Errorf("%d pressure notes stopping one service, want 1", n)
	}
	// While the pressure lasts, readings give no further event: big-b,
	// idle now, stays.
	e.release(gb)
	never(t, "big-b stopped while the same pressure lasts", time.Second, stopped("big-b"))
	fams := e.metrics()
	if p, n := value(fams, "svcrun_memory_pressure"), value(fams, "svcrun_memory_pressure_events_total"); p != 1 || n != 1 {
		t.Errorf("under pressure: svcrun_memory_pressure %v, events %v; want 1, 1", p, n)
	}

	pf.set(9, 0) // under half the threshold: over
	eventually(t, "the pressure over", func() bool { return value(e.metrics(), "svcrun_memory_pressure") == 0 })
	pf.set(0, 6) // full over its threshold
	e.waitFor("big-b stopped when the pressure began again", func(st Status) bool { return svc(st, "big-b").State == "stopped" })
	if n := value(e.metrics(), "svcrun_memory_pressure_events_total"); n != 2 {
		t.Errorf("%v pressure events, want 2", n)
	}
}

// A jump of the wall clock against the monotonic clock runs the probes
// again; a drift under ClockJump does not.
func TestClockJumpRunsProbes(t *testing.T) {
	if testing.Short() {
		t.Skip("real time, real processes")
	}
	var offset atomic.Int64
	e := newE2E(t, processGroups, nil)
	e.tune = func(o *Options) {
		o.SignalsEvery = 20 * time.Millisecond
		o.WallClock = func() time.Time { return time.Now().Add(time.Duration(offset.Load())).Round(0) }
	}
	e.start()
	e.waitFor("the probe's first run", func(st Status) bool { return probeOf(st, "e2e-probe").Reported })
	runs := func() int { return e.count("e2e-probe", "fingerprint") }
	if n := runs(); n != 1 {
		t.Fatalf("probe ran %d times at load, want 1", n)
	}

	offset.Store(int64(ClockJump / 2))
	// The doctor debounce is 1 s: a probe run asked for would come within
	// this wait.
	never(t, "the probe ran again after a drift under ClockJump", 2*time.Second, func() bool { return runs() > 1 })

	offset.Add(int64(time.Hour))
	eventually(t, "the probe run again after the wall clock jumped", func() bool { return runs() == 2 })
	if len(e.records("the wall clock jumped 1h0m0s: probes run again")) != 1 {
		t.Errorf("no doctor note for the jump")
	}
	never(t, "the probe ran more than once for one jump", 2*time.Second, func() bool { return runs() > 2 })
	if n := value(e.metrics(), "svcrun_clock_jumps_total"); n != 1 {
		t.Errorf("svcrun_clock_jumps_total %v, want 1", n)
	}
}
