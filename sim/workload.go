package sim

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/fakes"
	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/protocol"
)

// Workload is a generated node and job stream for benchmarks: Services
// on_demand services in modules of 50, each used by jobs that arrive at
// random (from Seed) about every JobEvery and hold a lease for about
// JobLength, over Duration.
type Workload struct {
	Seed      uint64
	Services  int
	Duration  time.Duration
	JobEvery  time.Duration
	JobLength time.Duration
}

// DefaultWorkload is the benchmark of the engine issue: 10,000 services over
// 7 simulated days.
var DefaultWorkload = Workload{Seed: 1, Services: 10000, Duration: 7 * 24 * time.Hour,
	JobEvery: 6 * time.Hour, JobLength: 20 * time.Minute}

// WorkloadResult is what a run did.
type WorkloadResult struct {
	Events   int // engine steps
	Admitted int
	Rejected int
	Starts   int
}

// jobArrival and jobEnd are the workload's own events; the world's Own
// turns them into Acquire and Release.
type jobArrival struct{ service int }
type jobEnd struct{ lease engine.LeaseID }

func (jobArrival) EventName() string { return "job-arrival" }
func (jobEnd) EventName() string     { return "job-end" }

// Run builds the node and runs the job stream to its end.
func (wl Workload) Run() (WorkloadResult, error) {
	rng := rand.New(rand.NewPCG(wl.Seed, wl.Seed^0x9e3779b97f4a7c15))
	var specs []engine.ModuleSpec
	behaviours := map[string]*fakes.Behaviour{}
	var names []string
	// Each service's capability and its arrival event, made once: a job
	// only reads them.
	var caps [][]string
	var arrivals []engine.Event
	// The services behave alike: one behaviour, which the fake executor
	// only reads, keeps the scripts of every op in the cache, where 10,000
	// copies of it did not.
	behaviour := &fakes.Behaviour{
		ReadyAfterPolls: 1,
		Ops:             map[protocol.Op]fakes.OpScript{protocol.OpStart: {Duration: 2 * time.Second}},
	}
	for i := 0; i < wl.Services; i += 50 {
		m := &manifest.Module{Name: fmt.Sprintf("mod%04d", i/50), Version: "1"}
		for j := i; j < min(i+50, wl.Services); j++ {
			s := manifest.Service{
				Module: m.Name, Name: fmt.Sprintf("svc%05d", j), Exec: []string{"bin/svc"},
				Lifecycle: manifest.OnDemand, IdleTimeout: 10 * time.Minute, StartTimeout: 2 * time.Minute,
				Capabilities: []string{fmt.Sprintf("cap%05d", j)},
				Restart: manifest.Restart{BackoffInitial: time.Second, BackoffMax: 5 * time.Minute, MaxFailures: 5,
					ResetAfter: 10 * time.Minute},
			}
			m.Services = append(m.Services, s)
			behaviours[s.FullName()] = behaviour
			names = append(names, s.FullName())
			caps = append(caps, s.Capabilities)
			arrivals = append(arrivals, jobArrival{service: j})
		}
		specs = append(specs, engine.ModuleSpec{Module: m, Enabled: true})
	}
	cfg := engine.Config{
		NodeID: "bench", Platform: "linux", MemoryBudgetGB: 64, MaxConcurrentOps: 64,
		StatusPeriod: time.Minute, FingerprintPeriod: 10 * time.Minute, ReapPeriod: time.Hour,
	}
	w := New(cfg, specs, behaviours)
	var res WorkloadResult
	// The count needs no event: the driver's trace is enough.
	w.Driver.Trace = func(_ time.Time, _ engine.Event, effects []engine.Effect) {
		res.Events++
		for _, f := range effects {
			switch f := f.(type) {
			case engine.Admitted:
				res.Admitted++
			case engine.Rejected:
				res.Rejected++
			case *engine.RunOp:
				if f.Op == protocol.OpStart {
					res.Starts++
				}
			}
		}
	}
	jitter := func(d time.Duration) time.Duration {
		return time.Duration(rng.ExpFloat64() * float64(d))
	}
	for i := range names {
		w.Sched.At(w.Now().Add(jitter(wl.JobEvery)), arrivals[i])
	}
	next := 0
	w.Own = func(ev engine.Event) bool {
		switch ev := ev.(type) {
		case jobArrival:
			next++
			id := engine.LeaseID("job" + strconv.Itoa(next))
			w.step(engine.Acquire{Lease: id, Attempt: string(id), Wait: 5 * time.Minute,
				Requirements: engine.Requirements{Capabilities: caps[ev.service]}})
			w.Sched.At(w.Now().Add(jitter(wl.JobLength)+time.Minute), jobEnd{lease: id})
			w.Sched.At(w.Now().Add(jitter(wl.JobEvery)), arrivals[ev.service])
			return true
		case jobEnd:
			w.step(engine.Release{Lease: ev.lease})
			return true
		}
		return false
	}
	w.RunFor(wl.Duration)
	return res, w.Err()
}
