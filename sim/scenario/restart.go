package scenario

import (
	"fmt"
	"strings"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/sim"
)

// parseRestart reads `restart`: svcrun restarts; the engine starts again
// from what the store kept.
func (p *parser) parseRestart(in *Input, args []string) error {
	return p.nargs(in, args, 0, "restart")
}

// playRestart restarts the world's engine; the trace shows what the store
// kept for the new one.
func (pl *player) playRestart(in *Input) error {
	pl.record(in, in.Text+" (store: "+storeSummary(pl.w.Store.State())+")", nil)
	pl.down = false
	pl.w.Restart()
	pl.w.RunFor(0)
	return pl.stopped(in)
}

// storeSummary lists the leases and service records of a store.
func storeSummary(st engine.State) string {
	var leases, svcs []string
	for _, l := range st.Leases {
		leases = append(leases, string(l.ID))
	}
	for _, s := range st.Services {
		x := fmt.Sprintf("%s failures=%d", s.Name, s.Failures)
		if s.Unhealthy {
			x += " unhealthy"
		}
		if !s.LastUsed.IsZero() {
			x += fmt.Sprintf(" last_used=%v", s.LastUsed.Sub(sim.Epoch))
		}
		svcs = append(svcs, x)
	}
	if len(leases) == 0 {
		leases = []string{"none"}
	}
	if len(svcs) == 0 {
		svcs = []string{"none"}
	}
	return "leases " + strings.Join(leases, ", ") + "; services " + strings.Join(svcs, ", ")
}
