package engine

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oarbank/svcrun/protocol"
	"pgregory.net/rapid"
)

// daemon is what a model world knows of one service's daemon.
type daemon struct {
	running, frozen, healthy bool
	diedFrozen               bool // died silently while frozen, not started since
	fpHealthy                bool // the latest fingerprint answered
	fpAnswered               bool
}

// model is a rig's world made of daemons: it answers each op from the
// daemon's state and checks what the engine does to them. Ops are
// answered within the instant they run.
type model struct {
	t       *rapid.T
	daemons map[string]*daemon
}

// carry carries out f and returns the event that answers it, if any.
func (m *model) carry(f Effect) Event {
	switch f := f.(type) {
	case Freeze:
		m.daemons[f.Service.String()].frozen = true
	case Thaw:
		m.daemons[f.Service.String()].frozen = false
	case Kill:
		m.daemons[f.Service.String()].running = false
	case Admitted:
		for _, name := range f.Services {
			if d := m.daemons[name]; !d.running || d.diedFrozen {
				m.t.Fatalf("%s admitted on %s, whose daemon died while frozen", f.Lease, name)
			}
		}
	case *RunOp:
		return &OpDone{ID: f.ID, Outcome: Outcome{Result: m.op(*f)}}
	}
	return nil
}

func (m *model) op(r RunOp) protocol.Result {
	d := m.daemons[r.Target.String()]
	res := protocol.Result{Op: r.Op}
	switch r.Op {
	case protocol.OpFingerprint:
		running := d.running
		res.Fingerprint = &protocol.Fingerprint{Healthy: d.healthy, Running: &running}
		if !d.healthy {
			res.Fingerprint.Message = "model unhealthy"
		}
		d.fpHealthy, d.fpAnswered = d.healthy, true
	case protocol.OpStart:
		if d.fpAnswered && !d.fpHealthy {
			m.t.Fatalf("start of %s, whose latest fingerprint said unhealthy", r.Target)
		}
		res.OpResult = &protocol.OpResult{OK: true, Changed: !d.running}
		d.running, d.diedFrozen = true, false
	case protocol.OpStop:
		res.OpResult = &protocol.OpResult{OK: true, Changed: d.running}
		d.running, d.diedFrozen = false, false
	case protocol.OpStatus, protocol.OpReady:
		res.Status = &protocol.Status{Running: d.running, Ready: d.running}
	case protocol.OpListOwned:
		res.OwnedList = &protocol.OwnedList{}
	case protocol.OpDestroy:
		res.OpResult = &protocol.OpResult{OK: true}
	}
	return res
}

// Random histories of leases, silent deaths of frozen daemons and health
// flips: no lease is ever admitted on a daemon that died while frozen, no
// service is started while its latest fingerprint says unhealthy, an
// acquire with no wait is answered within its instant, and once every
// daemon is healthy a lease with a wait is admitted.
// thawHealthModule: two freezable on_demand services and an always one.
const thawHealthModule = `
[module]
name = "m"
version = "1"
[[services]]
name = "a"
exec = ["bin/a"]
capabilities = ["a"]
freeze_ok = true
idle_timeout_s = 60
[[services]]
name = "b"
exec = ["bin/b"]
capabilities = ["b"]
freeze_ok = true
idle_timeout_s = 30
[[services]]
name = "c"
exec = ["bin/c"]
capabilities = ["c"]
lifecycle = "always"
`

func TestThawCheckAndWithheldStartProperties(t *testing.T) {
	names := []string{"m/a", "m/b", "m/c"}
	caps := []string{"a", "b", "c"}
	rapid.Check(t, func(t *rapid.T) {
		m := &model{t: t, daemons: map[string]*daemon{}}
		for _, n := range names {
			m.daemons[n] = &daemon{healthy: true}
		}
		w := rigSetup{world: m.carry, cfg: Config{NodeID: "n1", Platform: "linux", MemoryBudgetGB: 4,
			MaxConcurrentOps: 2, FingerprintPeriod: 30 * time.Second}}.boot(t, thawHealthModule)
		var held []LeaseID
		n := 0
		t.Repeat(map[string]func(*rapid.T){
			"acquire": func(t *rapid.T) {
				n++
				id := LeaseID(fmt.Sprintf("l%d", n))
				cap := rapid.SampledFrom(caps).Draw(t, "cap")
				wait := rapid.SampledFrom([]time.Duration{0, 0, 5 * time.Second, time.Minute}).Draw(t, "wait")
				w.step(Acquire{Lease: id, Attempt: "a" + string(id),
					Requirements: Requirements{Capabilities: []string{cap}}, Wait: wait})
				switch w.answers[id].(type) {
				case Admitted:
					held = append(held, id)
				case nil:
					if wait == 0 {
						t.Fatalf("%s (cap %s, no wait) not answered within its instant", id, cap)
					}
					held = append(held, id) // its release ends the wait
				}
			},
			"release": func(t *rapid.T) {
				if len(held) == 0 {
					t.Skip("no lease")
				}
				i := rapid.IntRange(0, len(held)-1).Draw(t, "i")
				w.step(Release{Lease: held[i]})
				held = slices.Delete(held, i, i+1)
			},
			"die while frozen": func(t *rapid.T) {
				name := rapid.SampledFrom(names).Draw(t, "svc")
				if d := m.daemons[name]; d.frozen && d.running {
					d.running, d.diedFrozen = false, true
				}
			},
			"health": func(t *rapid.T) {
				d := m.daemons[rapid.SampledFrom(names).Draw(t, "svc")]
				d.healthy = !d.healthy
			},
			"heal": func(t *rapid.T) {
				// Healthy again everywhere: within a fingerprint period
				// every withheld start goes, and a lease with a wait is
				// admitted (or rejected for failures counted before).
				for _, d := range m.daemons {
					d.healthy = true
				}
				n++
				id := LeaseID(fmt.Sprintf("l%d", n))
				cap := rapid.SampledFrom(caps).Draw(t, "cap")
				w.step(Acquire{Lease: id, Attempt: "a" + string(id),
					Requirements: Requirements{Capabilities: []string{cap}}, Wait: 10 * time.Minute})
				w.advance(10 * time.Minute)
				switch a := w.answers[id].(type) {
				case Admitted:
					held = append(held, id)
				case Rejected:
					if !strings.Contains(a.Reason, "consecutive failures") {
						t.Fatalf("%s (cap %s) rejected with every daemon healthy: %s", id, cap, a.Reason)
					}
				default:
					t.Fatalf("%s (cap %s) not answered in 10 minutes with every daemon healthy", id, cap)
				}
			},
			"time": func(t *rapid.T) {
				w.advance(time.Duration(rapid.IntRange(1, 90).Draw(t, "s")) * time.Second)
			},
		})
	})
}
