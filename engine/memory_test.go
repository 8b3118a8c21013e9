package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/oarbank/svcrun/protocol"
)

// memModule: three on_demand services that reserve host memory, the
// first two yieldable.
const memModule = `
[module]
name = "vm"
version = "1"
[[services]]
name = "a"
exec = ["bin/a"]
capabilities = ["a"]
reserves_host_memory = true
yieldable = true
idle_timeout_s = 600
[[services]]
name = "b"
exec = ["bin/b"]
capabilities = ["b"]
reserves_host_memory = true
yieldable = true
idle_timeout_s = 600
[[services]]
name = "c"
exec = ["bin/c"]
capabilities = ["c"]
reserves_host_memory = true
idle_timeout_s = 600
`

// TestMemoryBudget holds the memory rules of docs/decisions.md
// (Memory): a start fits when the reservations sum to at most the budget,
// float rounding aside; one that does not fit stops idle yieldable
// services, least recently used first and only as many as make room (a
// service reserving nothing frees nothing and keeps running), else waits.
func TestMemoryBudget(t *testing.T) {
	tests := []struct {
		name       string
		budget     float64
		mem        map[string]float64 // vm/a, vm/b, vm/c
		order      []string           // capabilities acquired, one lease each, released at once but the last
		running    []string           // after the last acquire
		used       float64
		yieldNotes int
	}{
		{name: "sum at the budget, rounding aside", budget: 0.3,
			mem:   map[string]float64{"a": 0.1, "b": 0.2},
			order: []string{"a", "b"}, running: []string{"a", "b"}, used: 0.3},
		{name: "the least recently used yields, only it", budget: 8,
			mem:   map[string]float64{"a": 4, "b": 4, "c": 4},
			order: []string{"a", "b", "c"}, running: []string{"b", "c"}, used: 8, yieldNotes: 1},
		{name: "a service reserving nothing is not stopped for room", budget: 4,
			mem:   map[string]float64{"a": 0, "b": 3, "c": 3},
			order: []string{"a", "b", "c"}, running: []string{"a", "c"}, used: 3, yieldNotes: 1},
		{name: "yielding makes room, rounding aside", budget: 0.3,
			mem:   map[string]float64{"a": 0.1, "b": 0.2, "c": 0.3},
			order: []string{"a", "b", "c"}, running: []string{"c"}, used: 0.3, yieldNotes: 2},
		{name: "a reservation of the whole budget", budget: 4,
			mem:   map[string]float64{"c": 4},
			order: []string{"c"}, running: []string{"c"}, used: 4},
		{name: "two yield when one is not enough", budget: 8,
			mem:   map[string]float64{"a": 3, "b": 3, "c": 7},
			order: []string{"a", "b", "c"}, running: []string{"c"}, used: 7, yieldNotes: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := rigConfig()
			cfg.MemoryBudgetGB = tt.budget
			world := newAnswering()
			for n, gb := range tt.mem {
				world.fp["vm/"+n] = protocol.Fingerprint{Healthy: true, Reserve: &protocol.Reserve{MemGB: gb}}
			}
			r := rigSetup{cfg: cfg, world: world.carry}.boot(t, memModule)
			r.advance(time.Second)
			for i, c := range tt.order {
				id := LeaseID(fmt.Sprintf("l%d", i))
				r.step(Acquire{Lease: id, Attempt: string(id), Wait: time.Minute, Requirements: caps(c)})
				r.advance(time.Second)
				if _, ok := r.answers[id].(Admitted); !ok {
					t.Fatalf("%s for %s: %v\n%s", id, c, r.answers[id], r.history(0))
				}
				if i < len(tt.order)-1 {
					r.step(Release{Lease: id})
					r.advance(time.Second)
				}
			}
			var running []string
			for _, n := range []string{"a", "b", "c"} {
				if world.running["vm/"+n] {
					running = append(running, n)
				}
			}
			if fmt.Sprint(running) != fmt.Sprint(tt.running) {
				t.Errorf("running %v, want %v\n%s", running, tt.running, r.history(0))
			}
			if got := r.e.Status().MemoryUsedGB; got < tt.used-1e-6 || got > tt.used+1e-6 {
				t.Errorf("memory in use %v GB, want %v", got, tt.used)
			}
			if n := r.count(0, "stopping: yielding memory to vm/c"); n != tt.yieldNotes {
				t.Errorf("%d services yielded to vm/c, want %d\n%s", n, tt.yieldNotes, r.history(0))
			}
		})
	}
}
