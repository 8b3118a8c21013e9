package sim

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
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

// Node is a generated node: its configuration, its modules as booted, the
// next manifests of each module (for reload inputs, in turn) and the fake
// behaviours of every service and probe any of those manifests holds.
type Node struct {
	Config     engine.Config
	Modules    []engine.ModuleSpec
	Later      map[string][]*manifest.Module
	Behaviours map[string]*fakes.Behaviour
	// Days: its history spans many simulated days, uses separated by
	// idle gaps of hours (slower polls, so that a day costs little).
	Days bool
}

// shadowModule is the generated module, disabled at boot, that declares the
// capability and pool of service 0 too: enabled only while no enabled
// module declares them, it takes over what another module offered.
const shadowModule = "mx"

// genNode draws a node: one to three modules holding one to five services,
// their manifests (and up to three next versions of each: restart tables,
// memory, pools, lifecycles changing; services added, removed and back),
// their fake behaviours (failing starts, crashes, stops that need a kill,
// pools, memory), a probe, and at times a disabled module shadowing a
// capability of another.
//
// Without names kinds of input left out (see ExploreWithout); with
// "contained" in it, no daemon lives in a container that tells of it.
func genNode(draw drawer, node string, without ...string) Node {
	cgroups := !slices.Contains(without, "contained")
	cfg := engine.Config{
		NodeID: node, Platform: "linux",
		MemoryBudgetGB:    float64(draw("budget_gb", 2, 6)),
		MaxConcurrentOps:  draw("max_ops", 1, 6),
		StatusPeriod:      seconds(draw, "status_s", 5, 30),
		FingerprintPeriod: seconds(draw, "fingerprint_s", 20, 120),
		ReapPeriod:        seconds(draw, "reap_s", 20, 120),
	}
	// One node in six lives for days: its polls are those of a real
	// node's (minutes), so that its hours of idleness cost few steps.
	days := draw("days", 0, 5) == 0
	if days {
		cfg.StatusPeriod = seconds(draw, "status_s", 60, 300)
		cfg.FingerprintPeriod = seconds(draw, "fingerprint_s", 600, 3600)
		cfg.ReapPeriod = seconds(draw, "reap_s", 600, 3600)
	}
	// Sweeps within the histories, not only in the liveness phase.
	cfg.ReapSweepPeriod = 4 * cfg.ReapPeriod
	n := Node{Config: cfg, Later: map[string][]*manifest.Module{}, Behaviours: map[string]*fakes.Behaviour{}, Days: days}
	var mods []*manifest.Module
	for i, k := 0, draw("modules", 1, 3); i < k; i++ {
		mods = append(mods, &manifest.Module{Name: fmt.Sprintf("m%d", i), Version: "1"})
	}
	next := 0 // the number of the next service drawn, in any module or version
	newService := func(mod string, running bool) manifest.Service {
		i := next
		next++
		s := genService(draw, mod, i)
		n.Behaviours[s.FullName()] = genBehaviour(draw, s, running, cgroups)
		return s
	}
	for i, k := 0, draw("services", len(mods), 5); i < k; i++ {
		// The first services go one to each module: a manifest holds
		// at least one service or probe.
		m := mods[min(i, len(mods)-1)]
		if i >= len(mods) {
			m = mods[draw("module", 0, len(mods)-1)]
		}
		m.Services = append(m.Services, newService(m.Name, false))
	}
	mods[0].Probes = []manifest.Probe{{Module: "m0", Name: "cap-probe", Exec: []string{"bin/p"}, Period: time.Minute}}
	n.Behaviours["m0/cap-probe"] = &fakes.Behaviour{}
	for _, m := range mods {
		prev := m
		var gone []manifest.Service
		for v, k := 2, draw("versions", 0, 3); v < k+2; v++ {
			nm := nextVersion(draw, prev, v, &gone, &next, func() manifest.Service {
				// A service a reload adds may run already, left by an
				// earlier configuration or its owner.
				return newService(prev.Name, draw("added_running", 0, 2) == 0)
			})
			n.Later[m.Name] = append(n.Later[m.Name], nm)
			prev = nm
		}
	}
	for _, m := range mods {
		n.Modules = append(n.Modules, engine.ModuleSpec{Module: m, Enabled: true})
	}
	if draw("shadow", 0, 2) == 0 {
		s := genService(draw, shadowModule, 0)
		s.Name = "sh"
		n.Behaviours[s.FullName()] = genBehaviour(draw, s, false, cgroups)
		n.Modules = append(n.Modules,
			engine.ModuleSpec{Module: &manifest.Module{Name: shadowModule, Version: "1", Services: []manifest.Service{s}}})
	}
	return n
}

// genService draws service number i of module mod: it offers capability
// ci and pool pi.
func genService(draw drawer, mod string, i int) manifest.Service {
	return manifest.Service{
		Module: mod, Name: fmt.Sprintf("s%d", i), Exec: []string{"bin/s"},
		Lifecycle: pick(draw, "lifecycle",
			[]manifest.Lifecycle{manifest.OnDemand, manifest.OnDemand, manifest.OnDemand, manifest.Always, manifest.Manual}),
		IdleTimeout:        seconds(draw, "idle_s", 5, 90),
		StartTimeout:       seconds(draw, "start_timeout_s", 5, 30),
		Pools:              []string{fmt.Sprintf("p%d", i)},
		Capabilities:       []string{fmt.Sprintf("c%d", i)},
		ReservesHostMemory: draw("reserves", 0, 1) == 1,
		Yieldable:          draw("yieldable", 0, 1) == 1,
		FreezeOK:           draw("freeze_ok", 0, 2) > 0,
		Restart:            genRestart(draw),
	}
}

func genRestart(draw drawer) manifest.Restart {
	initial := seconds(draw, "backoff_initial_s", 1, 5)
	return manifest.Restart{
		BackoffInitial: initial,
		BackoffMax:     initial * time.Duration(draw("backoff_factor", 1, 16)),
		MaxFailures:    draw("max_failures", 1, 4),
		ResetAfter:     seconds(draw, "reset_after_s", 10, 300),
	}
}

// genBehaviour draws what the fake daemon of s does.
func genBehaviour(draw drawer, s manifest.Service, running, cgroups bool) *fakes.Behaviour {
	outcomes := []fakes.Outcome{fakes.OK, fakes.OK, fakes.Fail, fakes.Timeout, fakes.Protocol}
	var starts []fakes.Outcome
	for j, k := 0, draw("start_outcomes", 0, 4); j < k; j++ {
		starts = append(starts, pick(draw, "start_outcome", outcomes))
	}
	b := &fakes.Behaviour{
		ReadyAfterPolls: draw("ready_after_polls", 0, 3),
		// The second pool a later manifest may declare has its capacity
		// too.
		Pools: map[string]int64{s.Pools[0]: int64(draw("capacity", 0, 3)),
			s.Pools[0] + "b": int64(draw("capacity", 0, 3))},
		MemGB:       float64(draw("mem_half_gb", 1, 4)) / 2,
		StopIgnored: draw("stop_ignored", 0, 9) == 0,
		Running:     running || s.Lifecycle == manifest.Manual && draw("manual_running", 0, 1) == 1,
		Ops: map[protocol.Op]fakes.OpScript{
			protocol.OpStart: {Duration: seconds(draw, "start_s", 0, 3), Outcomes: starts},
		},
	}
	if draw("crashes", 0, 3) == 0 {
		b.CrashAfter = seconds(draw, "crash_after_s", 10, 200)
	}
	if draw("slow_status", 0, 2) == 0 {
		// Its status polls take time: with few op slots, the polls of
		// others queue behind them, and a crash may come while its own
		// status waits for a slot.
		b.Ops[protocol.OpStatus] = fakes.OpScript{Duration: seconds(draw, "status_op_s", 1, 4)}
	}
	if draw("fp_faults", 0, 3) == 0 {
		// Its first fingerprints (at boot, at an enable) fail or time out
		// before one answers, and take time: a daemon may die meanwhile.
		b.Ops[protocol.OpFingerprint] = fpScript(draw, draw("fp_bad", 1, 3))
	}
	// A cgroup tells of its processes; one may hold, at boot, a process
	// its ops do not see (a daemon whose pid file is gone).
	if cgroups {
		b.Contained = draw("contained", 0, 2) == 0
		b.Stray = b.Contained && !b.Running && draw("stray", 0, 3) == 0
	}
	return b
}

// fpScript draws a fingerprint's script: bad failures or timeouts, then
// answers; each call takes up to 3 s.
func fpScript(draw drawer, bad int) fakes.OpScript {
	sc := fakes.OpScript{Duration: seconds(draw, "fp_s", 0, 3)}
	for range bad {
		sc.Outcomes = append(sc.Outcomes,
			pick(draw, "fp_outcome", []fakes.Outcome{fakes.Fail, fakes.Timeout, fakes.Protocol}))
	}
	sc.Outcomes = append(sc.Outcomes, fakes.OK)
	return sc
}

// nextVersion draws version v of module prev: each service may change its
// restart table, memory reservation, yielding, freezing, idle timeout,
// lifecycle (to any other, manual too) or second pool, hand a capability
// or a pool to another service of the module or a probe, lose one, or
// take one another module declares (a reload the configuration refuses
// while that module declares it too), or leave the manifest; a probe
// offering a capability may go; one service that left may come back, and
// add draws a new one. numbers is how many service numbers were drawn.
func nextVersion(draw drawer, prev *manifest.Module, v int, gone *[]manifest.Service, numbers *int,
	add func() manifest.Service) *manifest.Module {
	m := &manifest.Module{Name: prev.Name, Version: fmt.Sprint(v)}
	for _, p := range prev.Probes {
		if p.Name != "cap-probe" && draw("drop_probe", 0, 2) == 0 {
			continue
		}
		m.Probes = append(m.Probes, p)
	}
	for _, s := range prev.Services {
		if draw("drop_service", 0, 5) == 0 {
			*gone = append(*gone, s)
			continue
		}
		s.Pools = slices.Clone(s.Pools)
		s.Capabilities = slices.Clone(s.Capabilities)
		m.Services = append(m.Services, s)
	}
	for i := range m.Services {
		s := &m.Services[i]
		change := draw("change", 0, 11) // 11: none
		if change == 10 {
			change = 4 // twice the odds: see case 4
		}
		switch change {
		case 0:
			s.Restart = genRestart(draw)
		case 1:
			s.ReservesHostMemory = !s.ReservesHostMemory
		case 2:
			s.Yieldable = !s.Yieldable
		case 3:
			s.FreezeOK = !s.FreezeOK
		case 4:
			// Longer or shorter, by minutes, often: the reload must come
			// while its idle timer runs to change what it counts.
			s.IdleTimeout = seconds(draw, "idle_s", 5, 600)
		case 5:
			others := slices.DeleteFunc(slices.Clone(lifecycles), func(l manifest.Lifecycle) bool { return l == s.Lifecycle })
			s.Lifecycle = pick(draw, "lifecycle", others)
		case 6:
			// A second pool, p<i>b, comes or goes.
			if len(s.Pools) > 1 {
				s.Pools = s.Pools[:1]
			} else if len(s.Pools) == 1 && !declares(m, "pool", s.Pools[0]+"b") {
				s.Pools = append(s.Pools, s.Pools[0]+"b")
			}
		case 7, 8:
			// A capability (7) or pool (8) goes to another service of the
			// module, to a probe (a capability), or nowhere.
			list := &s.Capabilities
			if draw("what", 7, 8) == 8 {
				list = &s.Pools
			}
			if len(*list) == 0 {
				break
			}
			name := (*list)[0]
			*list = (*list)[1:]
			switch to := draw("to", 0, len(m.Services)+1); {
			case to < len(m.Services) && to != i:
				o := &m.Services[to]
				if list == &s.Pools {
					o.Pools = append(o.Pools, name)
				} else {
					o.Capabilities = append(o.Capabilities, name)
				}
			case to == len(m.Services) && list == &s.Capabilities:
				m.Probes = append(m.Probes,
					manifest.Probe{Module: m.Name, Name: name, Exec: []string{"bin/p"}, Period: time.Minute})
			}
		case 9:
			// It takes the capability or pool of number k, which another
			// module may declare.
			k := draw("take", 0, *numbers-1)
			if c := fmt.Sprintf("c%d", k); draw("what", 0, 1) == 0 && !declares(m, "capability", c) {
				s.Capabilities = append(s.Capabilities, c)
			} else if p := fmt.Sprintf("p%d", k); !declares(m, "pool", p) {
				s.Pools = append(s.Pools, p)
			}
		}
	}
	if len(*gone) > 0 && draw("back_service", 0, 2) == 0 {
		back := (*gone)[0]
		*gone = (*gone)[1:]
		// What it offered may be another's now.
		back.Capabilities = slices.DeleteFunc(slices.Clone(back.Capabilities),
			func(c string) bool { return declares(m, "capability", c) })
		back.Pools = slices.DeleteFunc(slices.Clone(back.Pools), func(p string) bool { return declares(m, "pool", p) })
		m.Services = append(m.Services, back)
	}
	if draw("add_service", 0, 2) == 0 || len(m.Services)+len(m.Probes) == 0 {
		m.Services = append(m.Services, add())
	}
	return m
}

var lifecycles = []manifest.Lifecycle{manifest.OnDemand, manifest.Always, manifest.Manual}

// declares says a service or probe of m declares the capability or pool
// name (kind "capability" or "pool"): names are node-wide, one
// declaration each.
func declares(m *manifest.Module, kind, name string) bool {
	for _, s := range m.Services {
		if kind == "pool" && slices.Contains(s.Pools, name) || kind == "capability" && slices.Contains(s.Capabilities, name) {
			return true
		}
	}
	return kind == "capability" && slices.ContainsFunc(m.Probes, func(p manifest.Probe) bool { return p.Name == name })
}

// actor applies random inputs to a world and writes each one down as a
// timeline line in scenario syntax, so that a failing history can be
// replayed (svcsim explore writes them under the node, scenario.Explored).
type actor struct {
	W        *World
	Node     string
	Services []string // every service of any manifest, sorted
	Leases   []engine.LeaseID
	Inputs   []string // "at <offset> <input>" lines
	next     int
	objects  int
	numbers  int // services are s0 to s<numbers-1>, offering c<i> and p<i>

	// The module set as the configuration has it now, in the order of
	// the node's modules: a reload input sends it whole, as a scenario's
	// reload, enable, disable and remove do.
	mods             []*manifest.Module
	enabled, removed []bool
	later            [][]*manifest.Module
	reloads          []int
	days             bool // long idle gaps (Node.Days)

	// inv, when set, is told of the new manifests and of silent deaths,
	// and checks the settled node after every input.
	inv *invariants
}

// newActor returns the actor of a node booted in w; inv may be nil.
func newActor(w *World, n Node, inv *invariants) *actor {
	a := &actor{W: w, Node: n.Config.NodeID, inv: inv, days: n.Days}
	names := map[string]bool{}
	for _, ms := range n.Modules {
		a.mods = append(a.mods, ms.Module)
		a.enabled = append(a.enabled, ms.Enabled)
		a.removed = append(a.removed, false)
		a.later = append(a.later, n.Later[ms.Module.Name])
		a.reloads = append(a.reloads, 0)
		for _, m := range append([]*manifest.Module{ms.Module}, n.Later[ms.Module.Name]...) {
			for _, s := range m.Services {
				names[s.FullName()] = true
				var i int
				if _, err := fmt.Sscanf(s.Name, "s%d", &i); err == nil {
					a.numbers = max(a.numbers, i+1)
				}
			}
		}
	}
	a.Services = slices.Sorted(maps.Keys(names))
	return a
}

// moduleSet is the configuration's module set, as a Reload carries it.
func (a *actor) moduleSet() []engine.ModuleSpec {
	var out []engine.ModuleSpec
	for i, m := range a.mods {
		if !a.removed[i] {
			out = append(out, engine.ModuleSpec{Module: m, Enabled: a.enabled[i]})
		}
	}
	return out
}

// clashes says module i, enabled with manifest m, would declare a
// capability or pool that another enabled module declares: the node
// configuration refuses that, so the actor never asks for it.
func (a *actor) clashes(i int, m *manifest.Module) bool {
	for j, o := range a.mods {
		if j == i || !a.enabled[j] || a.removed[j] {
			continue
		}
		for _, s := range o.Services {
			for _, c := range s.Capabilities {
				if declares(m, "capability", c) {
					return true
				}
			}
			for _, p := range s.Pools {
				if declares(m, "pool", p) {
					return true
				}
			}
		}
		for _, p := range o.Probes {
			if declares(m, "capability", p.Name) {
				return true
			}
		}
	}
	return false
}

// actionKinds are the kinds of input an actor knows.
var actionKinds = []string{"acquire", "release", "renew", "time passes", "crash", "agent restart", "object",
	"reap now", "memory pressure", "doctor", "reset",
	"module", "silent death", "fingerprint", "probe health", "owner start", "reap burst", "reconfigured restart",
	"restart and deaths",
	"pause", "node fault", "member exit"}

func (a *actor) record(format string, args ...any) {
	a.Inputs = append(a.Inputs, fmt.Sprintf("at %s %s", fmtOffset(a.W.Now().Sub(Epoch)), fmt.Sprintf(format, args...)))
}

func fmtOffset(d time.Duration) string {
	return strings.TrimSuffix(strings.TrimSuffix(fmt.Sprintf("%.3f", d.Seconds()), "0"), "0") + "s"
}

// frozen lists the short names (s<i>) of the services whose container is
// frozen.
func (a *actor) frozen() []string {
	var out []string
	for _, n := range a.Services {
		if a.W.Exec.Frozen(n) {
			_, short, _ := strings.Cut(n, "/")
			out = append(out, short)
		}
	}
	return out
}

// victim picks a service whose daemon runs, a frozen one half of the time
// when there is one (a frozen daemon that dies is seen only once thawed);
// "" when none runs.
func (a *actor) victim(draw drawer) string {
	var running, frozen []string
	for _, n := range a.Services {
		if a.W.Exec.Running(n) {
			running = append(running, n)
			if a.W.Exec.Frozen(n) {
				frozen = append(frozen, n)
			}
		}
	}
	if len(frozen) > 0 && draw("frozen_victim", 0, 1) == 0 {
		return pick(draw, "victim", frozen)
	}
	if len(running) == 0 {
		return ""
	}
	return pick(draw, "victim", running)
}

// Act applies one input of kind, and then checks the settled node; it
// reports false when the kind does not apply now (nothing to release).
func (a *actor) Act(kind string, draw drawer) bool {
	done := a.act(kind, draw)
	if done && a.inv != nil && a.W.Err() == nil {
		a.inv.checkSettled()
	}
	return done
}

func (a *actor) act(kind string, draw drawer) bool {
	w := a.W
	switch kind {
	case "acquire":
		a.next++
		id := engine.LeaseID(fmt.Sprintf("l%d", a.next))
		i := draw("service", 0, a.numbers-1)
		if f := a.frozen(); len(f) > 0 && draw("wake_frozen", 0, 1) == 0 {
			// A lease for a frozen service thaws it: whether its daemon
			// is still there must be checked first.
			fmt.Sscanf(pick(draw, "frozen", f), "s%d", &i)
		}
		req := engine.Requirements{}
		arg := ""
		switch draw("kind", 0, 4) {
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
		case 4:
			// Two services, maybe of two modules.
			j := draw("second_service", 0, a.numbers-1)
			req.Capabilities = []string{fmt.Sprintf("c%d", i), fmt.Sprintf("c%d", j)}
			arg = fmt.Sprintf("cap=c%d,c%d", i, j)
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
		// Short steps half the time: what happens within an idle timeout
		// or a backoff (a frozen daemon dying, a lease coming back) needs
		// them. A node that lives for days idles for hours between uses.
		switch {
		case a.days && draw("gap", 0, 2) == 0:
			w.RunFor(time.Duration(draw("minutes", 60, 30*60)) * time.Minute)
		case draw("short", 0, 1) == 0:
			w.RunFor(seconds(draw, "seconds", 1, 10))
		default:
			w.RunFor(seconds(draw, "seconds", 1, 300))
		}
	case "crash":
		name := pick(draw, "service", a.Services)
		if v := a.victim(draw); v != "" && draw("crash_running", 0, 2) > 0 {
			name = v
		}
		a.record("crash %s", name)
		w.Exec.Crash(name)
		w.RunFor(0)
	case "silent death":
		name := a.victim(draw)
		if name == "" {
			return false
		}
		a.silentDeath(name)
	case "owner start":
		var manual []string
		for _, m := range a.mods {
			for _, s := range m.Services {
				if s.Lifecycle == manifest.Manual && !w.Exec.Running(s.FullName()) {
					manual = append(manual, s.FullName())
				}
			}
		}
		if len(manual) == 0 {
			return false
		}
		name := pick(draw, "manual", manual)
		a.record("owner-start %s", name)
		w.Exec.SetRunning(name, true)
		if a.inv != nil {
			a.inv.changedUnseen(name)
		}
	case "fingerprint":
		// What the daemon's next fingerprint reports changes: its memory
		// reservation, its pools' capacities and its health; or its
		// fingerprints fail or time out from now on, or answer again.
		name := pick(draw, "service", a.Services)
		b := w.Exec.Behaviour(name)
		if draw("fp_ops", 0, 2) == 0 {
			sc := fakes.OpScript{Duration: seconds(draw, "fp_s", 0, 3),
				Outcomes: []fakes.Outcome{pick(draw, "fp_outcome", []fakes.Outcome{fakes.OK, fakes.Fail, fakes.Timeout})}}
			if b.Ops == nil {
				b.Ops = map[protocol.Op]fakes.OpScript{}
			}
			b.Ops[protocol.OpFingerprint] = sc
			a.record("behaviour %s op=fingerprint duration=%v outcomes=%s", name, sc.Duration, sc.Outcomes[0])
			break
		}
		b.MemGB = float64(draw("mem_half_gb", 1, 6)) / 2
		pools := make(map[string]int64, len(b.Pools))
		var args []string
		for _, p := range slices.Sorted(maps.Keys(b.Pools)) {
			pools[p] = int64(draw("capacity", 0, 3))
			args = append(args, fmt.Sprintf("%s:%d", p, pools[p]))
		}
		b.Pools = pools
		h := draw("healthy", 0, 3) > 0
		b.Healthy = &h
		a.record("behaviour %s mem_gb=%v pools=%s healthy=%v", name, b.MemGB, strings.Join(args, ","), h)
	case "probe health":
		h := draw("probe_healthy", 0, 1) == 1
		w.Exec.Behaviour("m0/cap-probe").Healthy = &h
		a.record("behaviour m0/cap-probe healthy=%v", h)
	case "module":
		return a.changeModules(draw)
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
		o := fakes.Object{ID: fmt.Sprintf("o%d", a.objects), Labels: labels, CreatedAt: w.Now(),
			Stubborn: draw("stubborn", 0, 1) == 1}
		args := []string{name, "id=" + o.ID}
		for _, k := range []struct{ label, key string }{{protocol.LabelAttemptID, "attempt"},
			{protocol.LabelNode, "node"}, {protocol.LabelService, "service"}} {
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
	case "reap burst":
		// `svcrun reap` typed again and again, seconds apart.
		for i, k := 0, draw("reaps", 2, 6); i < k; i++ {
			if i > 0 {
				w.RunFor(seconds(draw, "reap_gap_s", 0, 2))
			}
			a.record("reap")
			w.Do(engine.ReapNow{})
		}
	case "reconfigured restart":
		return a.reconfiguredRestart(draw)
	case "restart and deaths":
		// Daemons die at boot: while their first fingerprint runs, or
		// while it is retried.
		a.record("restart")
		w.Restart()
		for i, k := 0, draw("deaths", 1, 2); i < k; i++ {
			w.RunFor(seconds(draw, "death_after_s", 0, 3))
			if name := a.victim(draw); name != "" {
				a.die(name, draw)
			}
		}
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
	case "pause":
		// svcrun stands still (SIGSTOP, a VM paused) while the world
		// goes on: renewals, op ends and deaths wait for it.
		d := seconds(draw, "pause_s", 1, 120)
		a.record("pause %v", d)
		w.Pause(d)
	case "node fault":
		// A full disk, or one freed: the ops of a service cannot be
		// prepared from now on, or can again.
		name := pick(draw, "service", a.Services)
		op := pick(draw, "fault_op",
			[]protocol.Op{protocol.OpStart, protocol.OpStop, protocol.OpFingerprint, protocol.OpStatus})
		out := pick(draw, "fault_outcome", []fakes.Outcome{fakes.Prepare, fakes.OK})
		b := w.Exec.Behaviour(name)
		if b.Ops == nil {
			b.Ops = map[protocol.Op]fakes.OpScript{}
		}
		sc := b.Ops[op]
		sc.Outcomes = []fakes.Outcome{out}
		b.Ops[op] = sc
		a.record("behaviour %s op=%s duration=%v outcomes=%s", name, op, sc.Duration, out)
	case "member exit":
		// A master dies, its workers live on: only a contained daemon's
		// container tells.
		var contained []string
		for _, n := range a.Services {
			if w.Exec.Running(n) && w.Exec.Behaviour(n).Contained {
				contained = append(contained, n)
			}
		}
		if len(contained) == 0 {
			return false
		}
		name := pick(draw, "member_victim", contained)
		// killed: the master was svcrun's child and a signal killed it.
		if killed := draw("member_killed", 0, 1) == 1; killed {
			a.record("member-exited %s killed", name)
			w.Exec.MemberExit(name, true)
		} else {
			a.record("member-exited %s", name)
			w.Exec.MemberExit(name, false)
		}
		if a.inv != nil {
			a.inv.changedUnseen(name)
		}
		w.RunFor(0)
	default:
		panic("unknown action " + kind)
	}
	return true
}

// changeModules reloads the configuration with one module changed (see
// moduleChange). It reports false when the change drawn does not apply.
func (a *actor) changeModules(draw drawer) bool {
	if a.mods[len(a.mods)-1].Name == shadowModule && draw("swap", 0, 2) == 0 {
		return a.swapShadow()
	}
	change := a.moduleChange(draw)
	if change == "" {
		return false
	}
	a.reload(change)
	return true
}

// reload sends the configuration as it is now, after change.
func (a *actor) reload(change string) {
	a.record("%s", change)
	set := a.moduleSet()
	if a.inv != nil {
		a.inv.setModules(set)
	}
	a.W.Do(engine.Reload{Modules: set})
}

// swapShadow switches the provider of what the shadow module declares, as
// an operator moving a pool to other hardware: the enabled one of m0 and
// the shadow is disabled, then the other enabled (unless its names clash
// with another enabled module's), while leases hold tokens and references
// on the first. It reports false when it changed nothing.
func (a *actor) swapShadow() bool {
	from, to := 0, len(a.mods)-1
	if a.enabled[to] && !a.removed[to] {
		from, to = to, from
	}
	did := false
	if a.enabled[from] && !a.removed[from] {
		a.enabled[from] = false
		a.reload("disable " + a.mods[from].Name)
		did = true
	}
	if a.enabled[to] && !a.removed[to] || a.clashes(to, a.mods[to]) {
		return did
	}
	a.enabled[to], a.removed[to] = true, false
	a.reload("enable " + a.mods[to].Name)
	return true
}

// moduleChange changes one module of the configuration: its next
// manifest, or enabled, disabled or removed; it returns the change as a
// scenario input, or "" when the change drawn does not apply (no manifest
// left, already so, or a clash of names the configuration would refuse).
func (a *actor) moduleChange(draw drawer) string {
	i := draw("module", 0, len(a.mods)-1)
	name := a.mods[i].Name
	switch change := pick(draw, "module_change", []string{"reload", "reload", "enable", "disable", "remove"}); change {
	case "reload":
		if a.reloads[i] >= len(a.later[i]) {
			return ""
		}
		m := a.later[i][a.reloads[i]]
		if a.enabled[i] && !a.removed[i] && a.clashes(i, m) {
			return ""
		}
		a.mods[i] = m
		a.reloads[i]++
		return "reload " + name
	case "enable", "disable":
		on := change == "enable"
		if a.enabled[i] == on && !a.removed[i] || on && a.clashes(i, a.mods[i]) {
			return ""
		}
		a.enabled[i], a.removed[i] = on, false
		return change + " " + name
	default:
		if a.removed[i] {
			return ""
		}
		a.removed[i] = true
		return "remove " + name
	}
}

// serviceTarget is the target of a service name the generator took from
// the node's modules, so it always parses.
func serviceTarget(name string) engine.Target {
	t, _ := engine.ServiceTarget(name)
	return t
}

// silentDeath kills the daemon of name unseen: its container empties
// without an event (a missed one, a process that outlives its group's
// leader), so only the next status, ready or fingerprint can tell.
func (a *actor) silentDeath(name string) {
	a.record("owner-stop %s", name)
	a.W.Exec.SetRunning(name, false)
	if a.inv != nil {
		a.inv.changedUnseen(name)
	}
}

// die kills the daemon of name, seen (a crash) or silently.
func (a *actor) die(name string, draw drawer) {
	if draw("seen", 0, 1) == 0 {
		a.silentDeath(name)
		return
	}
	a.record("crash %s", name)
	a.W.Exec.Crash(name)
	a.W.RunFor(0)
}

// reconfiguredRestart stops svcrun, changes its configuration while it
// is down (one to three module changes: next manifests, enables,
// disables, removals), lets daemons die meanwhile, and starts it again:
// the new engine boots with the stored leases and service records and a
// configuration it never saw at run time. It reports false when no
// change drawn applies.
func (a *actor) reconfiguredRestart(draw drawer) bool {
	var changes []string
	for i, k := 0, draw("down_changes", 1, 3); i < k; i++ {
		if c := a.moduleChange(draw); c != "" {
			changes = append(changes, c)
		}
	}
	if len(changes) == 0 {
		return false
	}
	a.record("down")
	for _, c := range changes {
		a.record("%s", c)
	}
	set := a.moduleSet()
	if a.inv != nil {
		a.inv.setModules(set)
	}
	a.W.Configure(set)
	for i, k := 0, draw("down_deaths", 0, 2); i < k; i++ {
		if name := a.victim(draw); name != "" {
			a.silentDeath(name)
		}
	}
	a.record("restart")
	a.W.Restart()
	a.W.RunFor(0)
	return true
}
