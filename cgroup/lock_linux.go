package cgroup

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/oarbank/svcrun/internal/flock"

	"golang.org/x/sys/unix"
)

// xattrOwner, on the base, records "<pid> <data dir>" of the svcrun that
// took its lock last (user xattrs on cgroupfs: Linux 5.7 and later).
const xattrOwner = "user.svcrun.owner"

// lockBase takes an exclusive flock of the base directory, held through the
// returned descriptor until it is closed (a killed svcrun's lock goes with
// it). O_CLOEXEC: the daemons that ops leave must not keep it.
func lockBase(o Options, base string) (int, error) {
	fd, err := unix.Open(base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("cgroup: open %s to lock it: %w", base, err)
	}
	for {
		err = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		unix.Close(fd)
		if errors.Is(err, unix.EWOULDBLOCK) {
			pid, dataDir := baseHolder(base)
			return -1, newInUseError(o, base, pid, dataDir)
		}
		return -1, fmt.Errorf("cgroup: lock %s: %w", base, err)
	}
	// Best effort: without it a refused svcrun names only the pid.
	_ = unix.Setxattr(base, xattrOwner, []byte(strconv.Itoa(os.Getpid())+" "+o.DataDir), 0)
	return fd, nil
}

// baseHolder is the pid holding the base's lock (from /proc/locks) and its
// data dir (from the base's record, when that holder wrote it); 0 and ""
// where not known. A holder in another pid namespace has no pid in
// /proc/locks: then the record alone names it.
func baseHolder(base string) (int, string) {
	pid, _ := flock.Holder(base)
	buf := make([]byte, 4096)
	n, err := unix.Getxattr(base, xattrOwner, buf)
	if err != nil {
		return pid, ""
	}
	p, dataDir, _ := strings.Cut(string(buf[:n]), " ")
	recorded, err := strconv.Atoi(p)
	switch {
	case err != nil:
		return pid, ""
	case pid == 0:
		return recorded, dataDir
	case recorded != pid: // the record of an earlier holder
		return pid, ""
	}
	return pid, dataDir
}

// inUseError is an ErrInUse for people: whose containers, held by whom,
// and what to do.
type inUseError struct{ msg string }

func (e *inUseError) Error() string { return e.msg }
func (e *inUseError) Unwrap() error { return ErrInUse }

// newInUseError says the base of o is held by another svcrun, with its pid
// and data dir where they are known (0 and "" otherwise).
func newInUseError(o Options, base string, pid int, dataDir string) error {
	whose, fix := fmt.Sprintf("the process containers %s are", base), "give this svcrun another base cgroup name"
	if o.Name == "" && o.NodeID != "" {
		whose, fix = fmt.Sprintf(
			"the process containers of node_id %s (%s) are", o.NodeID, base), "give this svcrun its own node_id"
	}
	var holder []string
	if pid > 0 {
		holder = append(holder, fmt.Sprintf("pid %d", pid))
	}
	if dataDir != "" {
		holder = append(holder, "data dir "+dataDir)
	}
	by := "another svcrun"
	if len(holder) > 0 {
		by += " (" + strings.Join(holder, ", ") + ")"
	}
	return &inUseError{fmt.Sprintf("%s in use by %s: %s", whose, by, fix)}
}
