//go:build linux

package agent

// The metrics of a real agent (the e2e harness of e2e_test.go, process
// groups only: the metrics do not depend on how services are contained).

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
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

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
	a, err := Open(Options{PressureFile: noPressure, ConfigPath: e.cfg,
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil)), NoContainers: true})
	if err == nil {
		a.Run(canceled())
		t.Fatal("Open accepted a metrics_listen address in use")
	}
	if want := "metrics_listen " + ln.Addr().String(); !strings.Contains(err.Error(), want) ||
		!errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("Open: %v; want an EADDRINUSE naming %q", err, want)
	}
	// What the refused Open had opened is closed: the store's lock too.
	if err := os.WriteFile(e.cfg, bytes.Replace(mustRead(t, e.cfg), []byte("metrics_listen"),
		[]byte("# metrics_listen"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	// It stops what it started on the way out: the module's always
	// service would otherwise outlive the test.
	a, err = Open(Options{PressureFile: noPressure, ConfigPath: e.cfg,
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil)), NoContainers: true, StopServicesOnExit: true})
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

// A lease request waiting (for an unhealthy probe) shows in the waiting
// leases and in the oldest wait's age, computed at the scrape; once its
// caller gives up, it counts as withdrawn and nothing waits.
func TestLeaseWaitMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("real time, real processes")
	}
	e := newE2E(t, processGroups, nil)
	e.ctl("e2e-probe", "unhealthy", "")
	e.start()
	e.waitFor("probe reported unhealthy", func(st Status) bool {
		p := probeOf(st, "e2e-probe")
		return p.Reported && !p.Healthy
	})
	ctx, giveUp := context.WithCancel(context.Background())
	defer giveUp()
	done := make(chan error, 1)
	go func() {
		_, err := e.r.a.Acquire(ctx, AcquireRequest{Job: "waits", Requirements: caps("e2e-probe"), Wait: e2eGuard})
		done <- err
	}()
	e.waitFor("the lease waiting for the probe", func(st Status) bool { return len(st.Leases) == 1 })
	first := value(e.metrics(), "svcrun_lease_oldest_wait_seconds")
	var fams map[string]*dto.MetricFamily
	eventually(t, "the oldest wait growing between scrapes", func() bool {
		fams = e.metrics()
		return value(fams, "svcrun_lease_oldest_wait_seconds") > first
	})
	if first <= 0 || value(fams, "svcrun_leases", "state", "waiting") != 1 {
		t.Errorf("while a request waits: oldest wait %v s, then %v s; %v waiting", first,
			value(fams, "svcrun_lease_oldest_wait_seconds"), value(fams, "svcrun_leases", "state", "waiting"))
	}
	giveUp()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("acquire given up: %v", err)
	}
	// The meters count a step before its snapshot is published.
	eventually(t, "the withdrawn request counted, and nothing waiting", func() bool {
		fams = e.metrics()
		return count(fams, "svcrun_lease_wait_seconds", "outcome", "withdrawn") == 1 &&
			value(fams, "svcrun_leases", "state", "waiting") == 0
	})
	if w := value(fams, "svcrun_lease_oldest_wait_seconds"); w != 0 {
		t.Errorf("after the withdrawal: oldest wait %v s, want 0", w)
	}
	if n := count(fams, "svcrun_lease_wait_seconds", "outcome", "admitted"); n != 0 {
		t.Errorf("%d admitted waits, want 0", n)
	}
}
