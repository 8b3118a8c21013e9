package executor

import (
	"testing"

	"github.com/oarbank/svcrun/cgroup"
	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/protocol"
)

// containerModes are the two ways a service's processes are contained: its
// cgroup (nil when the host has none usable: skipped) and process groups.
var containerModes = []struct {
	name       string
	containers func(t testing.TB) *cgroup.Manager
}{
	{"cgroup", newContainers},
	{"process_group", func(testing.TB) *cgroup.Manager { return nil }},
}

// TestStopLeavesAnEmptyContainer: a stop that kills only its master leaves
// a worker that ignores SIGTERM and holds the port; whatever the stop left
// is killed before its OpDone, nothing is left armed (no ContainerEmptied
// can follow and be taken for a crash), and the next start succeeds.
func TestStopLeavesAnEmptyContainer(t *testing.T) {
	for _, mode := range containerModes {
		t.Run(mode.name, func(t *testing.T) {
			m := mode.containers(t)
			a := newAdapterWith(t, m)
			if o := a.run(t, 1, "nginx", false, protocol.OpStart); o.Failure != engine.FailNone {
				t.Fatalf("start: %+v", o)
			}
			worker := a.pid(t, "worker.pid")
			a.pid(t, "master.pid")
			if o := a.run(t, 2, "nginx", false, protocol.OpStop); o.Failure != engine.FailNone {
				t.Fatalf("stop: %+v", o)
			}
			if alive(worker) {
				t.Errorf("the worker %d outlived the stop", worker)
			}
			if m != nil {
				if pids, err := m.Procs("test/nginx"); err != nil || len(pids) != 0 {
					t.Errorf("the container after the stop: %v %v", pids, err)
				}
				if st, _ := m.Status("test/nginx"); st.Armed {
					t.Errorf("the container is armed after the stop: %+v", st)
				}
			} else {
				if g := a.x.Groups("test/nginx"); len(g) != 0 {
					t.Errorf("groups after the stop: %v", g)
				}
				a.x.gmu.Lock()
				armed := a.x.armed[engine.Target{Module: "test", Name: "nginx"}]
				a.x.gmu.Unlock()
				if armed {
					t.Error("the service is armed after the stop")
				}
			}
			if o := a.run(t, 3, "nginx", false, protocol.OpStart); o.Failure != engine.FailNone {
				t.Errorf("the start after the stop: %+v", o)
			}
		})
	}
}
