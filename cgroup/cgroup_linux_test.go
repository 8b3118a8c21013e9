package cgroup

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oarbank/svcrun/internal/procfs"
)

func TestParseMountinfo(t *testing.T) {
	data := []byte(`31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime shared:5 - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
50 23 0:40 /sub /mnt/with\040space rw - cgroup2 cgroup2 rw,nsdelegate
`)
	ms := parseMountinfo(data)
	if len(ms) != 5 {
		t.Fatalf("%d entries: %+v", len(ms), ms)
	}
	if m := cgroup2Mount(ms); m == nil || m.point != "/sys/fs/cgroup/unified" {
		t.Errorf("cgroup2 mount %+v", m)
	}
	if ms[4].point != "/mnt/with space" || ms[4].root != "/sub" || ms[2].superOpts != "rw,pids" {
		t.Errorf("entries %+v", ms)
	}
	// /sys/fs/cgroup wins when it is cgroup2.
	ms = parseMountinfo(
		[]byte("41 31 0:38 / /x rw - cgroup2 cgroup2 rw\n42 1 0:39 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"))
	if m := cgroup2Mount(ms); m == nil || m.point != "/sys/fs/cgroup" {
		t.Errorf("cgroup2 mount %+v", m)
	}
}

func TestParseOwnCgroup(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"9:name=systemd:/\n4:memory:/x\n0::/\n", "/", ""},
		{"0::/system.slice/svcrun.service\n", "/system.slice/svcrun.service", ""},
		{"4:memory:/x\n", "", "no cgroup v2 line"},
	} {
		got, err := parseOwnCgroup([]byte(tc.in))
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("parseOwnCgroup(%q) = %q, %v", tc.in, got, err)
		}
	}
}

func TestParseEvents(t *testing.T) {
	p, f := parseEvents([]byte("populated 1\nfrozen 0\n"), false, true)
	if !p || f {
		t.Errorf("populated %v frozen %v", p, f)
	}
	p, f = parseEvents([]byte("populated 0\n"), true, true) // no freezer: frozen kept
	if p || !f {
		t.Errorf("populated %v frozen %v", p, f)
	}
}

func TestServiceNames(t *testing.T) {
	for _, s := range []string{"m/s", "a-1/b-2"} {
		if _, _, err := splitService(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	for _, s := range []string{"", "m", "m/", "/s", "m/s/x", "M/s", "m/../s", "m/.x", "m/-s", "m/a.b", "../../x/s"} {
		if _, _, err := splitService(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
	if _, err := (Options{Name: "../x"}).baseName(); err == nil {
		t.Error("base name ../x accepted")
	}
	if n, _ := (Options{NodeID: "n1"}).baseName(); n != "svcrun-n1" {
		t.Errorf("base name %q", n)
	}
}

// TestLocateCreatesNothing: Locate names the base a Manager of the same
// Options uses, and leaves the host as it found it.
func TestLocateCreatesNothing(t *testing.T) {
	o := Options{NodeID: fmt.Sprintf("locate-%d-%d", os.Getpid(), time.Now().UnixNano())}
	s, err := Locate(o)
	if err != nil {
		t.Skipf("no cgroup v2 base to locate here: %v", err)
	}
	if filepath.Base(s.Base) != "svcrun-"+o.NodeID || filepath.Dir(s.Base) != s.Parent {
		t.Errorf("Locate: base %s, parent %s", s.Base, s.Parent)
	}
	if _, err := os.Stat(s.Base); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Locate left %s: %v", s.Base, err)
	}
	m := newManagerWith(t, o)
	if m.Base() != s.Base {
		t.Errorf("Locate says %s, the Manager uses %s", s.Base, m.Base())
	}
}

// ----- Real cgroups. -----

// newManager returns a Manager on a base of its own, removed (with every
// container, killed) when the test ends; it skips the test where cgroup v2
// is not writable, unless REQUIRE_KERNEL_FEATURES=1.
func newManager(t testing.TB, onEmptied func(string)) *Manager {
	t.Helper()
	name := fmt.Sprintf("svcrun-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	return newManagerWith(t, Options{Name: name, OnEmptied: onEmptied})
}

// newManagerWith is newManager for o, which names the base. A base held by
// another Manager fails the test: that is never the host's fault.
func newManagerWith(t testing.TB, o Options) *Manager {
	t.Helper()
	m := usable(t, o)
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

// usable is New(o), skipping the test where cgroup v2 is not writable
// (unless REQUIRE_KERNEL_FEATURES=1); the caller cleans up.
func usable(t testing.TB, o Options) *Manager {
	t.Helper()
	m := New(o)
	if err := m.Err(); err != nil {
		m.Close()
		if errors.Is(err, ErrInUse) {
			t.Fatal(err)
		}
		if os.Getenv("REQUIRE_KERNEL_FEATURES") == "1" {
			t.Fatalf("REQUIRE_KERNEL_FEATURES=1: %v\n%s", err, m.Support())
		}
		t.Skipf("cgroup v2 not usable here: %v", err)
	}
	return m
}

// spawn starts sh -c script in the service's container and waits for it.
func spawn(t *testing.T, m *Manager, service, script string) string {
	t.Helper()
	fd, err := m.OpStart(service)
	if err != nil {
		t.Fatal(err)
	}
	defer m.OpEnd(service)
	defer unix.Close(fd)
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd, Setpgid: true}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	return string(out)
}

func pidsOf(t *testing.T, out string) []int {
	t.Helper()
	var pids []int
	for _, f := range strings.Fields(out) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("pid %q: %v", f, err)
		}
		pids = append(pids, pid)
		t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	}
	return pids
}

// stat returns the state letter of pid and its utime, or 0 if it is gone
// or a zombie.
func stat(pid int) (byte, string) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, ""
	}
	i := strings.LastIndexByte(string(data), ')')
	f := strings.Fields(string(data[i+2:]))
	if f[0] == "Z" {
		return 0, ""
	}
	return f[0][0], f[11]
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 10s: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestProbeHere(t *testing.T) {
	s := ProbeWith(Options{Name: fmt.Sprintf("svcrun-probe-%d", os.Getpid())})
	t.Logf("\n%s", s)
	if !s.Available() {
		if os.Getenv("REQUIRE_KERNEL_FEATURES") == "1" {
			t.Fatalf("no cgroup v2 process containers: %s", s.Containers.Reason)
		}
		t.Skip(s.Containers.Reason)
	}
	if _, err := os.Stat(s.Base); !os.IsNotExist(err) {
		t.Errorf("the probe left %s (%v)", s.Base, err)
	}
	for _, c := range []struct {
		name string
		f    Feature
	}{{"memory", s.Memory}, {"pids", s.Pids}} {
		if !slices.Contains(s.Controllers, c.name) && (c.f.OK || c.f.Reason == "") {
			t.Errorf("%s not in %v, yet %+v", c.name, s.Controllers, c.f)
		}
	}
	if len(s.Missing()) == 0 != (s.Kill.OK && s.Freeze.OK && s.Memory.OK && s.Pids.OK && s.MemberExits.OK) {
		t.Errorf("Missing %q for %+v", s.Missing(), s)
	}
}

func TestContainerFreezeThawKillRemove(t *testing.T) {
	m := newManager(t, nil)
	const svc = "mod/svc"
	dir, _ := m.Path(svc)
	rel := strings.TrimPrefix(dir, m.Support().Mount)
	// A busy loop (running, R) and a double-forked, setsid'd sleeper that
	// has left the op's process group.
	pids := pidsOf(t, spawn(t, m, svc, `
		sh -c 'while :; do :; done' </dev/null >/dev/null 2>&1 & echo $!
		( setsid sh -c 'sleep 1000' </dev/null >/dev/null 2>&1 & echo $! ) | cat`))
	busy, escaped := pids[0], pids[1]
	for _, pid := range pids {
		if got := procfs.Cgroup(pid); got != rel {
			t.Errorf("pid %d in cgroup %q, want %q", pid, got, rel)
		}
	}
	eventually(t, "the setsid'd sleeper leads its own session", func() bool {
		sid, _ := unix.Getsid(escaped)
		return sid == escaped
	})
	if procs, _ := m.Procs(svc); len(procs) < 2 {
		t.Errorf("procs %v", procs)
	}

	if err := m.Freeze(svc, DefaultWait); err != nil {
		t.Fatal(err)
	}
	if st, _ := m.Status(svc); !st.Frozen || !st.Populated {
		t.Errorf("after Freeze: %+v", st)
	}
	if state, _ := stat(busy); state == 'R' {
		t.Errorf("the busy loop is running (%c) in a frozen container", state)
	}
	if err := m.Thaw(svc, DefaultWait); err != nil {
		t.Fatal(err)
	}
	if st, _ := m.Status(svc); st.Frozen {
		t.Errorf("after Thaw: %+v", st)
	}
	eventually(t, "the busy loop runs again", func() bool { s, _ := stat(busy); return s == 'R' })

	if err := m.Remove(svc); err == nil {
		t.Fatal("Remove of a populated container succeeded")
	}
	if err := m.Kill(svc, DefaultWait); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		eventually(t, fmt.Sprintf("pid %d survived Kill", pid), func() bool { s, _ := stat(pid); return s == 0 })
	}
	if err := m.Remove(svc); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s still there: %v", dir, err)
	}
	if _, err := os.Stat(filepath.Dir(dir)); !os.IsNotExist(err) {
		t.Errorf("the module cgroup %s still there: %v", filepath.Dir(dir), err)
	}
	if len(m.Services()) != 0 {
		t.Errorf("services %v", m.Services())
	}
}

func TestLimitsWhereControllersAre(t *testing.T) {
	m := newManager(t, nil)
	sup := m.Support()
	st, err := m.Limits("mod/lim", 0.5, 64)
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := m.Path("mod/lim")
	t.Logf("limits: %+v", st)
	check := func(f Feature, got, file, want string) {
		t.Helper()
		data, rerr := os.ReadFile(filepath.Join(dir, file))
		switch {
		case f.OK && (got != want || strings.TrimSpace(string(data)) != want):
			t.Errorf("%s: status %q, file %q (%v), want %s", file, got, data, rerr, want)
		case !f.OK && (!strings.HasPrefix(got, "missing: ") || !os.IsNotExist(rerr)):
			t.Errorf("%s: status %q (file: %v), controller missing: %s", file, got, rerr, f.Reason)
		}
	}
	check(sup.Memory, st.Memory, "memory.max", "536870912")
	check(sup.Pids, st.Pids, "pids.max", "64")
	if s, _ := m.Status("mod/lim"); s.Memory != st.Memory || s.Pids != st.Pids {
		t.Errorf("status %+v", s)
	}
}

// TestEmptiedEvent: a daemon that outlived its op and is then killed from
// outside is reported; ops that leave nothing are never reported. How soon
// is for executor's BenchmarkContainerEmptied/cgroup to measure (this
// event, through the executor): a loaded machine may delay it past any
// bound a unit test could hold it to.
func TestEmptiedEvent(t *testing.T) {
	var mu sync.Mutex
	got := map[string]chan time.Time{"mod/daemon": make(chan time.Time, 10), "mod/nodaemon": make(chan time.Time, 10)}
	m := newManager(t, func(s string) {
		mu.Lock()
		defer mu.Unlock()
		got[s] <- time.Now()
	})
	for range 5 {
		spawn(t, m, "mod/nodaemon", "true")
	}
	if st, _ := m.Status("mod/nodaemon"); st.Armed || st.Populated {
		t.Fatalf("a daemon-less container: %+v", st)
	}
	// Only keeps a lost event from hanging the test: the wait ends on it.
	const guard = time.Minute
	for i := range 10 {
		pid := pidsOf(t, spawn(t, m, "mod/daemon", "sleep 1000 </dev/null >/dev/null 2>&1 & echo $!"))[0]
		if st, _ := m.Status("mod/daemon"); !st.Armed {
			t.Fatalf("run %d: not armed with a daemon: %+v", i, st)
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("run %d: kill the daemon %d: %v", i, pid, err)
		}
		select {
		case <-got["mod/daemon"]:
		case <-time.After(guard):
			t.Fatalf("run %d: no emptied event within %v of the daemon's kill", i, guard)
		}
		if st, _ := m.Status("mod/daemon"); st.Armed {
			t.Errorf("run %d: still armed after the event: %+v", i, st)
		}
	}
	select {
	case <-got["mod/nodaemon"]:
		t.Error("emptied event for a daemon-less service")
	default:
	}
	select {
	case <-got["mod/daemon"]:
		t.Error("a second emptied event")
	default:
	}
}

// TestSignalFallbacks: without cgroup.kill (before 5.14) Kill signals every
// pid of cgroup.procs until it is empty; without cgroup.freeze (before
// 5.2) Freeze and Thaw send SIGSTOP and SIGCONT.
func TestSignalFallbacks(t *testing.T) {
	m := newManager(t, nil)
	const svc = "mod/old"
	m.sup.Kill = Feature{Reason: "pretend Linux 5.13"}
	script := `sleep 1000 </dev/null >/dev/null 2>&1 & echo $!
		( setsid sh -c 'sleep 1000 & wait' </dev/null >/dev/null 2>&1 & echo $! ) | cat`
	pids := pidsOf(t, spawn(t, m, svc, script))
	if err := m.Kill(svc, DefaultWait); err != nil {
		t.Fatal(err)
	}
	if procs, _ := m.Procs(svc); len(procs) != 0 {
		t.Errorf("after Kill: %v", procs)
	}
	for _, pid := range pids {
		eventually(t, fmt.Sprintf("pid %d survived Kill", pid), func() bool { s, _ := stat(pid); return s == 0 })
	}
	if st, _ := m.Status(svc); st.Frozen {
		t.Errorf("left frozen by the kill fallback: %+v", st)
	}

	m.sup.Freeze = Feature{Reason: "pretend Linux 5.1"}
	pids = pidsOf(t, spawn(t, m, svc, script))
	if err := m.Freeze(svc, 0); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		eventually(t, fmt.Sprintf("pid %d not stopped", pid), func() bool { s, _ := stat(pid); return s == 'T' })
	}
	if err := m.Thaw(svc, 0); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		eventually(t, fmt.Sprintf("pid %d still stopped", pid), func() bool { s, _ := stat(pid); return s != 'T' })
	}
	if err := m.Kill(svc, DefaultWait); err != nil {
		t.Fatal(err)
	}
}

// TestNoDescriptorPerContainer: a Manager holds no descriptor per
// container. Every op's fork copies svcrun's descriptor table and its exec
// closes it, in the module's one confining thread, so each descriptor held
// per service slows every spawn of a large node.
func TestNoDescriptorPerContainer(t *testing.T) {
	m := newManager(t, nil)
	const n = 50
	count := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	before := count()
	for i := range n {
		fd, err := m.Create(fmt.Sprintf("mod/fd%d", i))
		if err != nil {
			t.Fatal(err)
		}
		unix.Close(fd) // the caller's
	}
	if held := count() - before; held > 0 {
		t.Errorf("%d containers hold %d descriptors, want none", n, held)
	}
	// cgroup.events is still read: a process that outlives its op arms
	// the container.
	out := spawn(t, m, "mod/fd0", "sleep 600 </dev/null >/dev/null 2>&1 & echo $!")
	if len(pidsOf(t, out)) != 1 {
		t.Fatalf("spawn printed %q", out)
	}
	if st, ok := m.Status("mod/fd0"); !ok || !st.Populated || !st.Armed {
		t.Errorf("status of mod/fd0 with its daemon running: %+v, %v", st, ok)
	}
	// A single-process daemon's death empties its container: no pidfd
	// watches it.
	if got := m.Members("mod/fd0"); len(got) != 0 {
		t.Errorf("a single-process daemon watched by pidfd: %v", got)
	}
}

// TestStraysAndTerminate: the containers an earlier Manager left, of
// services the next one does not know, are listed and ended without an
// op: SIGTERM, thawed first, and a kill for what ignores it; a known one
// is not listed and keeps its daemon.
func TestStraysAndTerminate(t *testing.T) {
	o := Options{Name: fmt.Sprintf("svcrun-test-%d-%d", os.Getpid(), time.Now().UnixNano())}
	first := usable(t, o)
	const daemon = "sleep 1000 </dev/null >/dev/null 2>&1 & echo $!"
	pid := map[string]int{}
	for svc, script := range map[string]string{
		"gone/polite":   daemon,
		"gone/frozen":   daemon,
		"gone/stubborn": `sh -c 'trap "" TERM; while :; do sleep 1; done' </dev/null >/dev/null 2>&1 & echo $!`,
		"kept/svc":      daemon,
		"gone/empty":    "true",
	} {
		if pids := pidsOf(t, spawn(t, first, svc, script)); len(pids) > 0 {
			pid[svc] = pids[0]
		}
	}
	if err := first.Freeze("gone/frozen", DefaultWait); err != nil {
		t.Fatal(err)
	}
	first.Close() // svcrun exits: the containers stay

	m := newManagerWith(t, o)
	strays, err := m.Strays(map[string]bool{"kept/svc": true})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"gone/empty", "gone/frozen", "gone/polite", "gone/stubborn"}; !slices.Equal(strays, want) {
		t.Fatalf("strays %v, want %v", strays, want)
	}
	for _, c := range []struct {
		svc    string
		grace  time.Duration
		killed bool
	}{
		{"gone/polite", time.Minute, false},
		{"gone/frozen", time.Minute, false},
		{"gone/stubborn", 100 * time.Millisecond, true}, // ignores SIGTERM: killed whatever the load
		{"gone/empty", time.Minute, false},
	} {
		killed, err := m.Terminate(c.svc, c.grace)
		if err != nil || killed != c.killed {
			t.Errorf("Terminate(%s) = %v, %v; want killed %v", c.svc, killed, err, c.killed)
		}
		if p := pid[c.svc]; p != 0 {
			if s, _ := stat(p); s != 0 {
				t.Errorf("%s: pid %d still runs (%c) after Terminate", c.svc, p, s)
			}
		}
		if err := m.Remove(c.svc); err != nil {
			t.Errorf("remove %s: %v", c.svc, err)
		}
	}
	if strays, err := m.Strays(map[string]bool{"kept/svc": true}); err != nil || len(strays) != 0 {
		t.Errorf("strays after removal: %v, %v", strays, err)
	}
	if s, _ := stat(pid["kept/svc"]); s == 0 {
		t.Errorf("the known service's daemon was ended")
	}
	if _, err := m.Procs("kept/svc"); err != nil { // adopted, for the cleanup
		t.Fatal(err)
	}
}

// pidfdsInTable counts the pidfds in the descriptor table of the process's
// first thread, which every thread but the pidfds' own shares.
func pidfdsInTable(t *testing.T) int {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fd", os.Getpid())
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if link, _ := os.Readlink(filepath.Join(dir, e.Name())); link == "anon_inode:[pidfd]" {
			n++
		}
	}
	return n
}

// TestMemberExitedEvent: a master that dies while its workers live on in
// the container is told at once (the container does not empty), and the
// watched processes are re-picked among those left; a process that came
// later and is not among the oldest is not watched, so its death tells
// nothing.
func TestMemberExitedEvent(t *testing.T) {
	const svc = "mod/master"
	exited := make(chan string, 10)
	emptied := make(chan string, 10)
	m := newManager(t, func(s string) { emptied <- s })
	if !m.Support().MemberExits.OK {
		if os.Getenv("REQUIRE_KERNEL_FEATURES") == "1" {
			t.Fatalf("REQUIRE_KERNEL_FEATURES=1: %s", m.Support().MemberExits)
		}
		t.Skipf("no pidfds here: %s", m.Support().MemberExits)
	}
	m.SetOnMemberExited(func(s string, _ bool) { exited <- s })
	// The master prints its pid, then its workers'.
	out := spawn(t, m, svc, `sh -c 'echo $$; sleep 1000 >/dev/null & echo $!; sleep 1000 >/dev/null & echo $!; `+
		`exec >/dev/null; wait' </dev/null 2>/dev/null &`)
	pids := pidsOf(t, out)
	if len(pids) != 3 {
		t.Fatalf("spawn printed %q", out)
	}
	master, workers := pids[0], pids[1:]
	if got := m.Members(svc); !slices.Equal(got, []int{master, workers[0]}) {
		t.Fatalf("watched %v, want the master %d and its first worker %d", got, master, workers[0])
	}
	// Every fork copies the descriptor table it is made from: the
	// pidfds are in the watching thread's own, not in the process's.
	if n := pidfdsInTable(t); n != 0 {
		t.Errorf("%d pidfds in the process's descriptor table, want none", n)
	}
	// A process that came later is not among the oldest: it is not
	// watched, so its death is no event.
	late := pidsOf(t, spawn(t, m, svc, "sleep 1000 </dev/null >/dev/null 2>&1 & echo $!"))[0]
	if got := m.Members(svc); slices.Contains(got, late) {
		t.Fatalf("watched %v, with the late %d", got, late)
	}
	if err := syscall.Kill(late, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, fmt.Sprintf("pid %d survived its kill", late), func() bool { s, _ := stat(late); return s == 0 })

	if err := syscall.Kill(master, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Only keeps a lost event from hanging the test: the wait ends on it.
	const guard = time.Minute
	select {
	case s := <-exited:
		if s != svc {
			t.Fatalf("member exit told for %q, want %q", s, svc)
		}
	case <-time.After(guard):
		t.Fatalf("no member exit within %v of the master's kill", guard)
	}
	// The late process's kill came first: had it been told, it would be
	// the one received above or queued behind it.
	select {
	case s := <-exited:
		t.Errorf("a second member exit, for %q", s)
	default:
	}
	// The youngest of the two workers left is not watched: its death
	// alone would empty the container.
	if got := m.Members(svc); !slices.Equal(got, workers[:1]) {
		t.Errorf("watched %v after the master's death, want the first worker %v", got, workers[:1])
	}
	if st, _ := m.Status(svc); !st.Populated || !st.Armed {
		t.Errorf("the workers' container: %+v", st)
	}
	select {
	case s := <-emptied:
		t.Errorf("emptied event for %q while the workers live", s)
	default:
	}
	// Ending the container on purpose tells no member exit.
	if err := m.Kill(svc, DefaultWait); err != nil {
		t.Fatal(err)
	}
	if got := m.Members(svc); len(got) != 0 {
		t.Errorf("still watched after the kill: %v", got)
	}
	select {
	case s := <-exited:
		t.Errorf("member exit told for %q after a kill", s)
	default:
	}
}
