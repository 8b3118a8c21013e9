package agent

import (
	"testing"
	"time"

	"github.com/oarbank/svcrun/engine"
)

// TestEventStreamKinds: a record's kind is its effect's name, not the
// first word of its text ("answered", "unknown").
func TestEventStreamKinds(t *testing.T) {
	tests := []struct {
		effect engine.Effect
		kind   string
	}{
		{engine.Admitted{Lease: "l1"}, "admitted"},
		{engine.AlreadyHeld{Lease: "l2", Held: "l1"}, "already-held"},
		{engine.Rejected{Lease: "l1", Reason: "no"}, "rejected"},
		{engine.LeaseUnknown{Lease: "l1"}, "lease-unknown"},
		{engine.Expired{Lease: "l1"}, "expired"},
		{engine.Note{Subject: "db/kv", Text: "ready"}, "note"},
	}
	ch := make(chan Record, len(tests))
	a := &Agent{subs: map[chan Record]bool{ch: true}}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range tests {
		a.publish(now, tt.effect)
		if r := <-ch; r.Kind != tt.kind || r.Text != engine.FormatEffect(tt.effect) {
			t.Errorf("%T: record %+v, want kind %q and the effect's text", tt.effect, r, tt.kind)
		}
	}
}
