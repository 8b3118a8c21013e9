package procfs

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
)

func TestFieldsOfThisProcess(t *testing.T) {
	f, ok := Fields(os.Getpid())
	if !ok {
		t.Fatal("no stat for this process")
	}
	if ppid, _ := strconv.Atoi(string(f[1])); ppid != os.Getppid() {
		t.Errorf("parent %s, want %d", f[1], os.Getppid())
	}
	if f[0][0] != 'R' && f[0][0] != 'S' {
		t.Errorf("state %q", f[0])
	}
}

// TestStartTicksNamesOneProcess: a process's start time does not change,
// and a later process's is not earlier; a process gone has none.
func TestStartTicksNamesOneProcess(t *testing.T) {
	self, ok := StartTicks(os.Getpid())
	if again, ok2 := StartTicks(os.Getpid()); !ok || !ok2 || again != self {
		t.Fatalf("start time %d, %v then %d, %v", self, ok, again, ok2)
	}
	cmd := exec.Command("sleep", "1000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child, ok := StartTicks(cmd.Process.Pid)
	if !ok || child < self {
		t.Errorf("child's start time %d, %v; this process's %d", child, ok, self)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if _, ok := StartTicks(cmd.Process.Pid); ok {
		t.Errorf("a reaped process still has a start time")
	}
}

func TestNoSuchProcess(t *testing.T) {
	if _, ok := Fields(-1); ok {
		t.Error("Fields(-1) ok")
	}
}

// TestCgroupIsInherited: a child starts in its parent's cgroup; a process
// gone has none.
func TestCgroupIsInherited(t *testing.T) {
	self := Cgroup(os.Getpid())
	if self == "" {
		t.Skip("no cgroup v2 line in /proc/self/cgroup")
	}
	cmd := exec.Command("sleep", "1000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if got := Cgroup(cmd.Process.Pid); got != self {
		t.Errorf("child in %q, parent in %q", got, self)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if got := Cgroup(cmd.Process.Pid); got != "" {
		t.Errorf("a reaped process in %q", got)
	}
}
