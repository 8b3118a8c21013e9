//go:build linux

package agent

// Scale: svcrun with 1,000 on_demand services (never started: no lease
// needs them) and 1,000 probes (period 300 s), all tiny sh scripts, in one
// generated module. After every service was fingerprinted and every probe
// reported once, svcrun is measured while idle:
//
//   - RSS: VmRSS of /proc/self/status. The agent runs inside the test
//     process, so this is the test binary's RSS (Go runtime, testing
//     package and all) with the agent in it: an upper bound for svcrun's.
//   - CPU: getrusage(RUSAGE_SELF) user+system over the window, divided by
//     its wall time. RUSAGE_SELF is every thread of this process and none
//     of its children, so the op processes are not counted (they ran
//     before the window anyway).
//   - Memory per entity: Go heap (runtime.MemStats.HeapAlloc after a GC)
//     after boot minus before Open, divided by 2,000 (services + probes):
//     the whole agent (engine, executor targets with their environments,
//     manifests, store, journal buffers). The engine alone is measured too:
//     a engine.Engine booted with the same modules, its heap growth / 2,000.
//
// Design targets: engine <= 10 KiB per service, idle CPU <= 1%.
//
//	SVCRUN_SCALE=1 go test ./agent -run TestScale1000 -count=1 -v
//	go test ./agent -run '^$' -bench Scale1000 -benchtime 1x

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/nodeconfig"
)

const scaleN = 1000

type scaleResult struct {
	Boot              time.Duration // Run to every fingerprint and probe reported
	RSSKiB            int64         // VmRSS at the end of the idle window
	HWMKiB            int64         // VmHWM: peak RSS, boot included
	IdleCPU           time.Duration // user+system over the idle window
	IdleWall          time.Duration
	IdleSteps         uint64  // engine steps during the idle window
	AgentBytesPerUnit float64 // agent heap growth / (services + probes)
	EngineBytesPerSvc float64 // engine-only heap growth / (services + probes)
	Containers        string  // how services are contained (Status.Containers)
}

func (r scaleResult) cpuPercent() float64 { return 100 * float64(r.IdleCPU) / float64(r.IdleWall) }

func TestScale1000(t *testing.T) {
	if os.Getenv("SVCRUN_SCALE") != "1" {
		t.Skip("set SVCRUN_SCALE=1 to run (about 30 s)")
	}
	r := runScale(t, 10*time.Second)
	t.Logf("containers: %s", r.Containers)
	t.Logf("boot (2000 fingerprints): %v", r.Boot.Round(time.Millisecond))
	t.Logf("idle %v: CPU %v = %.3f%% (target <= 1%%), %d engine steps",
		r.IdleWall.Round(time.Millisecond), r.IdleCPU, r.cpuPercent(), r.IdleSteps)
	t.Logf("RSS of the test process: %d KiB (peak %d KiB)", r.RSSKiB, r.HWMKiB)
	t.Logf("heap per service or probe: agent %.0f B, engine %.0f B (target <= 10240 B)",
		r.AgentBytesPerUnit, r.EngineBytesPerSvc)
	if r.EngineBytesPerSvc > 10<<10 {
		t.Errorf("engine: %.0f B per service, over the 10 KiB target", r.EngineBytesPerSvc)
	}
	if r.cpuPercent() > 1 {
		t.Errorf("idle CPU %.3f%%, over the 1%% target", r.cpuPercent())
	}
}

func BenchmarkScale1000(b *testing.B) {
	var r scaleResult
	for range b.N {
		r = runScale(b, 10*time.Second)
	}
	b.ReportMetric(r.Boot.Seconds(), "boot-s")
	b.ReportMetric(r.cpuPercent(), "idle-cpu-%")
	b.ReportMetric(float64(r.RSSKiB), "rss-KiB")
	b.ReportMetric(r.AgentBytesPerUnit, "agent-B/svc")
	b.ReportMetric(r.EngineBytesPerSvc, "engine-B/svc")
	b.Logf("boot %v, idle CPU %v over %v (%.3f%%), RSS %d KiB (peak %d), agent %.0f B and "+
		"engine %.0f B per service or probe",
		r.Boot.Round(time.Millisecond), r.IdleCPU, r.IdleWall.Round(time.Millisecond), r.cpuPercent(),
		r.RSSKiB, r.HWMKiB, r.AgentBytesPerUnit, r.EngineBytesPerSvc)
}

// writeScaleBundle generates the module: a script per service and probe.
func writeScaleBundle(tb testing.TB, dir string) {
	tb.Helper()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		tb.Fatal(err)
	}
	svc := "#!/bin/sh\ncase $1 in\nfingerprint) echo '{\"healthy\":true,\"running\":false}' ;;\n" +
		"status|ready) echo '{\"running\":false,\"ready\":false}' ;;\nlist_owned) echo '{\"objects\":[]}' ;;\n" +
		"*) echo '{\"ok\":true}' ;;\nesac\n"
	probe := "#!/bin/sh\necho '{\"healthy\":true}'\n"
	var m strings.Builder
	m.WriteString("[module]\nname = \"scale\"\nversion = \"0.1.0\"\n")
	for i := range scaleN {
		name := fmt.Sprintf("s%04d", i)
		if err := os.WriteFile(filepath.Join(bin, name), []byte(svc), 0o755); err != nil {
			tb.Fatal(err)
		}
		fmt.Fprintf(&m, "\n[[services]]\nname = %q\nexec = [\"bin/%s\"]\ncapabilities = [\"cap-%s\"]\n", name, name, name)
	}
	for i := range scaleN {
		name := fmt.Sprintf("p%04d", i)
		if err := os.WriteFile(filepath.Join(bin, name), []byte(probe), 0o755); err != nil {
			tb.Fatal(err)
		}
		fmt.Fprintf(&m, "\n[[probes]]\nname = %q\nexec = [\"bin/%s\"]\nperiod_s = 300\n", name, name)
	}
	if err := os.WriteFile(filepath.Join(dir, "module.toml"), []byte(m.String()), 0o644); err != nil {
		tb.Fatal(err)
	}
}

func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func procStatusKiB(field string) int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

func cpuSelf(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func runScale(tb testing.TB, idle time.Duration) scaleResult {
	defer TuneGC()() // as svcrun serve runs
	tb.Helper()
	dir := tb.TempDir()
	bundle := filepath.Join(dir, "bundle")
	writeScaleBundle(tb, bundle)
	cfg := filepath.Join(dir, "svcrun.toml")
	text := fmt.Sprintf("node_id = \"scale-%d-%d\"\ndata_dir = \"data\"\nmemory_budget_gb = "+
		"1\nsandbox = \"best_effort\"\n"+
		"max_concurrent_ops = 16\nreap_period_s = 300\n\n[[modules]]\nbundle = %q\n", os.Getpid(), e2eSeq.Add(1), bundle)
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		tb.Fatal(err)
	}
	var r scaleResult

	// The engine alone: booted with the same modules, loaded beforehand.
	{
		c, err := nodeconfig.Load(cfg)
		if err != nil {
			tb.Fatal(err)
		}
		mods, err := nodeconfig.LoadModules(c)
		if err != nil {
			tb.Fatal(err)
		}
		before := heapAlloc()
		eng := engine.New()
		eng.Step(time.Now(), engine.Boot{Config: engineConfig(c), Modules: moduleSpecs(mods)})
		after := heapAlloc()
		if st := eng.Status(); len(st.Services) != scaleN || len(st.Probes) != scaleN {
			tb.Fatalf("engine: %d services, %d probes", len(st.Services), len(st.Probes))
		}
		runtime.KeepAlive(eng)
		r.EngineBytesPerSvc = float64(after-before) / (2 * scaleN)
	}

	before := heapAlloc()
	a, err := Open(Options{PressureFile: noPressure, ConfigPath: cfg,
		Logger: slog.New(slog.DiscardHandler), StopServicesOnExit: true})
	if err != nil {
		tb.Fatal(err)
	}
	if a.containers != nil && a.containers.Base() != "" {
		// Runs after the deferred stop below: svcrun leaves its 1,000
		// containers for the next start to adopt.
		base := a.containers.Base()
		defer removeCgroupTree(tb, base)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	t0 := time.Now()
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				tb.Errorf("Run: %v", err)
			}
		case <-time.After(60 * time.Second):
			tb.Error("Run did not return")
		}
	}()
	status := func() Status {
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		st, err := a.Status(sctx)
		if err != nil {
			tb.Fatal(err)
		}
		return st
	}
	deadline := time.Now().Add(3 * time.Minute)
	var st Status
	for {
		st = status()
		pending := 0
		for _, s := range st.Services {
			if s.State == "unknown" {
				pending++
			}
		}
		for _, p := range st.Probes {
			if !p.Reported || !p.Healthy {
				pending++
			}
		}
		if len(st.Services) == scaleN && len(st.Probes) == scaleN && pending == 0 && st.OpsInFlight == 0 {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("boot not done within 3 min: %d pending, %d ops in flight", pending, st.OpsInFlight)
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.Boot = time.Since(t0)
	r.AgentBytesPerUnit = float64(int64(heapAlloc())-int64(before)) / (2 * scaleN)

	// The idle window: nothing is due (services stopped, probes every
	// 300 s, reaping every 300 s).
	steps0, cpu0, w0 := st.Steps, cpuSelf(tb), time.Now()
	time.Sleep(idle)
	r.IdleCPU, r.IdleWall = cpuSelf(tb)-cpu0, time.Since(w0)
	r.IdleSteps = status().Steps - steps0
	r.RSSKiB, r.HWMKiB = procStatusKiB("VmRSS"), procStatusKiB("VmHWM")
	r.Containers = st.Containers
	return r
}
