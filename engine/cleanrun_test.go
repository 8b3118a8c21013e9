package engine_test

import (
	"testing"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/fakes"
	"github.com/oarbank/svcrun/protocol"
)

// A failure followed by a clean run (ready until svcrun stopped the
// service gracefully, for no failure) is forgotten at the end of that
// stop; a stop that is not graceful, or that ends no clean run, keeps it
// (docs/decisions.md, Failures and backoff).
func TestCleanRunForgetsFailures(t *testing.T) {
	const kv = `
[module]
name = "db"
version = "1"
[[services]]
name = "kv"
exec = ["bin/kv"]
capabilities = ["kv"]
idle_timeout_s = 60
`
	for _, tc := range []struct {
		name string
		b    fakes.Behaviour
		// readyAfter: ready comes this long after the restart; the lease
		// is released before, so the idle stop finds it still waiting.
		readyAfter time.Duration
		want       int // failures after the idle stop
	}{
		{"graceful idle stop", fakes.Behaviour{}, 0, 0},
		{"stop escalated by the service",
			fakes.Behaviour{Ops: map[protocol.Op]fakes.OpScript{
				protocol.OpStop: {Outcomes: []fakes.Outcome{fakes.Escalated}}}}, 0, 1},
		{"stop failed, killed",
			fakes.Behaviour{Ops: map[protocol.Op]fakes.OpScript{
				protocol.OpStop: {Outcomes: []fakes.Outcome{fakes.Fail}}}}, 0, 1},
		{"stopped before it was ready again", fakes.Behaviour{}, time.Hour, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.b
			w, rec := newWorld(t, testConfig(), modules(t, kv), map[string]*fakes.Behaviour{"db/kv": &b})
			w.Do(engine.Acquire{Lease: "l1", Attempt: "a1", Requirements: caps("kv"), Wait: time.Minute})
			if _, ok := answer(t, w, "l1").(engine.Admitted); !ok {
				t.Fatalf("l1: %v", answer(t, w, "l1"))
			}
			w.RunFor(time.Minute)
			b.ReadyAfter = tc.readyAfter
			w.Exec.Crash("db/kv")
			w.RunFor(10 * time.Second) // backoff 1s, then restarted for l1
			if got := status(w, "db/kv").Failures; got != 1 {
				t.Fatalf("failures after the crash: %d, want 1\n%s", got, rec)
			}
			w.Do(engine.Release{Lease: "l1"})
			w.RunFor(5 * time.Minute) // idle_timeout_s 60, then the stop
			if w.Exec.Running("db/kv") {
				t.Fatalf("db/kv still runs\n%s", rec)
			}
			if got := status(w, "db/kv").Failures; got != tc.want {
				t.Errorf("failures after the idle stop: %d, want %d\n%s", got, tc.want, rec)
			}
		})
	}
}
