package engine

import (
	"testing"
	"time"
)

// TestConfigDefaults: a zero or negative period takes its default, and a
// watched status period or a reap sweep shorter than the period it slows
// down is raised to it.
func TestConfigDefaults(t *testing.T) {
	tests := []struct {
		name string
		in   Config
		want Config
	}{
		{"zero", Config{}, Config{MaxConcurrentOps: 8, StatusPeriod: 10 * time.Second, WatchedStatusPeriod: 5 * time.Minute,
			FingerprintPeriod: 5 * time.Minute, ReapPeriod: time.Minute, ReapSweepPeriod: 10 * time.Minute,
			ReadyPoll: time.Second, DoctorDebounce: time.Second, ForceAfter: 3}},
		{"negative", Config{MaxConcurrentOps: -1, StatusPeriod: -1, WatchedStatusPeriod: -1, FingerprintPeriod: -1,
			ReapPeriod:      -1,
			ReapSweepPeriod: -1, ReadyPoll: -1, DoctorDebounce: -1, ForceAfter: -1},
			Config{MaxConcurrentOps: 8, StatusPeriod: 10 * time.Second, WatchedStatusPeriod: 5 * time.Minute,
				FingerprintPeriod: 5 * time.Minute, ReapPeriod: time.Minute, ReapSweepPeriod: 10 * time.Minute,
				ReadyPoll: time.Second, DoctorDebounce: time.Second, ForceAfter: 3}},
		{"given", Config{MaxConcurrentOps: 2, StatusPeriod: time.Second, WatchedStatusPeriod: time.Minute,
			FingerprintPeriod: 2 * time.Second,
			ReapPeriod:        3 * time.Second, ReapSweepPeriod: 30 * time.Second, ReadyPoll: 4 * time.Millisecond,
			DoctorDebounce: 5 * time.Millisecond, ForceAfter: 1},
			Config{MaxConcurrentOps: 2, StatusPeriod: time.Second, WatchedStatusPeriod: time.Minute,
				FingerprintPeriod: 2 * time.Second,
				ReapPeriod:        3 * time.Second, ReapSweepPeriod: 30 * time.Second, ReadyPoll: 4 * time.Millisecond,
				DoctorDebounce: 5 * time.Millisecond, ForceAfter: 1}},
		{"slow periods below the fast ones", Config{StatusPeriod: 20 * time.Minute, ReapPeriod: time.Hour},
			Config{MaxConcurrentOps: 8, StatusPeriod: 20 * time.Minute, WatchedStatusPeriod: 20 * time.Minute,
				FingerprintPeriod: 5 * time.Minute, ReapPeriod: time.Hour, ReapSweepPeriod: time.Hour,
				ReadyPoll: time.Second, DoctorDebounce: time.Second, ForceAfter: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.in
			got.withDefaults()
			if got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
