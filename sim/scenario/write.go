package scenario

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/fakes"
	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/protocol"
	"github.com/oarbank/svcrun/sim"
)

// Explored writes an exploration's inputs as a scenario file (without its
// expected trace): `svcsim run FILE` shows what happened. The node is
// regenerated from the seed, so the file names the seed to rebuild it.
func Explored(x sim.Exploration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# svcsim explore --seeds 1 --seed %d --steps %d\n", x.Seed, x.Steps)
	if x.Err != nil {
		fmt.Fprintf(&b, "# failed: %s\n", strings.ReplaceAll(x.Err.Error(), "\n", "\n# "))
	}
	n := x.Node()
	b.WriteString(writeScenario(n.Config, n.Modules, n.Later, n.Behaviours, x.Inputs))
	return b.String()
}

// writeScenario writes a node, its behaviours and a timeline as a scenario
// file (without an expected trace), so that a generated history can be read
// and replayed with `svcsim run`.
func writeScenario(cfg engine.Config, mods []engine.ModuleSpec, later map[string][]*manifest.Module,
	behaviours map[string]*fakes.Behaviour, inputs []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "node id=%s platform=%s budget_gb=%v max_ops=%d status=%v fingerprint=%v reap=%v",
		cfg.NodeID, cfg.Platform, cfg.MemoryBudgetGB, cfg.MaxConcurrentOps, cfg.StatusPeriod, cfg.FingerprintPeriod,
		cfg.ReapPeriod)
	if cfg.ReapSweepPeriod > 0 {
		fmt.Fprintf(&b, " reap_sweep=%v", cfg.ReapSweepPeriod)
	}
	b.WriteString("\n\n")
	for _, ms := range mods {
		if len(ms.Module.Services)+len(ms.Module.Probes) == 0 {
			continue
		}
		if ms.Enabled {
			b.WriteString("module\n")
		} else {
			b.WriteString("module disabled\n")
		}
		writeModule(&b, ms.Module)
		b.WriteString("end\n\n")
		// The manifests its reload inputs load, in turn.
		for _, m := range later[ms.Module.Name] {
			b.WriteString("module later\n")
			writeModule(&b, m)
			b.WriteString("end\n\n")
		}
	}
	names := make([]string, 0, len(behaviours))
	for n := range behaviours {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if line := behaviourArgs(behaviours[n]); line != "" {
			fmt.Fprintf(&b, "behaviour %s%s\n", n, line)
		}
		for _, op := range protocol.Ops() {
			if sc, ok := behaviours[n].Ops[op]; ok && (sc.Duration > 0 || len(sc.Outcomes) > 0) {
				fmt.Fprintf(&b, "behaviour %s op=%s duration=%v", n, op, sc.Duration)
				if len(sc.Outcomes) > 0 {
					outs := make([]string, len(sc.Outcomes))
					for i, o := range sc.Outcomes {
						outs[i] = string(o)
					}
					fmt.Fprintf(&b, " outcomes=%s", strings.Join(outs, ","))
				}
				b.WriteString("\n")
			}
		}
	}
	b.WriteString("\n")
	last := time.Duration(0)
	for _, in := range inputs {
		b.WriteString(in + "\n")
		var secs float64
		if _, err := fmt.Sscanf(in, "at %fs", &secs); err == nil {
			last = max(last, time.Duration(secs*float64(time.Second)))
		}
	}
	fmt.Fprintf(&b, "run %v\n", (last + time.Hour).Round(time.Second))
	return b.String()
}

func behaviourArgs(bh *fakes.Behaviour) string {
	var parts []string
	if bh.ReadyAfterPolls > 0 {
		parts = append(parts, fmt.Sprintf("ready_after_polls=%d", bh.ReadyAfterPolls))
	}
	if bh.ReadyAfter > 0 {
		parts = append(parts, fmt.Sprintf("ready_after=%v", bh.ReadyAfter))
	}
	if bh.CrashAfter > 0 {
		parts = append(parts, fmt.Sprintf("crash_after=%v", bh.CrashAfter))
	}
	if bh.StopIgnored {
		parts = append(parts, "stop_ignored")
	}
	if bh.Contained {
		parts = append(parts, "contained")
	}
	if bh.Running {
		parts = append(parts, "running")
	}
	if bh.Stray {
		parts = append(parts, "stray")
	}
	if bh.Healthy != nil {
		parts = append(parts, fmt.Sprintf("healthy=%v", *bh.Healthy))
	}
	if len(bh.Pools) > 0 {
		var pools []string
		for p, n := range bh.Pools {
			pools = append(pools, fmt.Sprintf("%s:%d", p, n))
		}
		sort.Strings(pools)
		parts = append(parts, "pools="+strings.Join(pools, ","))
	}
	if bh.MemGB > 0 {
		parts = append(parts, fmt.Sprintf("mem_gb=%v", bh.MemGB))
	}
	if len(parts) == 0 {
		return ""
	}
	return " " + strings.Join(parts, " ")
}

func writeModule(b *strings.Builder, m *manifest.Module) {
	fmt.Fprintf(b, "[module]\nname = %q\nversion = %q\n", m.Name, m.Version)
	for _, s := range m.Services {
		fmt.Fprintf(b, "\n[[services]]\nname = %q\nexec = %s\nlifecycle = %q\n", s.Name, tomlList(s.Exec), s.Lifecycle)
		if s.Platforms != nil {
			fmt.Fprintf(b, "platforms = %s\n", tomlList(s.Platforms))
		}
		fmt.Fprintf(b, "idle_timeout_s = %v\nstart_timeout_s = %v\n", s.IdleTimeout.Seconds(), s.StartTimeout.Seconds())
		if len(s.Pools) > 0 {
			fmt.Fprintf(b, "pools = %s\n", tomlList(s.Pools))
		}
		if len(s.Capabilities) > 0 {
			fmt.Fprintf(b, "capabilities = %s\n", tomlList(s.Capabilities))
		}
		fmt.Fprintf(b, "reserves_host_memory = %v\nyieldable = %v\nfreeze_ok = %v\n", s.ReservesHostMemory,
			s.Yieldable, s.FreezeOK)
		r := s.Restart
		fmt.Fprintf(b, "restart = { backoff_initial_s = %v, backoff_max_s = %v, max_failures = %d, reset_after_s = %v }\n",
			r.BackoffInitial.Seconds(), r.BackoffMax.Seconds(), r.MaxFailures, r.ResetAfter.Seconds())
	}
	for _, p := range m.Probes {
		fmt.Fprintf(b, "\n[[probes]]\nname = %q\nexec = %s\nperiod_s = %v\n", p.Name, tomlList(p.Exec), p.Period.Seconds())
		if p.Platforms != nil {
			fmt.Fprintf(b, "platforms = %s\n", tomlList(p.Platforms))
		}
	}
}

func tomlList(l []string) string {
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
