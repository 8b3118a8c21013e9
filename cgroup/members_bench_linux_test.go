package cgroup

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// pidfdsHeld counts the pidfds in the descriptor tables of the process's
// threads (the pidfds' thread has its own).
func pidfdsHeld(b *testing.B) int {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, task := range tasks {
		dir := filepath.Join("/proc/self/task", task.Name(), "fd")
		fds, _ := os.ReadDir(dir) // a thread that ended meanwhile holds none
		for _, fd := range fds {
			if link, _ := os.Readlink(filepath.Join(dir, fd.Name())); link == "anon_inode:[pidfd]" {
				n++
			}
		}
	}
	return n
}

// BenchmarkIdleMembers1000 measures what watching the members of 1,000
// daemons' containers (three processes each, the two oldest watched: 2,000 pidfds) costs: the
// Manager's idle CPU over a window in which nothing exits, and the CPU of
// a fork and exec of /bin/true (every op's spawn copies the descriptor table), each
// with the pidfds held and then with none, in one run:
//
//	go test -run '^$' -bench IdleMembers1000 -benchtime 1x ./cgroup
func BenchmarkIdleMembers1000(b *testing.B) {
	const n, idle, spawns, rounds = 1000, 10 * time.Second, 100, 5
	m := newManager(b, nil)
	if !m.Support().MemberExits.OK {
		b.Skipf("no pidfds here: %s", m.Support().MemberExits)
	}
	for i := range n {
		svc := fmt.Sprintf("mod/d%d", i)
		fd, err := m.OpStart(svc)
		if err != nil {
			b.Fatal(err)
		}
		cmd := exec.Command("/bin/sh", "-c", "for i in 1 2 3; do sleep 1000 </dev/null >/dev/null 2>&1 & done")
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
		err = cmd.Run()
		syscall.Close(fd)
		m.OpEnd(svc)
		if err != nil {
			b.Fatal(err)
		}
	}
	held := 0
	for _, s := range m.Services() {
		held += len(m.Members(s))
	}
	idleCPU := func() float64 {
		var ru0, ru1 syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
		t0 := time.Now()
		time.Sleep(idle) // the window measured, not a synchronization
		wall := time.Since(t0)
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
		cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
		return 100 * cpu.Seconds() / wall.Seconds()
	}
	cpuOf := func(who int) time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(who, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	// spawn is the CPU (svcrun's and the child's) of one fork and exec:
	// the machine's load lengthens the wall time, not this.
	spawn := func() time.Duration {
		c0 := cpuOf(syscall.RUSAGE_SELF) + cpuOf(syscall.RUSAGE_CHILDREN)
		for range spawns {
			if err := exec.Command("/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
		}
		return (cpuOf(syscall.RUSAGE_SELF) + cpuOf(syscall.RUSAGE_CHILDREN) - c0) / spawns
	}
	setHeld := func(held bool) {
		for _, s := range m.Services() {
			c := m.lookup(s)
			c.mu.Lock()
			if held {
				m.members.pickLocked(c)
			} else {
				m.members.dropLocked(c)
			}
			c.mu.Unlock()
		}
		// The thread closes pidfds after dropLocked returns: not in
		// the windows measured without them.
		for t0 := time.Now(); !held && pidfdsHeld(b) > 0; time.Sleep(time.Millisecond) {
			if time.Since(t0) > time.Minute {
				b.Fatalf("%d pidfds still open a minute after they were dropped", pidfdsHeld(b))
			}
		}
	}
	b.ReportMetric(float64(held), "pidfds")
	b.ReportMetric(idleCPU(), "held-idle-cpu-%")
	setHeld(false)
	b.ReportMetric(idleCPU(), "none-idle-cpu-%")
	// Spawns alternate, a load that changes meanwhile weighing on both.
	var withFDs, without time.Duration
	for range rounds {
		setHeld(true)
		withFDs += spawn()
		setHeld(false)
		without += spawn()
	}
	b.ReportMetric(float64(withFDs.Microseconds())/rounds, "held-spawn-cpu-µs")
	b.ReportMetric(float64(without.Microseconds())/rounds, "none-spawn-cpu-µs")
}
