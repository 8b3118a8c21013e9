package engine

import (
	"testing"
	"time"

	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/protocol"
)

// A stopped on_demand service whose fingerprint says what it offers *now*
// (nothing: no "pools" key, or 0, while it is not running) does not make a
// token request for its pool "over the offer": the request waits and
// starts the service, which may offer more once running (otherwise the
// pool would be unusable until svcrun restarts with it running).
func TestOverOfferOfAStoppedServiceWaits(t *testing.T) {
	m, err := manifest.Parse("module.toml", []byte(`
[module]
name = "m"
version = "1"
[[services]]
name = "vm"
exec = ["bin/vm"]
pools = ["slots"]
`))
	if err != nil {
		t.Fatal(err)
	}
	e := New()
	now := time.Unix(1_000_000, 0)
	out := e.Step(now, Boot{Config: Config{NodeID: "n1", Platform: "linux", MemoryBudgetGB: 4,
		MaxConcurrentOps: 4}, Modules: []ModuleSpec{{Module: m, Enabled: true}}})
	var fp OpID
	for _, f := range out {
		if r, ok := f.(*RunOp); ok && r.Op == protocol.OpFingerprint {
			fp = r.ID
		}
	}
	if fp == 0 {
		t.Fatalf("no fingerprint at boot: %v", out)
	}
	no := false
	e.Step(now, &OpDone{ID: fp,
		Outcome: Outcome{Result: protocol.Result{Op: protocol.OpFingerprint,
			Fingerprint: &protocol.Fingerprint{Healthy: true, Running: &no}}}})
	out = e.Step(now, Acquire{Lease: "l1", Attempt: "a1",
		Requirements: Requirements{Pools: map[string]int64{"slots": 1}}, Wait: time.Minute})
	for _, f := range out {
		if r, ok := f.(Rejected); ok {
			t.Fatalf("a request for 1 token of a stopped on_demand service is rejected at once (the service is "+
				"never started): %s", r.Reason)
		}
	}
}
