package executor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oarbank/svcrun/internal/procfs"
)

// userHZ is the unit of /proc/<pid>/stat's start time: USER_HZ, 100 on
// every architecture svcrun runs on.
const userHZ = 100

// spawnWindow bounds, for an intent without a pid outside a container, how
// long after the intent its op may have been spawned: the spawn follows the
// intent at once, and a wider window would only admit strangers.
const spawnWindow = 5 * time.Second

// bootID names this boot: records of another one name ops that died with
// the machine.
func bootID() (string, error) {
	data, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(data)), nil
}

// bootNanos is CLOCK_BOOTTIME: the clock of /proc start times, which no
// clock step moves.
func bootNanos() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return time.Now().UnixNano() // cannot fail on Linux 2.6.39 and later
	}
	return ts.Nano()
}

// procWait is a leftover op's process: held by its pidfd, which stays its
// own whatever happens to the pid, or before Linux 5.3 (fd -1) watched by
// its pid and start time.
type procWait struct {
	fd int
	p  proc
}

// openProc takes hold of p if it still runs: the pidfd is opened first and
// the start time checked after, so the pidfd cannot be another process's.
func openProc(p proc) (*procWait, error) {
	if p.pid <= 1 {
		return nil, errors.New("no pid")
	}
	fd := -1
	if pidfdSupported() {
		var err error
		if fd, err = unix.PidfdOpen(p.pid, 0); err != nil {
			return nil, err
		}
	}
	if !p.runs() {
		if fd >= 0 {
			unix.Close(fd)
		}
		return nil, errors.New("gone, or its pid is another process's")
	}
	return &procWait{fd: fd, p: p}, nil
}

// runs reports whether p's pid is still p, and not a zombie.
func (p proc) runs() bool {
	f, ok := procfs.Fields(p.pid)
	if !ok || f[0][0] == 'Z' || f[0][0] == 'X' {
		return false
	}
	st, err := strconv.ParseUint(string(f[19]), 10, 64)
	return err == nil && st == p.start
}

func (w *procWait) close() {
	if w.fd >= 0 {
		unix.Close(w.fd)
	}
}

type waitResult int

const (
	waitExited waitResult = iota
	waitTimedOut
	waitCanceled
)

// wait waits for the process to exit, at most d, and no longer than ctx.
// A parent that does not reap it leaves a zombie, which counts as exited.
func (w *procWait) wait(ctx context.Context, d time.Duration) waitResult {
	end := time.Now().Add(max(d, 0))
	for {
		if ctx.Err() != nil {
			return waitCanceled
		}
		left := time.Until(end)
		// Woken now and then to see ctx: svcrun may stop meanwhile.
		slice := min(max(left, 0), 100*time.Millisecond)
		if w.fd < 0 {
			if !w.p.runs() {
				return waitExited
			}
			if left <= 0 {
				return waitTimedOut
			}
			time.Sleep(min(slice, 20*time.Millisecond)) // no pidfd to wait on
			continue
		}
		fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int((slice+time.Millisecond-1)/time.Millisecond))
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return waitExited // cannot happen with a valid pidfd
		case n > 0:
			return waitExited
		case left <= 0:
			return waitTimedOut
		}
	}
}

// findSpawned finds the op of an intent whose pid was never recorded
// (svcrun died between the spawn and the record): a process group leader
// (an op leads its own group) that started after the intent and, in a
// container, is in the service's cgroup, or else runs the op's argv and
// started within spawnWindow of the intent.
func findSpawned(rec opRecord) []proc {
	from := uint64(rec.BeganBoot / (1e9 / userHZ))
	var pids []int
	inCgroup := map[int]bool{}
	if rec.Cgroup != "" {
		if data, err := os.ReadFile(filepath.Join(rec.Cgroup, "cgroup.procs")); err == nil {
			for f := range strings.FieldsSeq(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil {
					pids = append(pids, pid)
					inCgroup[pid] = true
				}
			}
		}
	}
	if ents, err := os.ReadDir("/proc"); err == nil {
		for _, e := range ents {
			if pid, err := strconv.Atoi(e.Name()); err == nil && !inCgroup[pid] {
				pids = append(pids, pid)
			}
		}
	}
	until := from + uint64(spawnWindow/(time.Second/userHZ))
	var out []proc
	for _, pid := range pids {
		f, ok := procfs.Fields(pid)
		if !ok || string(f[2]) != strconv.Itoa(pid) {
			continue // not a group leader
		}
		st, err := strconv.ParseUint(string(f[19]), 10, 64)
		if err != nil || st < from {
			continue
		}
		if inCgroup[pid] || st <= until && runsArgv(pid, rec.Argv, rec.Path) {
			out = append(out, proc{pid: pid, start: st})
		}
	}
	return out
}

// runsArgv reports whether pid's command line is argv: the same arguments
// after argv[0], and before them the program (argv[0] or path by name),
// also where the kernel put an interpreter first (a #! script).
func runsArgv(pid int, argv []string, path string) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || len(argv) == 0 {
		return false
	}
	cmd := strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
	tail := argv[1:]
	if len(cmd) < len(argv) {
		return false
	}
	head := cmd[:len(cmd)-len(tail)]
	for i, a := range tail {
		if cmd[len(head)+i] != a {
			return false
		}
	}
	for _, h := range head {
		if b := filepath.Base(h); b == filepath.Base(argv[0]) || b == filepath.Base(path) {
			return true
		}
	}
	return false
}
