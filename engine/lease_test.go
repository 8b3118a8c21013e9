package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/oarbank/svcrun/protocol"
)

// TestLeaseTTL holds the TTL rules of docs/protocol.md and
// docs/decisions.md (Leases and persistence): a renew restarts an
// admitted lease's TTL and answers its new expiry (zero without a TTL); an
// acquire repeated by the attempt restarts it too; a lease not renewed
// within its TTL expires, and then, like one never admitted, is unknown to
// a renew. A request still waiting is unknown to a renew as well.
func TestLeaseTTL(t *testing.T) {
	type step struct {
		at   time.Duration
		ev   Event
		want string // the answer it gets, with its expiry from the first step
	}
	acquire := func(id string, ttl time.Duration) Acquire {
		return Acquire{Lease: LeaseID(id), Attempt: "a1", TTL: ttl, Wait: time.Minute, Requirements: caps("ca")}
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{name: "no TTL", steps: []step{
			{0, acquire("l1", 0), "admitted l1 (m/a)"},
			{10 * time.Second, Renew{Lease: "l1"}, "renewed l1 until never"},
			{20 * time.Second, acquire("l2", 0), "answered l2 with l1 until never"},
			{time.Hour, Renew{Lease: "l1"}, "renewed l1 until never"},
		}},
		{name: "TTL renewed and restarted", steps: []step{
			{0, acquire("l1", 30*time.Second), "admitted l1 (m/a)"},
			{10 * time.Second, Renew{Lease: "l1"}, "renewed l1 until 40s"},
			{20 * time.Second, acquire("l2", 30*time.Second), "answered l2 with l1 until 50s"},
			{49 * time.Second, Renew{Lease: "l1"}, "renewed l1 until 1m19s"},
			{80 * time.Second, Renew{Lease: "l1"}, "unknown lease l1"},
		}},
		{name: "waiting", steps: []step{
			{0, Acquire{Lease: "l1", Attempt: "a1", Wait: time.Minute, Requirements: caps("cb")}, ""},
			{time.Second, Renew{Lease: "l1"}, "unknown lease l1"},
			{2 * time.Second, Renew{Lease: "nobody"}, "unknown lease nobody"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// m/b never gets ready: a lease on it waits.
			world := newAnswering()
			world.set("m/b", protocol.OpReady, protocol.Result{Op: protocol.OpReady,
				Status: &protocol.Status{Running: true}})
			r := rigSetup{world: world.carry}.boot(t, twoServices)
			r.advance(time.Second)
			start := r.now
			for _, s := range tt.steps {
				r.advance(start.Add(s.at).Sub(r.now))
				r.stepAt(r.now, s.ev)
				if s.want == "" {
					continue
				}
				id := LeaseID("l1")
				switch ev := s.ev.(type) {
				case Acquire:
					id = ev.Lease
				case Renew:
					id = ev.Lease
				}
				until := func(x time.Time) string {
					if x.IsZero() {
						return "never"
					}
					return x.Sub(start).String()
				}
				var got string
				switch a := r.answers[id].(type) {
				case Renewed:
					got = fmt.Sprintf("renewed %s until %s", a.Lease, until(a.Expires))
				case AlreadyHeld:
					got = fmt.Sprintf("answered %s with %s until %s", a.Lease, a.Held, until(a.Expires))
				case nil:
					got = "no answer"
				default:
					got = FormatEffect(a)
				}
				if got != s.want {
					t.Errorf("at %v: %s, want %s\n%s", s.at, got, s.want, r.history(0))
				}
			}
		})
	}
}

// TestReleaseReturnsItsTokens: pools are reserved atomically and a
// release returns the lease's tokens only (docs/protocol.md): the tokens
// of the leases still held stay reserved, so a request for more than is
// free waits.
func TestReleaseReturnsItsTokens(t *testing.T) {
	world := newAnswering()
	world.fp["m/a"] = protocol.Fingerprint{Healthy: true, Pools: map[string]int64{"p": 2}}
	r := rigSetup{world: world.carry}.boot(t, twoServices)
	one := Requirements{Pools: map[string]int64{"p": 1}}
	r.step(Acquire{Lease: "l1", Attempt: "a1", Requirements: one})
	r.step(Acquire{Lease: "l2", Attempt: "a2", Requirements: one})
	r.step(Release{Lease: "l1"})
	r.step(Acquire{Lease: "l3", Attempt: "a3", Requirements: Requirements{Pools: map[string]int64{"p": 2}}})
	want := "rejected l3: pool p: needs 2 token(s), 1 of 2 reserved"
	if got := fmt.Sprint(r.answers["l3"]); r.answers["l3"] == nil || FormatEffect(r.answers["l3"]) != want {
		t.Errorf("%s, want %s\n%s", got, want, r.history(0))
	}
	if p := r.e.Status().Pools; len(p) == 0 || p[0].Name != "p" || p[0].Reserved != 1 {
		t.Errorf("pools %+v, want p with 1 token reserved (l2's)", p)
	}
}
