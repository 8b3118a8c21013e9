//go:build linux

package agent

// The node's signals in a real agent (the e2e harness of e2e_test.go,
// process groups only: neither depends on how services are contained).

import (
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

var processGroups = e2eMode{noContainers: true}

// pressureFile is a fake /proc/pressure/memory, replaced whole at each
// write so that a reading never sees half of one.
type pressureFile struct {
	t    *testing.T
	path string
}

func (p pressureFile) set(some, full float64) {
	p.t.Helper()
	text := fmt.Sprintf("some avg10=%.2f avg60=0.00 avg300=0.00 total=1\nfull avg10=%.2f avg60=0.00 avg300=0.00 total=1\n",
		some, full)
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
	p, n := value(fams, "svcrun_memory_pressure"), value(fams, "svcrun_memory_pressure_events_total")
	if p != 1 || n != 1 {
		t.Errorf("under pressure: svcrun_memory_pressure %v, events %v; want 1, 1", p, n)
	}

	pf.set(9, 0) // under half the threshold: over
	eventually(t, "the pressure over", func() bool { return value(e.metrics(), "svcrun_memory_pressure") == 0 })
	pf.set(0, 6) // full over its threshold
	e.waitFor("big-b stopped when the pressure began again", func(st Status) bool {
		return svc(st, "big-b").State == "stopped"
	})
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
