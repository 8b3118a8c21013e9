package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/oarbank/svcrun/protocol"
)

// TestContainedStatusTimer: a ready service told that its container holds
// its daemon has its pending status timer moved to the watched period,
// from now; a manual service, which gets no status, gets no status timer.
func TestContainedStatusTimer(t *testing.T) {
	tests := []struct {
		lifecycle string
		want      []time.Duration // the status timers ContainerPopulated sets
	}{
		{"always", []time.Duration{5 * time.Minute}},
		{"manual", nil},
	}
	for _, tt := range tests {
		t.Run(tt.lifecycle, func(t *testing.T) {
			world := newAnswering()
			world.results[protocol.OpFingerprint] = fingerprinted(true)
			r := rigSetup{world: world.carry, cfg: Config{NodeID: "n1", Platform: "linux", MemoryBudgetGB: 4,
				StatusPeriod: 10 * time.Second, WatchedStatusPeriod: 5 * time.Minute}}.boot(t,
				fmt.Sprintf("[module]\nname = \"m\"\nversion = \"1\"\n\n[[services]]\nname = \"s\"\nexec = "+
					"[\"bin/s\"]\nlifecycle = %q\n", tt.lifecycle))
			if st := r.e.services["m/s"].state; st != sReady {
				t.Fatalf("state %v, want ready", st)
			}
			r.now = r.now.Add(3 * time.Second)
			var got []time.Duration
			for _, f := range r.step(ContainerPopulated{Service: Target{Module: "m", Name: "s"}}) {
				if s, ok := f.(*SetTimer); ok && s.Key.Kind == TimerStatus {
					got = append(got, s.At.Sub(r.now))
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("status timers %v, want %v", got, tt.want)
			}
			if st := r.e.Status().Services[0]; !st.Contained {
				t.Errorf("status of a service whose container holds its daemon: not contained")
			}
			r.step(ContainerEmptied{Service: Target{Module: "m", Name: "s"}})
			if st := r.e.Status().Services[0]; st.Contained {
				t.Errorf("status after its container emptied: still contained")
			}
		})
	}
}
