package executor

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oarbank/svcrun/cgroup"
	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/internal/procfs"
	"github.com/oarbank/svcrun/protocol"
	"golang.org/x/sys/unix"
)

// newContainers is a cgroup Manager on a base of its own, whose containers
// are killed and removed, and the base too, when the test ends. Without a
// writable cgroup v2 the test is skipped, unless REQUIRE_KERNEL_FEATURES=1.
func newContainers(t testing.TB) *cgroup.Manager {
	t.Helper()
	m := cgroup.New(cgroup.Options{Name: fmt.Sprintf("svcrun-extest-%d-%d", os.Getpid(), time.Now().UnixNano())})
	if err := m.Err(); err != nil {
		m.Close()
		if os.Getenv("REQUIRE_KERNEL_FEATURES") == "1" {
			t.Fatalf("REQUIRE_KERNEL_FEATURES=1: %v\n%s", err, m.Support())
		}
		t.Skipf("cgroup v2 not usable here: %v", err)
	}
	t.Cleanup(func() {
		for _, s := range m.Services() {
			if err := m.Kill(s, 5*time.Second); err != nil {
				t.Errorf("cleanup: kill %s: %v", s, err)
			}
			if err := m.Remove(s); err != nil {
				t.Errorf("cleanup: remove %s: %v", s, err)
			}
		}
		m.Close()
		if err := os.Remove(m.Base()); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return m
}

// cgroupRel is the cgroup v2 path of the service's container, as
// /proc/<pid>/cgroup shows it.
func cgroupRel(t *testing.T, m *cgroup.Manager, service string) string {
	t.Helper()
	p, err := m.Path(service)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(p, m.Support().Mount)
}

func (a *adapterFixture) pid(t *testing.T, file string) int {
	t.Helper()
	var pid int
	data, err := os.ReadFile(filepath.Join(a.data, file))
	if err == nil {
		_, err = fmt.Sscan(string(data), &pid)
	}
	if err != nil || pid <= 1 {
		t.Fatalf("%s: %q %v", file, data, err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	return pid
}

func TestContainerOpsRunInTheServiceCgroup(t *testing.T) {
	m := newContainers(t)
	a := newAdapterWith(t, m)
	if mode := a.x.ContainerMode("test/where"); mode != "cgroup" {
		t.Errorf("mode %q", mode)
	}
	if o := a.run(t, 1, "where", false, protocol.OpFingerprint); o.Failure != engine.FailNone {
		t.Fatalf("outcome %+v", o)
	}
	got, err := os.ReadFile(filepath.Join(a.data, "cgroup"))
	if err != nil {
		t.Fatal(err)
	}
	if want := cgroupRel(t, m, "test/where"); strings.TrimSpace(string(got)) != want {
		t.Errorf("the op ran in cgroup %q, want %q", got, want)
	}
	// Its process group is not tracked: the cgroup replaces it.
	if g := a.x.Groups("test/where"); len(g) != 0 {
		t.Errorf("groups %v", g)
	}
	// Limits: pids = 100 in the node configuration; where the pids
	// controller is not enabled (this host's hybrid layout) it is
	// recorded missing, and the op ran all the same.
	st, _ := m.Status("test/where")
	t.Logf("limits here: memory %q, pids %q", st.Memory, st.Pids)
	if sup := m.Support(); sup.Pids.OK && st.Pids != "100" || !sup.Pids.OK && !strings.HasPrefix(st.Pids, "missing: ") {
		t.Errorf("pids limit %q with %+v", st.Pids, sup.Pids)
	}
	if !strings.HasPrefix(st.Memory, "none") && st.Memory != "max" {
		t.Errorf("memory limit %q without mem_gb", st.Memory)
	}
}

// TestContainerHoldsWhatStartLeaves: the daemon, a double-forked grandchild
// and a setsid'd process a start op leaves stay in the container; Freeze
// and Thaw reach them, and Kill ends them all.
func TestContainerHoldsWhatStartLeaves(t *testing.T) {
	m := newContainers(t)
	a := newAdapterWith(t, m)
	if o := a.run(t, 1, "spread", false, protocol.OpStart); o.Failure != engine.FailNone {
		t.Fatalf("start: %+v", o)
	}
	pids := map[string]int{}
	for _, name := range []string{"daemon", "grandchild", "setsid"} {
		pids[name] = a.pid(t, name+".pid")
	}
	want := cgroupRel(t, m, "test/spread")
	for name, pid := range pids {
		if got := procfs.Cgroup(pid); got != want {
			t.Errorf("%s %d in cgroup %q, want %q", name, pid, got, want)
		}
	}
	eventually(t, 10*time.Second, "the setsid'd process leads a group of its own", func() bool {
		pgid, _ := syscall.Getpgid(pids["setsid"])
		return pgid == pids["setsid"]
	})
	if st, _ := m.Status("test/spread"); !st.Populated || !st.Armed || st.Ops != 0 {
		t.Errorf("after start: %+v", st)
	}

	a.x.Freeze(engine.Target{Module: "test", Name: "spread"})
	eventually(
		t, 10*time.Second, "frozen 1 in cgroup.events", func() bool { st, _ := m.Status("test/spread"); return st.Frozen })
	a.x.Thaw(engine.Target{Module: "test", Name: "spread"})
	eventually(
		t, 10*time.Second, "frozen 0 in cgroup.events", func() bool { st, _ := m.Status("test/spread"); return !st.Frozen })

	a.x.Kill(engine.Target{Module: "test", Name: "spread"})
	for name, pid := range pids {
		eventually(t, 10*time.Second, fmt.Sprintf("the %s survived Kill", name), func() bool { return !alive(pid) })
	}
	// The daemon died with no op running: that is an emptied container.
	select {
	case e := <-a.emptied:
		if e.service != "test/spread" {
			t.Errorf("emptied %q", e.service)
		}
	case <-time.After(emptiedGuard):
		t.Errorf("no ContainerEmptied within %v of Kill", emptiedGuard)
	}
}

// TestContainerEmptiedEvent: a daemon killed from outside is posted as
// ContainerEmptied, from its cgroup v2 container or, in the process-group
// fallback, by the reaper (the test binary is the child subreaper, as
// svcrun serve is); ops of a daemon-less service never are. How soon is
// BenchmarkContainerEmptied's to measure: a loaded machine may delay the
// event past any bound a unit test could hold it to.
// A start that leaves its daemon in its cgroup posts ContainerPopulated
// before its OpDone; the process-group fallback never does (a daemon may
// leave its group).
func TestContainerEmptiedEvent(t *testing.T) {
	for _, mode := range []string{"cgroup", "process-group"} {
		t.Run(mode, func(t *testing.T) {
			var m *cgroup.Manager
			if mode == "cgroup" {
				m = newContainers(t)
			}
			a := newAdapterWith(t, m)
			if got := a.x.ContainerMode("test/daemon"); !strings.HasPrefix(got, mode) {
				t.Fatalf("container mode %q", got)
			}
			emptiedEvents(t, a, m)
		})
	}
}

// emptiedGuard only keeps a lost ContainerEmptied from hanging the test:
// the wait ends on the event.
const emptiedGuard = time.Minute

func emptiedEvents(t *testing.T, a *adapterFixture, m *cgroup.Manager) {
	id := engine.OpID(0)
	for range 5 {
		id++
		if o := a.run(t, id, "where", false, protocol.OpFingerprint); o.Failure != engine.FailNone {
			t.Fatalf("fingerprint: %+v", o)
		}
		if m == nil {
			continue
		}
		if st, _ := m.Status("test/where"); st.Armed || st.Populated {
			t.Fatalf("a daemon-less service after an op: %+v", st)
		}
	}
	const runs = 10
	for i := range runs {
		id++
		if o := a.run(t, id, "daemon", false, protocol.OpStart); o.Failure != engine.FailNone {
			t.Fatalf("start: %+v", o)
		}
		daemon := a.pid(t, "daemon.pid")
		if m != nil {
			if st, _ := m.Status("test/daemon"); !st.Armed {
				t.Fatalf("run %d: a daemon, not armed: %+v", i, st)
			}
			select {
			case s := <-a.populated:
				if s != "test/daemon" {
					t.Fatalf("run %d: populated %q", i, s)
				}
			default:
				t.Fatalf("run %d: no ContainerPopulated before the start's OpDone", i)
			}
		}
		if err := syscall.Kill(daemon, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		select {
		case e := <-a.emptied:
			if e.service != "test/daemon" {
				t.Fatalf("run %d: emptied %q", i, e.service)
			}
		case <-time.After(emptiedGuard):
			t.Fatalf("run %d: no ContainerEmptied within %v of the daemon's kill", i, emptiedGuard)
		}
	}
	// Nothing else was posted: not for the daemon-less service, not twice
	// for the daemon.
	select {
	case e := <-a.emptied:
		t.Errorf("unexpected ContainerEmptied for %s", e.service)
	case s := <-a.populated:
		t.Errorf("unexpected ContainerPopulated for %s", s)
	default:
	}
}

// TestContainerFallbacks: without a working Manager ops run in process
// groups, and ContainerMode says why.
func TestContainerFallbacks(t *testing.T) {
	broken := cgroup.New(cgroup.Options{Parent: "/nonexistent-cgroup"})
	defer broken.Close()
	a := newAdapterWith(t, broken)
	if mode := a.x.ContainerMode("test/daemon"); !strings.HasPrefix(mode, "process-group: ") {
		t.Errorf("mode %q", mode)
	}
	if o := a.run(t, 1, "daemon", false, protocol.OpStart); o.Failure != engine.FailNone {
		t.Fatalf("start: %+v", o)
	}
	daemon := a.pid(t, "daemon.pid")
	if g := a.x.Groups("test/daemon"); len(g) != 1 {
		t.Errorf("groups %v", g)
	}
	a.x.Kill(engine.Target{Module: "test", Name: "daemon"})
	eventually(t, 10*time.Second, "the daemon survived Kill", func() bool { return !alive(daemon) })
	if m := newAdapter(t).x.ContainerMode("test/daemon"); !strings.HasPrefix(m, "process-group: ") {
		t.Errorf("mode without Containers: %q", m)
	}
}

// TestContainerRemovedUnderAService: a container removed behind svcrun's
// back (by another svcrun with the same node_id) fails the clone with
// ENOENT; the container is re-created and the op runs in it, and so do the
// next ones.
func TestContainerRemovedUnderAService(t *testing.T) {
	m := newContainers(t)
	a := newAdapterWith(t, m)
	if o := a.run(t, 1, "where", false, protocol.OpFingerprint); o.Failure != engine.FailNone {
		t.Fatal(o)
	}
	p, _ := m.Path("test/where")
	if err := syscall.Rmdir(p); err != nil {
		t.Fatal(err)
	}
	for id := engine.OpID(2); id <= 3; id++ {
		os.Remove(filepath.Join(a.data, "cgroup"))
		if o := a.run(t, id, "where", false, protocol.OpFingerprint); o.Failure != engine.FailNone {
			t.Fatalf("op %d after the container was removed: %+v", id, o)
		}
		got, _ := os.ReadFile(filepath.Join(a.data, "cgroup"))
		if strings.TrimSpace(string(got)) != cgroupRel(t, m, "test/where") {
			t.Errorf("op %d ran in cgroup %q, not in the re-created container", id, got)
		}
	}
	if mode := a.x.ContainerMode("test/where"); mode != "cgroup" {
		t.Errorf("mode %q", mode)
	}

	// Removed with its base: it cannot be re-created, the op runs in a
	// process group, and the mode names the removal, not the executable.
	for _, dir := range []string{p, filepath.Dir(p), m.Base()} {
		if err := syscall.Rmdir(dir); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { syscall.Mkdir(m.Base(), 0o755) }) // for newContainers' cleanup
	if o := a.run(t, 4, "where", false, protocol.OpFingerprint); o.Failure != engine.FailNone {
		t.Fatalf("op after the base was removed: %+v", o)
	}
	want := fmt.Sprintf(
		"process-group: clone into %s failed: the process container %s of test/where was removed (by another svcrun with "+
			"the same node_id?); re-create it: ", p, p)
	if mode := a.x.ContainerMode("test/where"); !strings.HasPrefix(mode, want) {
		t.Errorf("mode %q, want %q...", mode, want)
	}
}

// TestStartAfterCrashFindsNoZombie: the retry of a crashed daemon, started
// as soon as its container emptied, does not find the daemon's zombie: a
// start that checks its pid file with kill -0 starts a new daemon instead
// of answering "already running". The test binary runs itself again as a
// child subreaper whose reaper goroutine never runs, so the zombie stays
// until the start reaps it: what a reaper busy elsewhere (waiting for the
// owner of another child) leaves for milliseconds.
func TestStartAfterCrashFindsNoZombie(t *testing.T) {
	if os.Getenv("EXECUTOR_TEST_SUBREAPER_ONLY") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestStartAfterCrashFindsNoZombie$", "-test.v")
		cmd.Env = append(os.Environ(), "EXECUTOR_NO_REAPER=1", "EXECUTOR_TEST_SUBREAPER_ONLY=1")
		// Started as every child of a subreaper must be (this test
		// process is one, with its reaper running), or the reaper could
		// take its exit status.
		var b bytes.Buffer
		cmd.Stdout, cmd.Stderr = &b, &b
		err := RunCmd(cmd)
		if err != nil {
			t.Fatalf("%v\n%s", err, b.String())
		}
		if strings.Contains(b.String(), "--- SKIP") {
			t.Skipf("%s", b.String())
		}
		return
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	a := newAdapterWith(t, newContainers(t))
	if o := a.run(t, 1, "pidfile", false, protocol.OpStart); o.Failure != engine.FailNone || !o.Result.OpResult.Changed {
		t.Fatalf("first start: %+v", o)
	}
	daemon := a.pid(t, "pidfile.pid")
	if err := syscall.Kill(daemon, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.emptied:
	case <-time.After(60 * time.Second):
		t.Fatal("no ContainerEmptied after the daemon's kill")
	}
	o := a.run(t, 2, "pidfile", false, protocol.OpStart)
	if o.Failure != engine.FailNone || !o.Result.OpResult.Changed {
		t.Fatalf(
			"the start after the crash: %+v (%q): it took the dead daemon for a running one", o, o.Result.OpResult.Message)
	}
	if next := a.pid(t, "pidfile.pid"); next == daemon || !alive(next) {
		t.Errorf("the new daemon %d (the dead one %d) is not running", next, daemon)
	}
}
