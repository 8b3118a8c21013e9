//go:build linux

package executor

import (
	"syscall"
	"testing"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/protocol"
)

// In the process-group fallback, a daemon that dies while another op of its
// service (a status poll) runs is reported when that op ends (groupExited
// cannot: the op's group is still there), as the cgroup Manager reports
// the same death at the op's end (OpEnd).
func TestDaemonDeathDuringAnOpIsReported(t *testing.T) {
	a := newAdapter(t)
	if o := a.run(t, 1, "slowstatus", false, protocol.OpStart); o.Failure != engine.FailNone {
		t.Fatalf("start: %+v", o)
	}
	daemon := a.pid(t, "daemon.pid")
	t.Cleanup(func() { syscall.Kill(daemon, syscall.SIGKILL) })

	// A status poll runs; the daemon crashes meanwhile.
	target := engine.Target{Module: "test", Name: "slowstatus"}
	a.x.Run(engine.RunOp{ID: 2, Target: target, Op: protocol.OpStatus, Timeout: 10 * time.Second})
	time.Sleep(300 * time.Millisecond)
	if err := syscall.Kill(daemon, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if d := <-a.done; d.Outcome.Failure != engine.FailNone {
		t.Fatalf("status: %+v", d.Outcome)
	}
	select {
	case e := <-a.emptied:
		if e.service != "test/slowstatus" {
			t.Fatalf("ContainerEmptied for %s", e.service)
		}
	case <-time.After(emptiedGuard):
		t.Fatalf("the daemon died during a status op: no ContainerEmptied within %v (groups now %v)",
			emptiedGuard, a.x.Groups("test/slowstatus"))
	}
}
