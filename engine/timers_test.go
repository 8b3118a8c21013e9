package engine

import (
	"testing"
	"time"

	"github.com/oarbank/svcrun/manifest"
)

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

// TestDoctorDebounce: doctor events arriving within the debounce window
// run the probes once, at its end; the window is the node's setting, 1 s
// when unset (Config).
func TestDoctorDebounce(t *testing.T) {
	tests := []struct {
		debounce time.Duration
		want     time.Duration
	}{
		{0, time.Second},
		{3 * time.Second, 3 * time.Second},
	}
	for _, tt := range tests {
		r := rigSetup{cfg: Config{NodeID: "n1", Platform: "linux", DoctorDebounce: tt.debounce}}.boot(t)
		r.step(Doctor{Reason: "one"})
		first := r.now
		r.step(Doctor{Reason: "two"})
		if r.setsTimer(TimerDoctor) {
			t.Errorf("debounce %v: the second doctor event set the timer again", tt.debounce)
		}
		var at []time.Duration
		for k, t := range r.timers {
			if k.Kind == TimerDoctor {
				at = append(at, t.Sub(first))
			}
		}
		if len(at) != 1 || at[0] != tt.want {
			t.Errorf("debounce %v: doctor timers %v, want one at %v", tt.debounce, at, tt.want)
		}
	}
}

// TestTimerService: a service timer's key finds its service by the key's
// slot, without the name index (a service the index lost is still found
// there), and by its name when the slot's service is not the key's: a
// forgotten one whose name another took, a slot past the table, a key of
// another name.
func TestTimerService(t *testing.T) {
	e := New()
	m := &module{name: "m"}
	a := e.newService(m, &manifest.Service{Module: "m", Name: "a"})
	b := e.newService(m, &manifest.Service{Module: "m", Name: "b"})
	delete(e.services, b.name) // only the slot knows b now
	gone := e.newService(m, &manifest.Service{Module: "m", Name: "c"})
	gone.forgotten = true
	delete(e.services, gone.name)
	c := e.newService(m, &manifest.Service{Module: "m", Name: "c"}) // the name taken again
	key := func(s *service, subject string) TimerKey {
		return TimerKey{Kind: TimerStatus, Subject: subject, Slot: s.slot + uint32(TimerStatus)}
	}
	past := uint32(len(e.slotServices)) * timerKinds
	tests := []struct {
		name string
		key  TimerKey
		want *service
	}{
		{"by slot", key(a, "m/a"), a},
		{"by slot only", key(b, "m/b"), b},
		{"forgotten: by name", key(gone, "m/c"), c},
		{"another name at the slot", key(a, "m/c"), c},
		{"another name, nowhere", key(a, "m/x"), nil},
		{"past the table", TimerKey{Kind: TimerStatus, Subject: "m/a", Slot: past + uint32(TimerStatus)}, a},
		{"node slot", TimerKey{Kind: TimerStatus, Subject: "m/a", Slot: uint32(TimerStatus)}, a},
	}
	for _, tt := range tests {
		if got := e.timerService(tt.key); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
