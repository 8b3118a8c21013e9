package engine_test

import (
	"testing"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/fakes"
)

// TestWaitingLeaseStatus: a waiting lease's status says when it was
// asked, until when it waits and what for (the words its rejection would
// give); an attempt asking again keeps its place in line and gets the new
// deadline.
func TestWaitingLeaseStatus(t *testing.T) {
	w, rec := newWorld(t, testConfig(), modules(t, twoServices),
		map[string]*fakes.Behaviour{"m/a": {Pools: map[string]int64{"p": 1}}})
	w.RunFor(time.Second)
	w.Do(engine.Acquire{Lease: "l1", Attempt: "a1", Requirements: engine.Requirements{Pools: map[string]int64{"p": 1}}})
	asked := w.Now()
	w.Do(engine.Acquire{Lease: "l2", Attempt: "a2",
		Requirements: engine.Requirements{Pools: map[string]int64{"p": 1}}, Wait: 10 * time.Second})
	lease := func(id engine.LeaseID) engine.LeaseStatus {
		for _, l := range w.Engine.Status().Leases {
			if l.ID == id {
				return l
			}
		}
		t.Fatalf("no lease %s\n%s", id, rec)
		return engine.LeaseStatus{}
	}
	l2 := lease("l2")
	if l2.Admitted || !l2.AskedAt.Equal(asked) || !l2.WaitUntil.Equal(asked.Add(10*time.Second)) ||
		l2.WaitingFor != "pool p: needs 1 token(s), 1 of 1 reserved" {
		t.Errorf("waiting lease %+v", l2)
	}
	if l1 := lease("l1"); l1.WaitingFor != "" || !l1.AskedAt.IsZero() || !l1.WaitUntil.IsZero() {
		t.Errorf("admitted lease %+v", l1)
	}
	w.RunFor(5 * time.Second)
	w.Do(engine.Acquire{Lease: "l3", Attempt: "a2",
		Requirements: engine.Requirements{Pools: map[string]int64{"p": 1}}, Wait: time.Minute})
	if l3 := lease("l3"); !l3.AskedAt.Equal(asked) || !l3.WaitUntil.Equal(w.Now().Add(time.Minute)) {
		t.Errorf("asked again: %+v, want asked at %v and waiting until %v", l3, asked, w.Now().Add(time.Minute))
	}
}
