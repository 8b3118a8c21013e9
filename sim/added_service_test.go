package sim

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/fakes"
	"github.com/oarbank/svcrun/protocol"
)

const modAlwaysOnlyA = `
[module]
name = "m"
version = "1"
[[services]]
name = "a"
lifecycle = "always"
exec = ["bin/a"]
capabilities = ["ca"]
`

const modAlwaysAddsB = `
[module]
name = "m"
version = "2"
[[services]]
name = "a"
lifecycle = "always"
exec = ["bin/a"]
capabilities = ["ca"]
[[services]]
name = "b"
lifecycle = "always"
exec = ["bin/b"]
capabilities = ["cb"]
reserves_host_memory = true
`

// A service that a reload adds to an enabled module is fingerprinted
// before anything starts, as at boot: one already running is adopted, not
// started again, and its memory is charged from its fingerprint.
func TestServiceAddedByReloadFingerprintedFirst(t *testing.T) {
	for _, tc := range []struct {
		name    string
		running bool
		wantOps []protocol.Op // the first ops of m/b
	}{
		{"already running: adopted", true, []protocol.Op{protocol.OpFingerprint, protocol.OpReady}},
		{"not running: started", false, []protocol.Op{protocol.OpFingerprint, protocol.OpStart, protocol.OpReady}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := engine.Config{NodeID: "n1", Platform: "linux", MemoryBudgetGB: 8}
			w := New(cfg, []engine.ModuleSpec{{Module: mustModule(t, modAlwaysOnlyA), Enabled: true}},
				map[string]*fakes.Behaviour{"m/b": {Running: tc.running, MemGB: 3}})
			tr := traceOf(w)
			var ops []protocol.Op
			observe := w.Observe
			w.Observe = func(now time.Time, ev engine.Event, effects []engine.Effect) {
				observe(now, ev, effects)
				for _, f := range effects {
					if r, ok := f.(*engine.RunOp); ok && r.Target.String() == "m/b" {
						ops = append(ops, r.Op)
					}
				}
			}
			w.RunFor(10 * time.Second)
			w.Do(engine.Reload{Modules: []engine.ModuleSpec{{Module: mustModule(t, modAlwaysAddsB), Enabled: true}}})
			w.RunFor(10 * time.Second)
			if len(ops) < len(tc.wantOps) || !slices.Equal(ops[:len(tc.wantOps)], tc.wantOps) {
				t.Fatalf("ops of m/b = %v, want them to begin with %v\n%s", ops, tc.wantOps, strings.Join(*tr, "\n"))
			}
			if st := w.Engine.Status(); st.MemoryUsedGB != 3 {
				t.Errorf("memory used = %v GB, want 3 (m/b's fingerprint)", st.MemoryUsedGB)
			}
		})
	}
}
