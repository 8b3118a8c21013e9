package sim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/fakes"
	"github.com/oarbank/svcrun/protocol"
)

// modResetAfter is a service whose first start fails, so that it is ready
// from 2s (after its backoff) with one failure counted.
func modResetAfter(resetAfter int) string {
	return fmt.Sprintf(`
[module]
name = "m"
version = "1"
[[services]]
name = "a"
exec = ["bin/a"]
capabilities = ["ca"]
restart = { backoff_initial_s = 2, reset_after_s = %d }
`, resetAfter)
}

// A reload changing reset_after_s while the service is ready moves the
// timer that forgets its failures to readiness + the new value: the one
// set when it became ready was for the old value, and it alone would never
// forget them after a lengthening.
func TestReloadChangesResetAfterWhileReady(t *testing.T) {
	cases := []struct {
		name      string
		reloadAt  time.Duration // from the start
		newReset  int           // seconds
		keptUntil time.Duration // the failure is still counted here (0: not checked)
		goneBy    time.Duration // and forgotten here
	}{
		{name: "lengthened", reloadAt: 10 * time.Second, newReset: 60, keptUntil: 40 * time.Second, goneBy: 70 * time.Second},
		{name: "shortened", reloadAt: 5 * time.Second, newReset: 10, keptUntil: 10 * time.Second, goneBy: 15 * time.Second},
		{name: "shortened below the time already ready: forgotten at once", reloadAt: 20 * time.Second,
			newReset: 10, goneBy: 20 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := engine.Config{NodeID: "n1", Platform: "linux", MemoryBudgetGB: 4, StatusPeriod: time.Hour,
				FingerprintPeriod: time.Hour}
			b := &fakes.Behaviour{
				Ops: map[protocol.Op]fakes.OpScript{protocol.OpStart: {Outcomes: []fakes.Outcome{fakes.Fail, fakes.OK}}}}
			w := New(cfg, []engine.ModuleSpec{{Module: mustModule(t, modResetAfter(30)), Enabled: true}},
				map[string]*fakes.Behaviour{"m/a": b})
			tr := traceOf(w)
			w.Do(engine.Acquire{Lease: "l1", Attempt: "a1",
				Requirements: engine.Requirements{Capabilities: []string{"ca"}}, Wait: time.Minute})
			failuresAt := func(at time.Duration) int {
				w.RunFor(Epoch.Add(at).Sub(w.Now()))
				return svc(w, "m/a").Failures
			}
			if n := failuresAt(tc.reloadAt); n != 1 || svc(w, "m/a").State != "ready" {
				t.Fatalf("before the reload: %d failure(s), %s; want 1, ready\n%s", n, svc(w, "m/a").State, strings.Join(*tr, "\n"))
			}
			w.Do(engine.Reload{Modules: []engine.ModuleSpec{{Module: mustModule(t, modResetAfter(tc.newReset)), Enabled: true}}})
			if n := failuresAt(tc.keptUntil); tc.keptUntil > 0 && n != 1 {
				t.Errorf("at %v: %d failure(s), want 1 (ready since 2s, reset_after_s now %d)", tc.keptUntil, n, tc.newReset)
			}
			if n := failuresAt(tc.goneBy); n != 0 {
				t.Errorf("at %v: %d failure(s), want them forgotten (ready since 2s, reset_after_s now %d)\n%s",
					tc.goneBy, n, tc.newReset, strings.Join(*tr, "\n"))
			}
		})
	}
}
