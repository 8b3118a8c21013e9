package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/oarbank/svcrun/protocol"
)

// ranFirst is the first op of the rig's last step, or "".
func ranFirst(r *rig) protocol.Op {
	if runs := r.runs(); len(runs) > 0 {
		return runs[0].Op
	}
	return ""
}

// A service frozen while idle keeps reporting Ready and its pool's offer
// (status, over-offer rejections), and a lease with no wait is admitted on
// it once a status after the thaw said it runs and is ready.
func TestThawCheckIsPartOfAdmission(t *testing.T) {
	world := newAnswering()
	r := rigSetup{world: world.carry}.boot(t, `
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
	r.step(Acquire{Lease: "l1", Attempt: "a1", Requirements: Requirements{Pools: map[string]int64{"slots": 1}},
		Wait: time.Minute})
	if a, ok := r.answers["l1"].(Admitted); !ok {
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
			world.results[protocol.OpStatus] = protocol.Result{Op: protocol.OpStatus, Status: &tc.status}
			r.now = r.now.Add(time.Second)
			r.step(Acquire{Lease: tc.lease, Attempt: "a-" + string(tc.lease),
				Requirements: Requirements{Pools: map[string]int64{"slots": tc.tokens}}})
			got := r.answers[tc.lease]
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
			if checked := ranFirst(r) == protocol.OpStatus; checked != tc.checked {
				t.Errorf("ops %v: a status first %v, want %v", r.runs(), checked, tc.checked)
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
			world := newAnswering()
			r := rigSetup{world: world.carry}.boot(t, `
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
			r.step(Acquire{Lease: "l1", Attempt: "a1", Requirements: Requirements{Capabilities: []string{"vm"}},
				Wait: time.Minute})
			if _, ok := r.answers["l1"].(Admitted); !ok {
				t.Fatal("l1 not admitted")
			}
			r.now = r.now.Add(time.Second)
			r.step(Release{Lease: "l1"})
			r.step(Acquire{Lease: "l2", Attempt: "a2", Requirements: Requirements{Pools: map[string]int64{"slots": tc.held}},
				Wait: time.Minute})
			if _, ok := r.answers["l2"].(Admitted); !ok {
				t.Fatal("l2 not admitted")
			}
			vm := func() ServiceStatus { return r.service("m/vm") }
			if !vm().Frozen {
				t.Fatal("m/vm, idle and freeze_ok, is not frozen")
			}
			r.now = r.now.Add(time.Second)
			r.step(Acquire{Lease: "l3", Attempt: "a3",
				Requirements: Requirements{Capabilities: []string{"vm"}, Pools: map[string]int64{"slots": 1}}})
			got := r.answers["l3"]
			if tc.admits {
				if _, ok := got.(Admitted); !ok || len(r.runs()) == 0 || vm().Frozen {
					t.Errorf("l3: %+v after ops %v, m/vm frozen %v: want admitted after a check of the thawed m/vm", got,
						r.runs(), vm().Frozen)
				}
				return
			}
			if rej, ok := got.(Rejected); !ok || !strings.Contains(rej.Reason, "pool slots") {
				t.Errorf("l3: %+v, want rejected for pool slots", got)
			}
			if len(r.runs()) != 0 || !vm().Frozen {
				t.Errorf("ops %v, m/vm frozen %v: want no op and m/vm still frozen", r.runs(), vm().Frozen)
			}
		})
	}
}
