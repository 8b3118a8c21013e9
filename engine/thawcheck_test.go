package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/protocol"
)

// opRig drives an engine by hand: every op it runs is answered with the
// result the test gives for that op (ok, changed, running and ready by
// default), within the same instant.
type opRig struct {
	t       *testing.T
	e       *Engine
	now     time.Time
	results map[protocol.Op]protocol.Result
	ran     []protocol.Op // ops run, in order
	running bool          // what the default fingerprint says: since a start, until a stop
}

func newOpRig(t *testing.T, toml string) *opRig {
	t.Helper()
	m, err := manifest.Parse("module.toml", []byte(toml))
	if err != nil {
		t.Fatal(err)
	}
	r := &opRig{t: t, e: New(), now: time.Unix(1_000_000, 0), results: map[protocol.Op]protocol.Result{}}
	r.step(Boot{Config: Config{NodeID: "n1", Platform: "linux", MemoryBudgetGB: 4, MaxConcurrentOps: 4},
		Modules: []ModuleSpec{{Module: m, Enabled: true}}})
	return r
}

func (r *opRig) result(op protocol.Op) protocol.Result {
	if res, ok := r.results[op]; ok {
		return res
	}
	yes := true
	switch op {
	case protocol.OpFingerprint:
		running := r.running
		return protocol.Result{Op: op,
			Fingerprint: &protocol.Fingerprint{Healthy: true, Running: &running, Pools: map[string]int64{"slots": 2}}}
	case protocol.OpStatus, protocol.OpReady:
		return protocol.Result{Op: op, Status: &protocol.Status{Running: yes, Ready: yes}}
	}
	return protocol.Result{Op: op, OpResult: &protocol.OpResult{OK: true, Changed: true}}
}

// step applies ev and answers the ops it causes, and returns the
// effects of them all.
func (r *opRig) step(ev Event) []Effect {
	var all []Effect
	queue := []Event{ev}
	for len(queue) > 0 {
		out := r.e.Step(r.now, queue[0])
		queue = queue[1:]
		out = kept(out)
		for _, f := range out {
			all = append(all, f)
			if op, ok := f.(*RunOp); ok {
				r.ran = append(r.ran, op.Op)
				switch op.Op {
				case protocol.OpStart:
					r.running = true
				case protocol.OpStop:
					r.running = false
				}
				queue = append(queue, &OpDone{ID: op.ID, Outcome: Outcome{Result: r.result(op.Op)}})
			}
		}
	}
	return all
}

func (r *opRig) answer(effects []Effect, lease LeaseID) Effect {
	for _, f := range effects {
		switch f := f.(type) {
		case Admitted:
			if f.Lease == lease {
				return f
			}
		case Rejected:
			if f.Lease == lease {
				return f
			}
		}
	}
	return nil
}

// A service frozen while idle keeps reporting Ready and its pool's offer
// (status, over-offer rejections), and a lease with no wait is admitted on
// it once a status after the thaw said it runs and is ready.
func TestThawCheckIsPartOfAdmission(t *testing.T) {
	r := newOpRig(t, `
[module]
name = "m"
version = "1"
[[services]]
name = "vm"
exec = ["bin/vm"]
pools = ["slots"]
freeze_ok = true
idle_timeout_s = 600
`)
	if a, ok := r.answer(r.step(Acquire{Lease: "l1", Attempt: "a1",
		Requirements: Requirements{Pools: map[string]int64{"slots": 1}}, Wait: time.Minute}), "l1").(Admitted); !ok {
		t.Fatalf("l1 not admitted: %v", a)
	}
	r.now = r.now.Add(time.Second)
	r.step(Release{Lease: "l1"})
	st := r.e.Status().Services[0]
	if !st.Frozen || !st.Ready {
		t.Fatalf("an idle frozen ready service: Frozen %v, Ready %v; want both", st.Frozen, st.Ready)
	}

	for _, tc := range []struct {
		lease   LeaseID
		tokens  int64
		status  protocol.Status
		admit   bool
		reason  string // what the rejection says, when not admitted
		checked bool   // a status ran before the answer
	}{
		{"l2", 3, protocol.Status{Running: true, Ready: true}, false,
			"pool slots: needs 3 token(s), but m/vm offers 2 in all", false},
		{"l3", 1, protocol.Status{Running: true, Ready: true}, true, "", true},
		// all it offers is not over its offer
		{"l3-every-token", 2, protocol.Status{Running: true, Ready: true}, true, "", true},
		{"l4", 1, protocol.Status{Running: true, Ready: false}, false, "m/vm is waiting-ready", true},
	} {
		t.Run(string(tc.lease), func(t *testing.T) {
			r.results[protocol.OpStatus] = protocol.Result{Op: protocol.OpStatus, Status: &tc.status}
			r.ran = nil
			r.now = r.now.Add(time.Second)
			got := r.answer(r.step(Acquire{Lease: tc.lease, Attempt: "a-" + string(tc.lease),
				Requirements: Requirements{Pools: map[string]int64{"slots": tc.tokens}}}), tc.lease)
			switch g := got.(type) {
			case Admitted:
				if !tc.admit {
					t.Errorf("admitted, want rejected: %s", tc.reason)
				}
			case Rejected:
				if tc.admit || !strings.Contains(g.Reason, tc.reason) {
					t.Errorf("rejected: %s; want admitted %v, or the reason %q", g.Reason, tc.admit, tc.reason)
				}
			default:
				t.Fatalf("no answer for a lease with no wait")
			}
			if checked := len(r.ran) > 0 && r.ran[0] == protocol.OpStatus; checked != tc.checked {
				t.Errorf("ops %v: a status first %v, want %v", r.ran, checked, tc.checked)
			}
			r.step(Release{Lease: tc.lease})
		})
	}
}

// TestNoThawCheckWhileTokensAreHeld: a lease with no wait that needs a
// frozen service and pool tokens another lease holds is rejected at once,
// naming the pool: the frozen service is not thawed and checked for a
// lease that could not be admitted anyway.
func TestNoThawCheckWhileTokensAreHeld(t *testing.T) {
	cases := []struct {
		name   string
		held   int64 // tokens of slots (2 offered) another lease holds
		admits bool  // the lease needing one token and m/vm is admitted after a check
	}{
		{"every token held: rejected for the pool, no check", 2, false},
		{"the last token free: checked and admitted", 1, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newOpRig(t, `
[module]
name = "m"
version = "1"
[[services]]
name = "vm"
exec = ["bin/vm"]
capabilities = ["vm"]
freeze_ok = true
idle_timeout_s = 600
[[services]]
name = "pooler"
exec = ["bin/pooler"]
pools = ["slots"]
idle_timeout_s = 600
`)
			if _, ok := r.answer(r.step(Acquire{Lease: "l1", Attempt: "a1",
				Requirements: Requirements{Capabilities: []string{"vm"}}, Wait: time.Minute}), "l1").(Admitted); !ok {
				t.Fatal("l1 not admitted")
			}
			r.now = r.now.Add(time.Second)
			r.step(Release{Lease: "l1"})
			if _, ok := r.answer(r.step(Acquire{Lease: "l2", Attempt: "a2",
				Requirements: Requirements{Pools: map[string]int64{"slots": tc.held}}, Wait: time.Minute}), "l2").(Admitted); !ok {
				t.Fatal("l2 not admitted")
			}
			vm := func() ServiceStatus {
				for _, s := range r.e.Status().Services {
					if s.Name == "m/vm" {
						return s
					}
				}
				t.Fatal("no m/vm")
				return ServiceStatus{}
			}
			if !vm().Frozen {
				t.Fatal("m/vm, idle and freeze_ok, is not frozen")
			}
			r.ran = nil
			r.now = r.now.Add(time.Second)
			got := r.answer(r.step(Acquire{Lease: "l3", Attempt: "a3",
				Requirements: Requirements{Capabilities: []string{"vm"}, Pools: map[string]int64{"slots": 1}}}), "l3")
			if tc.admits {
				if _, ok := got.(Admitted); !ok || len(r.ran) == 0 || vm().Frozen {
					t.Errorf("l3: %+v after ops %v, m/vm frozen %v: want admitted after a check of the thawed m/vm", got,
						r.ran, vm().Frozen)
				}
				return
			}
			if rej, ok := got.(Rejected); !ok || !strings.Contains(rej.Reason, "pool slots") {
				t.Errorf("l3: %+v, want rejected for pool slots", got)
			}
			if len(r.ran) != 0 || !vm().Frozen {
				t.Errorf("ops %v, m/vm frozen %v: want no op and m/vm still frozen", r.ran, vm().Frozen)
			}
		})
	}
}
