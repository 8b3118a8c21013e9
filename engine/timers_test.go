package engine

import "testing"

// TestTimerKindNames: the journal and traces name each timer by its kind
// (FormatEffect's "timer KIND SUBJECT at T"); a kind this engine does not
// know, from a journal of a newer svcrun, reads "timer?" instead of
// failing the replay.
func TestTimerKindNames(t *testing.T) {
	tests := []struct {
		kind TimerKind
		name string
	}{
		{TimerIdle, "idle"},
		{TimerBackoff, "backoff"},
		{TimerReadyPoll, "ready-poll"},
		{TimerStartDeadline, "start-deadline"},
		{TimerStatus, "status"},
		{TimerFingerprint, "fingerprint"},
		{TimerResetAfter, "reset-after"},
		{TimerProbe, "probe"},
		{TimerDoctor, "doctor"},
		{TimerLeaseWait, "lease-wait"},
		{TimerLeaseTTL, "lease-ttl"},
		{TimerReap, "reap"},
		{TimerReap + 1, "timer?"},
		{TimerReap + 2, "timer?"},
	}
	for _, tt := range tests {
		if got := tt.kind.String(); got != tt.name {
			t.Errorf("TimerKind(%d): %q, want %q", tt.kind, got, tt.name)
		}
	}
	if int(TimerReap) >= timerKinds {
		t.Errorf("%d timer kinds do not fit in an owner's %d slots", TimerReap, timerKinds)
	}
}
