package engine_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/fakes"
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
			cfg := testConfig()
			cfg.MemoryBudgetGB = tt.budget
			bs := map[string]*fakes.Behaviour{}
			for n, gb := range tt.mem {
				bs["vm/"+n] = &fakes.Behaviour{MemGB: gb}
			}
			w, rec := newWorld(t, cfg, modules(t, memModule), bs)
			w.RunFor(time.Second)
			for i, c := range tt.order {
				id := engine.LeaseID(fmt.Sprintf("l%d", i))
				w.Do(engine.Acquire{Lease: id, Attempt: string(id), Wait: time.Minute, Requirements: caps(c)})
				w.RunFor(time.Second)
				if _, ok := answer(t, w, id).(engine.Admitted); !ok {
					t.Fatalf("%s for %s: %v\n%s", id, c, answer(t, w, id), rec)
				}
				if i < len(tt.order)-1 {
					w.Do(engine.Release{Lease: id})
					w.RunFor(time.Second)
				}
			}
			var running []string
			for _, n := range []string{"a", "b", "c"} {
				if w.Exec.Running("vm/" + n) {
					running = append(running, n)
				}
			}
			if fmt.Sprint(running) != fmt.Sprint(tt.running) {
				t.Errorf("running %v, want %v\n%s", running, tt.running, rec)
			}
			if got := w.Engine.Status().MemoryUsedGB; got < tt.used-1e-6 || got > tt.used+1e-6 {
				t.Errorf("memory in use %v GB, want %v", got, tt.used)
			}
			if n := rec.count("stopping: yielding memory to vm/c"); n != tt.yieldNotes {
				t.Errorf("%d services yielded to vm/c, want %d\n%s", n, tt.yieldNotes, rec)
			}
		})
	}
}
