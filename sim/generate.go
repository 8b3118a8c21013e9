package sim

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/fakes"
	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/protocol"
)

// drawer picks an integer in [lo, hi]; name labels the choice. Property tests
// draw with rapid (which shrinks), svcsim explore with a seeded PRNG.
type drawer func(name string, lo, hi int) int

// seededDraw draws from a PCG generator seeded with seed.
func seededDraw(seed uint64) drawer {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return func(_ string, lo, hi int) int { return lo + rng.IntN(hi-lo+1) }
}

func pick[T any](draw drawer, name string, list []T) T { return list[draw(name, 0, len(list)-1)] }

func seconds(draw drawer, name string, lo, hi int) time.Duration {
	return time.Duration(draw(name, lo, hi)) * time.Second
}

// genNode draws a node: one to four services in one or two modules, their
// manifests and their fake behaviours (failing starts, crashes, stops that
// need a kill, pools, memory), and a probe.
func genNode(draw drawer, node string) (engine.Config, []engine.ModuleSpec, map[string]*fakes.Behaviour) {
	cfg := engine.Config{
		NodeID: node, Platform: "linux",
		MemoryBudgetGB:    float64(draw("budget_gb", 2, 6)),
		MaxConcurrentOps:  draw("max_ops", 1, 6),
		StatusPeriod:      seconds(draw, "status_s", 5, 30),
		FingerprintPeriod: seconds(draw, "fingerprint_s", 20, 120),
		ReapPeriod:        seconds(draw, "reap_s", 20, 120),
	}
	behaviours := map[string]*fakes.Behaviour{}
	mods := []*manifest.Module{{Name: "m0", Version: "1"}, {Name: "m1", Version: "1"}}
	n := draw("services", 1, 4)
	outcomes := []fakes.Outcome{fakes.OK, fakes.OK, fakes.Fail, fakes.Timeout, fakes.Protocol}
	for i := 0; i < n; i++ {
		m := mods[draw("module", 0, 1)]
		initial := seconds(draw, "backoff_initial_s", 1, 5)
		s := manifest.Service{
			Module: m.Name, Name: fmt.Sprintf("s%d", i), Exec: []string{"bin/s"},
			Lifecycle:          pick(draw, "lifecycle", []manifest.Lifecycle{manifest.OnDemand, manifest.OnDemand, manifest.OnDemand, manifest.Always, manifest.Manual}),
			IdleTimeout:        seconds(draw, "idle_s", 5, 90),
			StartTimeout:       seconds(draw, "start_timeout_s", 5, 30),
			Pools:              []string{fmt.Sprintf("p%d", i)},
			Capabilities:       []string{fmt.Sprintf("c%d", i)},
			ReservesHostMemory: draw("reserves", 0, 1) == 1,
			Yieldable:          draw("yieldable", 0, 1) == 1,
			FreezeOK:           draw("freeze_ok", 0, 1) == 1,
			Restart: manifest.Restart{
				BackoffInitial: initial,
				BackoffMax:     initial * time.Duration(draw("backoff_factor", 1, 16)),
				MaxFailures:    draw("max_failures", 1, 4),
				ResetAfter:     seconds(draw, "reset_after_s", 10, 300),
			},
		}
		m.Services = append(m.Services, s)
		var starts []fakes.Outcome
		for j, k := 0, draw("start_outcomes", 0, 4); j < k; j++ {
			starts = append(starts, pick(draw, "start_outcome", outcomes))
		}
		b := &fakes.Behaviour{
			ReadyAfterPolls: draw("ready_after_polls", 0, 3),
			Pools:           map[string]int64{s.Pools[0]: int64(draw("capacity", 0, 3))},
			MemGB:           float64(draw("mem_half_gb", 1, 4)) / 2,
			StopIgnored:     draw("stop_ignored", 0, 9) == 0,
			Running:         s.Lifecycle == manifest.Manual && draw("manual_running", 0, 1) == 1,
			Ops: map[protocol.Op]fakes.OpScript{
				protocol.OpStart: {Duration: seconds(draw, "start_s", 0, 3), Outcomes: starts},
			},
		}
		if draw("crashes", 0, 3) == 0 {
			b.CrashAfter = seconds(draw, "crash_after_s", 10, 200)
		}
		behaviours[s.FullName()] = b
	}
	mods[0].Probes = []manifest.Probe{{Module: "m0", Name: "cap-probe", Exec: []string{"bin/p"}, Period: time.Minute}}
	var specs []engine.ModuleSpec
	for _, m := range mods {
		specs = append(specs, engine.ModuleSpec{Module: m, Enabled: true})
	}
	return cfg, specs, behaviours
}

// actor applies random inputs to a world and writes each one down as a
// timeline line, so that a failing history can be replayed.
type actor struct {
	W        *World
	Node     string
	Services []string
	Leases   []engine.LeaseID
	Inputs   []string // "at <offset> <input>" lines
	next     int
	objects  int
}

// actionKinds are the kinds of input an actor knows.
var actionKinds = []string{"acquire", "release", "renew", "time passes", "crash", "agent restart", "object", "reap now", "memory pressure", "doctor", "reset"}

func (a *actor) record(format string, args ...any) {
	a.Inputs = append(a.Inputs, fmt.Sprintf("at %s %s", fmtOffset(a.W.Now().Sub(Epoch)), fmt.Sprintf(format, args...)))
}

func fmtOffset(d time.Duration) string {
	return strings.TrimSuffix(strings.TrimSuffix(fmt.Sprintf("%.3f", d.Seconds()), "0"), "0") + "s"
}

// Act applies one input of kind; it reports false when the kind does not
// apply now (nothing to release).
func (a *actor) Act(kind string, draw drawer) bool {
	w := a.W
	switch kind {
	case "acquire":
		a.next++
		id := engine.LeaseID(fmt.Sprintf("l%d", a.next))
		i := draw("service", 0, len(a.Services)-1)
		req := engine.Requirements{}
		arg := ""
		switch draw("kind", 0, 3) {
		case 0:
			req.Capabilities = []string{fmt.Sprintf("c%d", i)}
			arg = fmt.Sprintf("cap=c%d", i)
		case 1:
			n := int64(draw("tokens", 1, 2))
			req.Pools = map[string]int64{fmt.Sprintf("p%d", i): n}
			arg = fmt.Sprintf("pool=p%d:%d", i, n)
		case 2:
			req.NeedsPools = []string{fmt.Sprintf("p%d", i)}
			arg = fmt.Sprintf("needs=p%d", i)
		case 3:
			req.Capabilities = []string{"cap-probe", fmt.Sprintf("c%d", i)}
			arg = fmt.Sprintf("cap=cap-probe,c%d", i)
		}
		attempt := fmt.Sprintf("a%d", draw("attempt", 1, 6))
		wait := seconds(draw, "wait_s", 0, 120)
		ttl := time.Duration(pick(draw, "ttl_s", []int{0, 0, 30, 90})) * time.Second
		a.record("acquire %s attempt=%s %s wait=%s ttl=%s", id, attempt, arg, wait, ttl)
		w.Do(engine.Acquire{Lease: id, Attempt: attempt, Requirements: req, Wait: wait, TTL: ttl})
		a.Leases = append(a.Leases, id)
	case "release", "renew":
		if len(a.Leases) == 0 {
			return false
		}
		i := draw("lease", 0, len(a.Leases)-1)
		id := a.Leases[i]
		a.record("%s %s", kind, id)
		if kind == "release" {
			w.Do(engine.Release{Lease: id})
			a.Leases = append(a.Leases[:i], a.Leases[i+1:]...)
		} else {
			w.Do(engine.Renew{Lease: id})
		}
	case "time passes":
		w.RunFor(seconds(draw, "seconds", 1, 300))
	case "crash":
		name := pick(draw, "service", a.Services)
		a.record("crash %s", name)
		w.Exec.Crash(name)
		w.RunFor(0)
	case "agent restart":
		a.record("restart")
		w.Restart()
		w.RunFor(0)
	case "object":
		a.objects++
		name := pick(draw, "service", a.Services)
		labels := map[string]string{
			protocol.LabelAttemptID: fmt.Sprintf("a%d", draw("attempt", 1, 8)),
			protocol.LabelNode:      pick(draw, "node", []string{a.Node, a.Node, "other-node"}),
			protocol.LabelService:   pick(draw, "label_service", []string{name, name, "x/y"}),
		}
		if draw("unlabelled", 0, 4) == 0 {
			delete(labels, protocol.LabelNode)
		}
		o := fakes.Object{ID: fmt.Sprintf("o%d", a.objects), Labels: labels, CreatedAt: w.Now(), Stubborn: draw("stubborn", 0, 1) == 1}
		args := []string{name, "id=" + o.ID}
		for _, k := range []struct{ label, key string }{{protocol.LabelAttemptID, "attempt"}, {protocol.LabelNode, "node"}, {protocol.LabelService, "service"}} {
			if v, ok := labels[k.label]; ok {
				args = append(args, k.key+"="+v)
			}
		}
		args = append(args, "created="+fmtOffset(o.CreatedAt.Sub(Epoch)))
		if o.Stubborn {
			args = append(args, "stubborn")
		}
		a.record("object %s", strings.Join(args, " "))
		w.Exec.AddObject(name, o)
	case "reap now":
		a.record("reap")
		w.Do(engine.ReapNow{})
	case "memory pressure":
		a.record("pressure")
		w.Do(engine.MemoryPressure{})
	case "doctor":
		a.record("doctor")
		w.Do(engine.Doctor{Reason: "explore"})
	case "reset":
		name := pick(draw, "service", a.Services)
		a.record("reset %s", name)
		w.Do(engine.Reset{Service: serviceTarget(name)})
	default:
		panic("unknown action " + kind)
	}
	return true
}

// serviceTarget is the target of a service name the generator took from
// the node's modules, so it always parses.
func serviceTarget(name string) engine.Target {
	t, _ := engine.ServiceTarget(name)
	return t
}
