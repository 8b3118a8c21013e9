package executor

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/protocol"
)

// startNginx starts the nginx-like service (a master and a worker that
// outlives it) and returns its master's pid, read from its pid file (not
// a.pid: its cleanup would SIGKILL the pid again at the end, by then maybe
// another process's).
func startNginx(t testing.TB, a *adapterFixture, id engine.OpID) int {
	t.Helper()
	if o := a.run(t, id, "nginx", false, protocol.OpStart); o.Failure != engine.FailNone {
		t.Fatalf("start: %+v", o)
	}
	select {
	case <-a.populated:
	case <-time.After(emptiedGuard):
		t.Fatalf("no ContainerPopulated within %v of the start", emptiedGuard)
	}
	data, err := os.ReadFile(filepath.Join(a.data, "master.pid"))
	if err != nil {
		t.Fatal(err)
	}
	master, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || master <= 1 {
		t.Fatalf("master.pid: %q", data)
	}
	return master
}

// TestMemberExitedEvent: the master of a daemon killed alone, its worker
// living on in the container, is posted as MemberExited (the container
// does not empty, so no ContainerEmptied tells it); a stop that ends the
// master itself is not.
func TestMemberExitedEvent(t *testing.T) {
	m := newContainers(t)
	if !m.Support().MemberExits.OK {
		t.Skipf("no pidfds here: %s", m.Support().MemberExits)
	}
	a := newAdapterWith(t, m)
	id := engine.OpID(0)
	for i := range 3 {
		id++
		master := startNginx(t, a, id)
		if err := syscall.Kill(master, syscall.SIGKILL); err != nil {
			t.Fatalf("run %d: kill the master %d: %v", i, master, err)
		}
		select {
		case e := <-a.memberExited:
			if e.service != "test/nginx" {
				t.Fatalf("run %d: member exited %q, want test/nginx", i, e.service)
			}
		case <-time.After(emptiedGuard):
			t.Fatalf("run %d: no MemberExited within %v of the master's kill", i, emptiedGuard)
		}
		if st, _ := m.Status("test/nginx"); !st.Populated {
			t.Fatalf("run %d: the worker's container: %+v", i, st)
		}
		id++
		if o := a.run(t, id, "nginx", false, protocol.OpStop); o.Failure != engine.FailNone {
			t.Fatalf("run %d: stop: %+v", i, o)
		}
	}
	// A stop kills the master of a live nginx: that is the op's doing.
	id++
	startNginx(t, a, id)
	id++
	if o := a.run(t, id, "nginx", false, protocol.OpStop); o.Failure != engine.FailNone {
		t.Fatalf("stop: %+v", o)
	}
	select {
	case e := <-a.memberExited:
		t.Errorf("MemberExited for %q after a stop", e.service)
	default:
	}
}

// TestMemberExitedKilled: the MemberExited of a master that was svcrun's
// child (inherited as subreaper) says whether a signal killed it, which
// the engine takes as a crash without a status; a master that ended by
// itself (as nginx's old master after a binary upgrade) is not killed,
// and its service's status decides.
func TestMemberExitedKilled(t *testing.T) {
	m := newContainers(t)
	if !m.Support().MemberExits.OK {
		t.Skipf("no pidfds here: %s", m.Support().MemberExits)
	}
	a := newAdapterWith(t, m)
	tests := []struct {
		service string
		sig     syscall.Signal
		killed  bool
	}{
		{"nginx", syscall.SIGKILL, true},
		{"handoff", syscall.SIGUSR1, false},
	}
	id := engine.OpID(0)
	for _, tt := range tests {
		id++
		if o := a.run(t, id, tt.service, false, protocol.OpStart); o.Failure != engine.FailNone {
			t.Fatalf("%s: start: %+v", tt.service, o)
		}
		select {
		case <-a.populated:
		case <-time.After(emptiedGuard):
			t.Fatalf("%s: no ContainerPopulated within %v of the start", tt.service, emptiedGuard)
		}
		master := pidIn(t, filepath.Join(a.data, "master.pid"))
		if err := syscall.Kill(master, tt.sig); err != nil {
			t.Fatalf("%s: signal the master %d: %v", tt.service, master, err)
		}
		select {
		case e := <-a.memberExited:
			if e.service != "test/"+tt.service || e.killed != tt.killed {
				t.Errorf("%s: MemberExited %+v, want killed %v", tt.service, e, tt.killed)
			}
		case <-time.After(emptiedGuard):
			t.Fatalf("%s: no MemberExited within %v of the master's %v", tt.service, emptiedGuard, tt.sig)
		}
		id++
		if o := a.run(t, id, tt.service, false, protocol.OpStop); o.Failure != engine.FailNone {
			t.Fatalf("%s: stop: %+v", tt.service, o)
		}
	}
}

// pidIn reads the pid in file.
func pidIn(t testing.TB, file string) int {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 1 {
		t.Fatalf("%s: %q", file, data)
	}
	return pid
}

// BenchmarkMasterDeath sets the death of a master whose worker lives on
// (MemberExited, from the master's pidfd) beside the death of a
// single-process daemon (ContainerEmptied, from cgroup.events), each
// from the SIGKILL to the event that starts the service's status or
// restart decision:
//
//	go test -run '^$' -bench MasterDeath -benchtime 20x ./executor
//
// ns/op is the mean, worst-ns the slowest of the b.N.
func BenchmarkMasterDeath(b *testing.B) {
	for _, kind := range []string{"single-process", "master-only"} {
		b.Run(kind, func(b *testing.B) {
			m := newContainers(b)
			if !m.Support().MemberExits.OK {
				b.Skipf("no pidfds here: %s", m.Support().MemberExits)
			}
			a := newAdapterWith(b, m)
			var total, worst time.Duration
			id := engine.OpID(0)
			for range b.N {
				id++
				var pid int
				events := a.emptied
				if kind == "master-only" {
					pid = startNginx(b, a, id)
					events = a.memberExited
				} else {
					if o := a.run(b, id, "daemon", false, protocol.OpStart); o.Failure != engine.FailNone {
						b.Fatalf("start: %+v", o)
					}
					<-a.populated
					data, err := os.ReadFile(filepath.Join(a.data, "daemon.pid"))
					if err != nil {
						b.Fatal(err)
					}
					if pid, err = strconv.Atoi(strings.TrimSpace(string(data))); err != nil || pid <= 1 {
						b.Fatalf("daemon.pid: %q", data)
					}
				}
				t0 := time.Now()
				if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
					b.Fatalf("kill %d: %v", pid, err)
				}
				select {
				case e := <-events:
					lat := e.at.Sub(t0)
					total, worst = total+lat, max(worst, lat)
				case <-time.After(emptiedGuard):
					b.Fatalf("no event within %v of the kill", emptiedGuard)
				}
				if kind == "master-only" {
					id++
					if o := a.run(b, id, "nginx", false, protocol.OpStop); o.Failure != engine.FailNone {
						b.Fatalf("stop: %+v", o)
					}
				}
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns/op")
			b.ReportMetric(float64(worst.Nanoseconds()), "worst-ns")
		})
	}
}
