package engine

import (
	"testing"
	"time"

	"github.com/oarbank/svcrun/manifest"
)

func TestBackoff(t *testing.T) {
	r := manifest.Restart{BackoffInitial: 5 * time.Second, BackoffMax: 300 * time.Second}
	for _, tc := range []struct {
		n    int
		want time.Duration
	}{
		{1, 5 * time.Second}, {2, 10 * time.Second}, {3, 20 * time.Second}, {4, 40 * time.Second},
		{6, 160 * time.Second}, {7, 300 * time.Second}, {8, 300 * time.Second}, {200, 300 * time.Second},
	} {
		if got := Backoff(r, tc.n); got != tc.want {
			t.Errorf("Backoff(n=%d) = %v, want %v", tc.n, got, tc.want)
		}
	}
	// Huge initial values must not overflow into negative delays.
	big := manifest.Restart{BackoffInitial: 100 * 365 * 24 * time.Hour, BackoffMax: 100 * 365 * 24 * time.Hour}
	if got := Backoff(big, 64); got != big.BackoffMax {
		t.Errorf("Backoff(big, 64) = %v", got)
	}
	// backoff_initial_s = 0 (or under a nanosecond): the first retry is
	// at once, the next ones still back off, at the maximum.
	zero := manifest.Restart{BackoffMax: 300 * time.Second}
	for _, tc := range []struct {
		n    int
		want time.Duration
	}{{1, 0}, {2, 300 * time.Second}, {3, 300 * time.Second}} {
		if got := Backoff(zero, tc.n); got != tc.want {
			t.Errorf("Backoff(zero, %d) = %v, want %v", tc.n, got, tc.want)
		}
	}
}

func TestJournalEntryRoundTrip(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	events := []Event{
		Acquire{Lease: "l1", Job: "j", Attempt: "a",
			Requirements: Requirements{Pools: map[string]int64{"p": 2}, NeedsPools: []string{"q"},
				Capabilities: []string{"c"}}, Wait: time.Minute, TTL: time.Second},
		Renew{Lease: "l1"}, Release{Lease: "l1"}, Fire{Timer: TimerKey{Kind: TimerStatus, Subject: "m/s"}},
		ContainerEmptied{Service: Target{Module: "m", Name: "s"}}, Doctor{Reason: "r"}, MemoryPressure{},
		Reset{Service: Target{Module: "m", Name: "s"}}, ReapNow{},
		&OpDone{ID: 7, Outcome: Outcome{Failure: FailTimeout, Message: "killed after 5s"}},
	}
	for _, ev := range events {
		j, err := NewJournalEntry(at, ev, nil)
		if err != nil {
			t.Fatal(err)
		}
		back, err := j.DecodeEvent()
		if err != nil {
			t.Fatalf("%s: %v", ev.EventName(), err)
		}
		j2, _ := NewJournalEntry(at, back, nil)
		if string(j.Data) != string(j2.Data) {
			t.Errorf("%s: %s != %s", ev.EventName(), j.Data, j2.Data)
		}
	}
	if _, err := (JournalEntry{Event: "bogus"}).DecodeEvent(); err == nil {
		t.Error("an unknown event decoded")
	}
}
