package engine

import (
	"testing"
	"time"

	"github.com/oarbank/svcrun/protocol"
)

// A stopped on_demand service whose fingerprint says what it offers *now*
// (nothing: no "pools" key, or 0, while it is not running) does not make a
// token request for its pool "over the offer": the request waits and
// starts the service, which may offer more once running (otherwise the
// pool would be unusable until svcrun restarts with it running).
func TestOverOfferOfAStoppedServiceWaits(t *testing.T) {
	r := newRig(t, `
[module]
name = "m"
version = "1"
[[services]]
name = "vm"
exec = ["bin/vm"]
pools = ["slots"]
`)
	r.done(r.op("m/vm", protocol.OpFingerprint), fingerprinted(false))
	r.step(Acquire{Lease: "l1", Attempt: "a1", Requirements: Requirements{Pools: map[string]int64{"slots": 1}},
		Wait: time.Minute})
	if rej, ok := r.answers["l1"].(Rejected); ok {
		t.Fatalf("a request for 1 token of a stopped on_demand service is rejected at once (the service is "+
			"never started): %s", rej.Reason)
	}
	if !r.ran("m/vm", protocol.OpStart) {
		t.Fatalf("the request waits, and m/vm does not start: %v", r.out)
	}
}
