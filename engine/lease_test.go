package engine_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/fakes"
	"github.com/oarbank/svcrun/protocol"
	"github.com/oarbank/svcrun/sim"
)

// TestLeaseTTL holds the TTL rules of docs/protocol.md and
// docs/decisions.md (Leases and persistence): a renew restarts an
// admitted lease's TTL and answers its new expiry (zero without a TTL); an
// acquire repeated by the attempt restarts it too; a lease not renewed
// within its TTL expires, and then, like one never admitted, is unknown to
// a renew. A request still waiting is unknown to a renew as well.
func TestLeaseTTL(t *testing.T) {
	at := func(d time.Duration) time.Time { return sim.Epoch.Add(d) }
	type step struct {
		at   time.Duration
		ev   engine.Event
		want string // the answer it gets, formatted with its expiry
	}
	acquire := func(id string, ttl time.Duration) engine.Acquire {
		return engine.Acquire{Lease: engine.LeaseID(id), Attempt: "a1", TTL: ttl, Wait: time.Minute, Requirements: caps("ca")}
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{name: "no TTL", steps: []step{
			{0, acquire("l1", 0), "admitted l1 (m/a)"},
			{10 * time.Second, engine.Renew{Lease: "l1"}, "renewed l1 until never"},
			{20 * time.Second, acquire("l2", 0), "answered l2 with l1 until never"},
			{time.Hour, engine.Renew{Lease: "l1"}, "renewed l1 until never"},
		}},
		{name: "TTL renewed and restarted", steps: []step{
			{0, acquire("l1", 30*time.Second), "admitted l1 (m/a)"},
			{10 * time.Second, engine.Renew{Lease: "l1"}, "renewed l1 until " + at(40*time.Second).String()},
			{20 * time.Second, acquire("l2", 30*time.Second), fmt.Sprintf("answered l2 with l1 until %s", at(50*time.Second))},
			{49 * time.Second, engine.Renew{Lease: "l1"}, fmt.Sprintf("renewed l1 until %s", at(79*time.Second))},
			{80 * time.Second, engine.Renew{Lease: "l1"}, "unknown lease l1"},
		}},
		{name: "waiting", steps: []step{
			{0, engine.Acquire{Lease: "l1", Attempt: "a1", Wait: time.Minute, Requirements: caps("cb")}, ""},
			{time.Second, engine.Renew{Lease: "l1"}, "unknown lease l1"},
			{2 * time.Second, engine.Renew{Lease: "nobody"}, "unknown lease nobody"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// m/b never gets ready: a lease on it waits.
			w, rec := newWorld(t, testConfig(), modules(t, twoServices), map[string]*fakes.Behaviour{
				"m/b": {Ops: map[protocol.Op]fakes.OpScript{protocol.OpReady: {Outcomes: []fakes.Outcome{fakes.NotReady}}}}})
			w.RunFor(time.Second)
			start := w.Now().Sub(sim.Epoch)
			for _, s := range tt.steps {
				w.RunFor(start + s.at - w.Now().Sub(sim.Epoch))
				w.Do(s.ev)
				if s.want == "" {
					continue
				}
				id := engine.LeaseID("l1")
				switch ev := s.ev.(type) {
				case engine.Acquire:
					id = ev.Lease
				case engine.Renew:
					id = ev.Lease
				}
				until := func(x time.Time) string {
					if x.IsZero() {
						return "never"
					}
					return x.Add(-start).String()
				}
				var got string
				switch a := answer(t, w, id).(type) {
				case engine.Renewed:
					got = fmt.Sprintf("renewed %s until %s", a.Lease, until(a.Expires))
				case engine.AlreadyHeld:
					got = fmt.Sprintf("answered %s with %s until %s", a.Lease, a.Held, until(a.Expires))
				default:
					got = engine.FormatEffect(a)
				}
				if got != s.want {
					t.Errorf("at %v: %s, want %s\n%s", s.at, got, s.want, rec)
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
	w, rec := newWorld(t, testConfig(), modules(t, twoServices),
		map[string]*fakes.Behaviour{"m/a": {Pools: map[string]int64{"p": 2}}})
	w.RunFor(time.Second)
	one := engine.Requirements{Pools: map[string]int64{"p": 1}}
	w.Do(engine.Acquire{Lease: "l1", Attempt: "a1", Requirements: one})
	w.Do(engine.Acquire{Lease: "l2", Attempt: "a2", Requirements: one})
	w.Do(engine.Release{Lease: "l1"})
	w.Do(engine.Acquire{Lease: "l3", Attempt: "a3", Requirements: engine.Requirements{Pools: map[string]int64{"p": 2}}})
	want := "rejected l3: pool p: needs 2 token(s), 1 of 2 reserved"
	if got := engine.FormatEffect(answer(t, w, "l3")); got != want {
		t.Errorf("%s, want %s\n%s", got, want, rec)
	}
	if p := w.Engine.Status().Pools; len(p) == 0 || p[0].Name != "p" || p[0].Reserved != 1 {
		t.Errorf("pools %+v, want p with 1 token reserved (l2's)", p)
	}
}
