package executor

import (
	"slices"
	"testing"
	"time"

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

// TestRunWaitReportsWhatAStopLeft: RunWait gives the Result beside the
// Outcome; Procs lists the daemons a start left, and a stop's Result.Left
// the processes it left behind (killed), in both container modes.
func TestRunWaitReportsWhatAStopLeft(t *testing.T) {
	for _, mode := range containerModes {
		t.Run(mode.name, func(t *testing.T) {
			a := newAdapterWith(t, mode.containers(t))
			svc := engine.Target{Module: "test", Name: "nginx"}
			res, o := a.x.RunWait(engine.RunOp{ID: 1, Target: svc, Op: protocol.OpStart, Timeout: 30 * time.Second})
			if o.Failure != engine.FailNone || res.Pid == 0 {
				t.Fatalf("start: %+v %+v", o, res)
			}
			worker, master := a.pid(t, "worker.pid"), a.pid(t, "master.pid")
			if procs := a.x.Procs(svc); !slices.Contains(procs, worker) || !slices.Contains(procs, master) {
				t.Errorf("Procs after the start = %v, want the worker %d and the master %d", procs, worker, master)
			}
			res, o = a.x.RunWait(engine.RunOp{ID: 2, Target: svc, Op: protocol.OpStop, Timeout: 30 * time.Second})
			if o.Failure != engine.FailNone {
				t.Fatalf("stop: %+v", o)
			}
			if !slices.Contains(res.Left, worker) || slices.Contains(res.Left, master) {
				t.Errorf("the stop's Left = %v, want the worker %d and not the master %d", res.Left, worker, master)
			}
			if procs := a.x.Procs(svc); len(procs) != 0 {
				t.Errorf("Procs after the stop = %v", procs)
			}
		})
	}
}
