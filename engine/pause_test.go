package engine

import (
	"testing"
	"time"
)

// TestPauseOfNothing: a pause of zero (the clock never reports one, a
// driver might) moves nothing and says nothing, where a real pause moves
// the TTL of the lease held and says so.
func TestPauseOfNothing(t *testing.T) {
	world := newAnswering()
	r := rigSetup{world: world.carry}.boot(t, `
[module]
name = "m"
version = "1"
[[services]]
name = "db"
exec = ["bin/db"]
capabilities = ["db"]
lifecycle = "always"
`)
	r.step(Acquire{Lease: "l1", Attempt: "a1", Requirements: Requirements{Capabilities: []string{"db"}},
		TTL: time.Minute, Wait: time.Minute})
	if _, ok := r.answers["l1"].(Admitted); !ok {
		t.Fatalf("l1: %v, want admitted", r.answers["l1"])
	}
	if out := r.step(Paused{}); len(out) != 0 {
		t.Errorf("a pause of zero: %d effect(s), want none:\n%s", len(out), r.history(len(r.lines)-len(out)))
	}
	if out := r.step(Paused{Length: time.Second}); len(r.noted("did not run for 1s")) == 0 || len(out) == 0 {
		t.Errorf("a pause of 1s: no effect or note:\n%s", r.history(len(r.lines)-len(out)))
	}
}
