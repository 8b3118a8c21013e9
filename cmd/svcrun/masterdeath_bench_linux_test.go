//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkCrashToRunning times, side by side on one real svcrun, from the
// SIGKILL of a daemon to its service's new daemon running (its pid file
// naming a new living process), each crash a first failure restarted at
// once (backoff 0, failures forgotten after 0.1 s ready):
//
//   - single: a single-process daemon, whose death empties its container;
//   - master: the master of a master and two workers (as nginx), killed
//     alone, its workers living on: svcrun's child killed by a signal,
//     so its container is killed and the service started again.
//
// The two alternate, one crash each per round, so that the machine's load
// weighs on both alike. Status and fingerprints are an hour apart: no poll
// explains a restart. With CRASHBENCH_BEFORE set to another svcrun binary
// (an earlier commit's), a second node runs it and its crashes alternate
// with this one's, reported as before-*:
//
//	go test ./cmd/svcrun -run '^$' -bench CrashToRunning -benchtime 20x
func BenchmarkCrashToRunning(b *testing.B) {
	type series struct {
		name           string
		crash          func(svc string) time.Duration
		single, master []time.Duration
	}
	var all []*series
	if before := os.Getenv("CRASHBENCH_BEFORE"); before != "" {
		all = append(all, &series{name: "before-", crash: crashNode(b, "cbb", before)})
	}
	all = append(all, &series{crash: crashNode(b, "cb", "")})
	b.ResetTimer()
	for range b.N {
		for _, s := range all {
			s.single = append(s.single, s.crash("one"))
			s.master = append(s.master, s.crash("web"))
		}
	}
	b.StopTimer()
	p := func(ds []time.Duration, q float64) float64 {
		s := slices.Sorted(slices.Values(ds))
		return float64(s[int(q*float64(len(s)-1))].Microseconds()) / 1000
	}
	for _, s := range all {
		b.ReportMetric(p(s.single, 0.5), s.name+"single-p50-ms")
		b.ReportMetric(p(s.single, 0.9), s.name+"single-p90-ms")
		b.ReportMetric(p(s.master, 0.5), s.name+"master-p50-ms")
		b.ReportMetric(p(s.master, 0.9), s.name+"master-p90-ms")
		b.ReportMetric(p(s.master, 0.5)/p(s.single, 0.5), s.name+"master/single-p50")
	}
}

// crashNode starts a node of the crash benchmark's module with the svcrun
// binary bin ("": this tree's) and returns its crash: it kills the daemon
// named by a service's pid file and times until the file names another
// living one.
func crashNode(b *testing.B, name, bin string) func(svc string) time.Duration {
	n := newRestartNode(b, name)
	if bin != "" {
		n.bin = bin
	}
	bundle, _ := filepath.Abs("testdata/crash-bench")
	text := fmt.Sprintf(
		"node_id = %q\ndata_dir = \"data\"\nsocket = %q\nmemory_budget_gb = 1\nsandbox = \"best_effort\"\n"+
			"status_period_s = 3600\nwatched_status_period_s = 3600\nfingerprint_period_s = 3600\n\n[[modules]]\n"+
			"bundle = %q\n", n.node, n.sock, bundle)
	if err := os.WriteFile(n.cfg, []byte(text), 0o644); err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(n.dir, "data", "modules", "crashbench")
	b.Cleanup(func() {
		for _, s := range []string{"one", "web"} {
			if p := pidIn(filepath.Join(dir, s+".pid")); p > 0 {
				syscall.Kill(p, syscall.SIGKILL)
			}
		}
	})
	n.start()
	for _, s := range []string{"crashbench/one", "crashbench/web"} {
		waitUntil(b, s+" ready", func() bool {
			st, ok := n.serviceStatus(s)
			return ok && st.State == "ready"
		})
		if st, _ := n.serviceStatus(s); st.Container != "cgroup" {
			b.Skipf("%s runs in %q: the benchmark needs cgroup containers", s, st.Container)
		}
	}
	return func(svc string) time.Duration {
		file := filepath.Join(dir, svc+".pid")
		old := livePid(b, file)
		// At rest, its failures forgotten (reset_after_s), so that each
		// crash is a first failure, restarted at once; web's workers
		// there, and so its master watched.
		waitUntil(b, svc+" at rest", func() bool {
			st, ok := n.serviceStatus("crashbench/" + svc)
			return ok && st.State == "ready" && st.Failures == 0 &&
				(svc != "web" || len(strings.Fields(containerProcs(b, n.node, "crashbench", "web"))) >= 3)
		})
		t0 := time.Now()
		syscall.Kill(old, syscall.SIGKILL)
		for {
			if p := pidIn(file); p > 0 && p != old && alive(p) {
				return time.Since(t0)
			}
			if time.Since(t0) > time.Minute {
				b.Fatalf("%s not running again within a minute", svc)
			}
			time.Sleep(200 * time.Microsecond) // polling another process's file
		}
	}
}
