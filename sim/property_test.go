package sim

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/oarbank/svcrun/fakes"
	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/protocol"
	"github.com/oarbank/svcrun/runtime"
)

// TestMain raises rapid's default to 200 checks per property; pass
// -rapid.checks=N (or RAPID_CHECKS) for long runs.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.checks" })
	if !set && os.Getenv("RAPID_CHECKS") == "" {
		_ = flag.Set("rapid.checks", "200")
	}
	os.Exit(m.Run())
}

const propNode = "n1"

// genNode draws a node: one to four services in one or two modules, their
// manifests and their fake behaviours, and a probe.
func genNode(t *rapid.T) (runtime.Config, []runtime.ModuleSpec, map[string]*fakes.Behaviour) {
	cfg := runtime.Config{
		NodeID: propNode, Platform: "linux",
		MemoryBudgetGB:    float64(rapid.IntRange(2, 6).Draw(t, "budget_gb")),
		MaxConcurrentOps:  rapid.IntRange(1, 6).Draw(t, "max_ops"),
		StatusPeriod:      time.Duration(rapid.IntRange(5, 30).Draw(t, "status_s")) * time.Second,
		FingerprintPeriod: time.Duration(rapid.IntRange(20, 120).Draw(t, "fingerprint_s")) * time.Second,
		ReapPeriod:        time.Duration(rapid.IntRange(20, 120).Draw(t, "reap_s")) * time.Second,
	}
	behaviours := map[string]*fakes.Behaviour{}
	mods := []*manifest.Module{{Name: "m0", Version: "1"}, {Name: "m1", Version: "1"}}
	n := rapid.IntRange(1, 4).Draw(t, "services")
	outcomes := []fakes.Outcome{fakes.OK, fakes.OK, fakes.Fail, fakes.Timeout, fakes.Protocol}
	for i := 0; i < n; i++ {
		m := mods[rapid.IntRange(0, 1).Draw(t, "module")]
		initial := time.Duration(rapid.IntRange(1, 5).Draw(t, "backoff_initial_s")) * time.Second
		s := manifest.Service{
			Module: m.Name, Name: fmt.Sprintf("s%d", i), Exec: []string{"bin/s"},
			Lifecycle:          rapid.SampledFrom([]manifest.Lifecycle{manifest.OnDemand, manifest.OnDemand, manifest.OnDemand, manifest.Always, manifest.Manual}).Draw(t, "lifecycle"),
			IdleTimeout:        time.Duration(rapid.IntRange(5, 90).Draw(t, "idle_s")) * time.Second,
			StartTimeout:       time.Duration(rapid.IntRange(5, 30).Draw(t, "start_timeout_s")) * time.Second,
			Pools:              []string{fmt.Sprintf("p%d", i)},
			Capabilities:       []string{fmt.Sprintf("c%d", i)},
			ReservesHostMemory: rapid.Bool().Draw(t, "reserves"),
			Yieldable:          rapid.Bool().Draw(t, "yieldable"),
			FreezeOK:           rapid.Bool().Draw(t, "freeze_ok"),
			Restart: manifest.Restart{
				BackoffInitial: initial,
				BackoffMax:     initial * time.Duration(rapid.IntRange(1, 16).Draw(t, "backoff_factor")),
				MaxFailures:    rapid.IntRange(1, 4).Draw(t, "max_failures"),
				ResetAfter:     time.Duration(rapid.IntRange(10, 300).Draw(t, "reset_after_s")) * time.Second,
			},
		}
		m.Services = append(m.Services, s)
		b := &fakes.Behaviour{
			ReadyAfterPolls: rapid.IntRange(0, 3).Draw(t, "ready_after_polls"),
			Pools:           map[string]int64{s.Pools[0]: int64(rapid.IntRange(0, 3).Draw(t, "capacity"))},
			MemGB:           float64(rapid.IntRange(1, 4).Draw(t, "mem_half_gb")) / 2,
			StopIgnored:     rapid.IntRange(0, 9).Draw(t, "stop_ignored") == 0,
			Running:         s.Lifecycle == manifest.Manual && rapid.Bool().Draw(t, "manual_running"),
			Ops: map[protocol.Op]fakes.OpScript{
				protocol.OpStart: {
					Duration: time.Duration(rapid.IntRange(0, 3).Draw(t, "start_s")) * time.Second,
					Outcomes: rapid.SliceOfN(rapid.SampledFrom(outcomes), 0, 4).Draw(t, "start_outcomes"),
				},
			},
		}
		if rapid.IntRange(0, 3).Draw(t, "crashes") == 0 {
			b.CrashAfter = time.Duration(rapid.IntRange(10, 200).Draw(t, "crash_after_s")) * time.Second
		}
		behaviours[s.FullName()] = b
	}
	mods[0].Probes = []manifest.Probe{{Module: "m0", Name: "cap-probe", Exec: []string{"bin/p"}, Period: time.Minute}}
	var specs []runtime.ModuleSpec
	for _, m := range mods {
		specs = append(specs, runtime.ModuleSpec{Module: m, Enabled: true})
	}
	return cfg, specs, behaviours
}

// TestProperties drives random histories through the simulated world and
// checks every invariant after every step.
func TestProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg, mods, behaviours := genNode(t)
		w := New(cfg, mods, behaviours)
		c := WatchInvariants(w, mods, propNode)
		names := c.ServiceNames()
		w.RunFor(0)
		var leases []runtime.LeaseID
		next := 0
		objects := 0
		t.Repeat(map[string]func(*rapid.T){
			"acquire": func(t *rapid.T) {
				next++
				id := runtime.LeaseID(fmt.Sprintf("l%d", next))
				i := rapid.IntRange(0, len(names)-1).Draw(t, "service")
				req := runtime.Requirements{}
				switch rapid.IntRange(0, 3).Draw(t, "kind") {
				case 0:
					req.Capabilities = []string{fmt.Sprintf("c%d", i)}
				case 1:
					req.Pools = map[string]int64{fmt.Sprintf("p%d", i): int64(rapid.IntRange(1, 2).Draw(t, "tokens"))}
				case 2:
					req.NeedsPools = []string{fmt.Sprintf("p%d", i)}
				case 3:
					req.Capabilities = []string{"cap-probe", fmt.Sprintf("c%d", i)}
				}
				w.Do(runtime.Acquire{
					Lease: id, Attempt: fmt.Sprintf("a%d", rapid.IntRange(1, 6).Draw(t, "attempt")), Requirements: req,
					Wait: time.Duration(rapid.IntRange(0, 120).Draw(t, "wait_s")) * time.Second,
					TTL:  time.Duration(rapid.SampledFrom([]int{0, 0, 30, 90}).Draw(t, "ttl_s")) * time.Second,
				})
				leases = append(leases, id)
			},
			"release": func(t *rapid.T) {
				if len(leases) == 0 {
					t.Skip("no lease")
				}
				i := rapid.IntRange(0, len(leases)-1).Draw(t, "lease")
				w.Do(runtime.Release{Lease: leases[i]})
				leases = append(leases[:i], leases[i+1:]...)
			},
			"renew": func(t *rapid.T) {
				if len(leases) == 0 {
					t.Skip("no lease")
				}
				w.Do(runtime.Renew{Lease: leases[rapid.IntRange(0, len(leases)-1).Draw(t, "lease")]})
			},
			"time passes": func(t *rapid.T) {
				w.RunFor(time.Duration(rapid.IntRange(1, 300).Draw(t, "seconds")) * time.Second)
			},
			"crash": func(t *rapid.T) {
				w.Exec.Crash(rapid.SampledFrom(names).Draw(t, "service"))
				w.RunFor(0)
			},
			"agent restart": func(t *rapid.T) {
				before := admittedLeases(w)
				w.Restart()
				w.RunFor(0)
				if after := admittedLeases(w); before != after {
					c.Failf("leases before the restart %s, after %s", before, after)
				}
			},
			"object": func(t *rapid.T) {
				objects++
				name := rapid.SampledFrom(names).Draw(t, "service")
				labels := map[string]string{
					protocol.LabelAttemptID: fmt.Sprintf("a%d", rapid.IntRange(1, 8).Draw(t, "attempt")),
					protocol.LabelNode:      rapid.SampledFrom([]string{propNode, propNode, "other-node"}).Draw(t, "node"),
					protocol.LabelService:   rapid.SampledFrom([]string{name, name, "x/y"}).Draw(t, "label_service"),
				}
				if rapid.IntRange(0, 4).Draw(t, "unlabelled") == 0 {
					delete(labels, protocol.LabelNode)
				}
				w.Exec.AddObject(name, fakes.Object{ID: fmt.Sprintf("o%d", objects), Labels: labels, CreatedAt: w.Now(), Stubborn: rapid.Bool().Draw(t, "stubborn")})
			},
			"reap now":        func(t *rapid.T) { w.Do(runtime.ReapNow{}) },
			"memory pressure": func(t *rapid.T) { w.Do(runtime.MemoryPressure{}) },
			"doctor":          func(t *rapid.T) { w.Do(runtime.Doctor{Reason: "test"}) },
			"reset":           func(t *rapid.T) { w.Do(runtime.Reset{Service: rapid.SampledFrom(names).Draw(t, "service")}) },
			"": func(t *rapid.T) {
				if err := w.Err(); err != nil {
					t.Fatal(err)
				}
			},
		})
	})
}

func admittedLeases(w *World) string {
	var ids []string
	for _, l := range w.Engine.Status().Leases {
		if l.Admitted {
			ids = append(ids, string(l.ID))
		}
	}
	return strings.Join(ids, ",")
}
