package api

import (
	"fmt"
	"strings"
	"time"
)

// WaitingFor says what the waiting lease l waits for, as status st shows
// the node: each service it needs that is not ready and why (starting,
// backing off, unhealthy, disabled, waiting for memory), each capability
// whose probe has not said healthy, else the pool whose tokens are held,
// else the earlier requests that go first. "" for an admitted lease. The
// server fills LeaseStatus.Waiting with it; `svcrun run` shows it while it
// waits.
func WaitingFor(st Status, l LeaseStatus) string {
	if l.Admitted {
		return ""
	}
	var parts []string
	for _, name := range l.Services {
		for _, s := range st.Services {
			if s.Name != name || s.Ready {
				continue
			}
			what := s.State
			switch {
			case s.Unhealthy:
				what = "unhealthy: " + s.Reason
			case !s.Enabled:
				what = "its module is disabled"
			case !s.FingerprintedAt.IsZero() && !s.Healthy:
				what = "its fingerprint says unhealthy: " + s.Message
			case s.BackoffUntil.After(st.Now):
				what = fmt.Sprintf("backing off after failure %d (%s), retry in %s", s.Failures, s.Reason, s.BackoffUntil.Sub(st.Now).Round(time.Second))
			case s.State == "stopped" && !s.Charged && s.MemGB > 0 && st.Memory.UsedGB+s.MemGB > st.Memory.BudgetGB:
				what = fmt.Sprintf("waiting for memory: reserves %v GB, %v of %v GB in use", s.MemGB, round2(st.Memory.UsedGB), st.Memory.BudgetGB)
			}
			parts = append(parts, "waiting for "+name+": "+what)
		}
	}
	for _, capName := range l.Capabilities {
		for _, p := range st.Probes {
			if p.Capability != capName || (p.Reported && p.Healthy) {
				continue
			}
			what := "its probe has not reported yet"
			if p.Reported {
				what = "its probe reports unhealthy: " + p.Message
			}
			parts = append(parts, "waiting for capability "+capName+": "+what)
		}
	}
	if len(parts) == 0 {
		for _, p := range st.Pools {
			if n, ok := l.Pools[p.Name]; ok && p.Capacity-p.Reserved < n {
				parts = append(parts, fmt.Sprintf("waiting for pool %s: %d of %d tokens reserved, needs %d", p.Name, p.Reserved, p.Capacity, n))
			}
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "waiting: earlier requests for the same pools go first")
	}
	return strings.Join(parts, "; ")
}

func round2(x float64) float64 { return float64(int64(x*100+0.5)) / 100 }
