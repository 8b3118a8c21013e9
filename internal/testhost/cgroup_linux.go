package testhost

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oarbank/svcrun/cgroup"
)

// RemoveBase removes the base cgroup that a svcrun of node id nodeID,
// started by this process or a child of it, left (svcrun keeps its
// containers for the next start to adopt), killing what still runs there.
// It finds the base where that svcrun does, under this process's own
// cgroup in the cgroup2 mount (cgroup.Locate), not at an assumed root, and
// touches nothing else: a base of another node id is another svcrun's.
func RemoveBase(t testing.TB, nodeID string) {
	t.Helper()
	s, err := cgroup.Locate(cgroup.Options{NodeID: nodeID})
	if err != nil {
		return // no cgroup v2: the svcrun made no base
	}
	RemoveTree(t, s.Base)
}

// RemoveTree kills every process of the cgroup dir and its descendants and
// removes them, deepest first; a dir that does not exist is no error.
func RemoveTree(t testing.TB, dir string) {
	t.Helper()
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return
	}
	killTree(dir)
	if !waitEmpty(dir, 10*time.Second) {
		t.Logf("cleanup: cgroup %s still holds processes", dir)
	}
	var dirs []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := unix.Rmdir(dirs[i]); err != nil && !errors.Is(err, unix.ENOENT) {
			t.Logf("cleanup: %v", err)
		}
	}
}

// killTree kills the processes of dir's subtree: with cgroup.kill (Linux
// 5.14) at once, else by SIGKILL to every pid of every cgroup.procs, after
// a thaw (a frozen process dies only once thawed).
func killTree(dir string) {
	if os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0) == nil {
		return
	}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		os.WriteFile(filepath.Join(p, "cgroup.freeze"), []byte("0"), 0)
		data, _ := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		return nil
	})
}

// waitEmpty waits, at most bound, until cgroup.events of dir says no
// process is left in its subtree: the kernel empties a killed cgroup
// asynchronously and tells each change of the file to poll(2) as
// POLLPRI. A process that escaped the first kill (a fork under way) is
// killed again at each change.
func waitEmpty(dir string, bound time.Duration) bool {
	events := filepath.Join(dir, "cgroup.events")
	fd, err := unix.Open(events, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return true // gone already
	}
	defer unix.Close(fd)
	deadline := time.Now().Add(bound)
	buf := make([]byte, 256)
	for {
		n, err := unix.Pread(fd, buf, 0)
		if err != nil || bytes.Contains(buf[:n], []byte("populated 0")) {
			return err == nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		killTree(dir)
		// The timeout bounds one wait; the change itself wakes it.
		unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLPRI}}, int(min(left, time.Second).Milliseconds())+1)
	}
}
