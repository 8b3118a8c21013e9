package testhost

import (
	"os"
	"os/exec"
	"regexp"
	"syscall"
	"testing"

	"github.com/oarbank/svcrun/cgroup"
)

func TestNodeIDsDiffer(t *testing.T) {
	a, b := NodeID("t"), NodeID("t")
	if a == b {
		t.Errorf("two node ids %q", a)
	}
	// docs/node-config.md's node_id, and a cgroup name once prefixed.
	if re := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$`); !re.MatchString(a) {
		t.Errorf("node id %q is not valid", a)
	}
}

// TestRemoveBaseRemovesOnlyItsOwn: the base of the node id goes, with the
// process that ran in it; the base of another node id stays.
func TestRemoveBaseRemovesOnlyItsOwn(t *testing.T) {
	mine, other := NodeID("rm"), NodeID("keep")
	m := cgroup.New(cgroup.Options{NodeID: mine})
	if m.Err() != nil {
		t.Skipf("no cgroup v2 containers here: %v", m.Err())
	}
	keep := cgroup.New(cgroup.Options{NodeID: other})
	t.Cleanup(func() {
		keep.Close()
		RemoveTree(t, keep.Base())
	})
	fd, err := m.OpStart("mod/svc")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "300")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	err = cmd.Start()
	syscall.Close(fd)
	if err != nil {
		t.Fatal(err)
	}
	m.OpEnd("mod/svc")
	m.Close()
	RemoveBase(t, mine)
	if err := cmd.Wait(); err == nil {
		t.Error("the process in the base was not killed")
	}
	if _, err := os.Stat(m.Base()); !os.IsNotExist(err) {
		t.Errorf("%s stays: %v", m.Base(), err)
	}
	if _, err := os.Stat(keep.Base()); err != nil {
		t.Errorf("another node's base went: %v", err)
	}
}
