package engine

import (
	"testing"
	"time"

	"github.com/oarbank/svcrun/protocol"
)

// TestWaitingLeaseStatus: a waiting lease's status says when it was
// asked, until when it waits and what for (the words its rejection would
// give); an attempt asking again keeps its place in line and gets the new
// deadline.
func TestWaitingLeaseStatus(t *testing.T) {
	world := newAnswering()
	world.fp["m/a"] = protocol.Fingerprint{Healthy: true, Pools: map[string]int64{"p": 1}}
	r := rigSetup{world: world.carry}.boot(t, twoServices)
	r.step(Acquire{Lease: "l1", Attempt: "a1", Requirements: Requirements{Pools: map[string]int64{"p": 1}}})
	r.step(Acquire{Lease: "l2", Attempt: "a2",
		Requirements: Requirements{Pools: map[string]int64{"p": 1}}, Wait: 10 * time.Second})
	asked := r.now
	lease := func(id LeaseID) LeaseStatus {
		for _, l := range r.e.Status().Leases {
			if l.ID == id {
				return l
			}
		}
		t.Fatalf("no lease %s\n%s", id, r.history(0))
		return LeaseStatus{}
	}
	l2 := lease("l2")
	if l2.Admitted || !l2.AskedAt.Equal(asked) || !l2.WaitUntil.Equal(asked.Add(10*time.Second)) ||
		l2.WaitingFor != "pool p: needs 1 token(s), 1 of 1 reserved" {
		t.Errorf("waiting lease %+v", l2)
	}
	if l1 := lease("l1"); l1.WaitingFor != "" || !l1.AskedAt.IsZero() || !l1.WaitUntil.IsZero() {
		t.Errorf("admitted lease %+v", l1)
	}
	r.advance(5 * time.Second)
	r.step(Acquire{Lease: "l3", Attempt: "a2",
		Requirements: Requirements{Pools: map[string]int64{"p": 1}}, Wait: time.Minute})
	if l3 := lease("l3"); !l3.AskedAt.Equal(asked) || !l3.WaitUntil.Equal(r.now.Add(time.Minute)) {
		t.Errorf("asked again: %+v, want asked at %v and waiting until %v", l3, asked, r.now.Add(time.Minute))
	}
}
