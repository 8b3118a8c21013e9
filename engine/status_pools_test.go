package engine_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/fakes"
)

// TestStatusPools: the status shows each service's pools as its latest
// fingerprint offers them, and none for a service that offers none (so
// that `svcrun status --json` omits what is not there), while the node's
// pool list says what can be reserved now.
func TestStatusPools(t *testing.T) {
	w, rec := newWorld(t, testConfig(), modules(t, twoServices),
		map[string]*fakes.Behaviour{"m/a": {Pools: map[string]int64{"p": 2, "q": 1}}})
	w.RunFor(time.Second)
	w.Do(engine.Acquire{Lease: "l1", Attempt: "a1", Requirements: engine.Requirements{Pools: map[string]int64{"p": 1}}})
	if err := w.Err(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		service string
		pools   string
	}{
		{"m/a", "map[p:2 q:1]"},
		{"m/b", "map[]"},
	}
	for _, tt := range tests {
		s := status(w, tt.service)
		if got := fmt.Sprint(s.Pools); got != tt.pools {
			t.Errorf("%s: pools %s, want %s\n%s", tt.service, got, tt.pools, rec)
		}
		if len(s.Pools) == 0 && s.Pools != nil {
			t.Errorf("%s offers no pool: its status has an empty map, want none", tt.service)
		}
	}
	var pools []string
	for _, p := range w.Engine.Status().Pools {
		pools = append(pools, fmt.Sprintf("%s %s %d/%d/%d", p.Name, p.Service, p.Reserved, p.Capacity, p.Offered))
	}
	if want := "[p m/a 1/2/2 q m/a 0/1/1]"; fmt.Sprint(pools) != want {
		t.Errorf("pools (reserved/capacity/offered) %v, want %s", pools, want)
	}
}
