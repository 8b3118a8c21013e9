package engine

import (
	"fmt"
	"testing"

	"github.com/oarbank/svcrun/protocol"
)

// TestStatusPools: the status shows each service's pools as its latest
// fingerprint offers them, and none for a service that offers none (so
// that `svcrun status --json` omits what is not there), while the node's
// pool list says what can be reserved now.
func TestStatusPools(t *testing.T) {
	world := newAnswering()
	world.fp["m/a"] = protocol.Fingerprint{Healthy: true, Pools: map[string]int64{"p": 2, "q": 1}}
	world.fp["m/b"] = protocol.Fingerprint{Healthy: true}
	r := rigSetup{world: world.carry}.boot(t, twoServices)
	r.step(Acquire{Lease: "l1", Attempt: "a1", Requirements: Requirements{Pools: map[string]int64{"p": 1}}})
	tests := []struct {
		service string
		pools   string
	}{
		{"m/a", "map[p:2 q:1]"},
		{"m/b", "map[]"},
	}
	for _, tt := range tests {
		s := r.service(tt.service)
		if got := fmt.Sprint(s.Pools); got != tt.pools {
			t.Errorf("%s: pools %s, want %s\n%s", tt.service, got, tt.pools, r.history(0))
		}
		if len(s.Pools) == 0 && s.Pools != nil {
			t.Errorf("%s offers no pool: its status has an empty map, want none", tt.service)
		}
	}
	var pools []string
	for _, p := range r.e.Status().Pools {
		pools = append(pools, fmt.Sprintf("%s %s %d/%d/%d", p.Name, p.Service, p.Reserved, p.Capacity, p.Offered))
	}
	if want := "[p m/a 1/2/2 q m/a 0/1/1]"; fmt.Sprint(pools) != want {
		t.Errorf("pools (reserved/capacity/offered) %v, want %s", pools, want)
	}
}
