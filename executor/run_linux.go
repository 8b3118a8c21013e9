package executor

import (
	"context"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The Linux engine. The portable one parks two goroutines on the runtime's
// poller and a third in waitid; each wake-up costs a hand-off between
// threads, which the op's bench row shows against a C posix_spawn loop
// (bench/README.md#op; bench/HISTORY.md has the engines side by side). Here the op's goroutine alone waits in
// poll(2) on the two pipes and the op's pidfd, which becomes readable when
// the process exits, and reads what is ready: the same work as a C
// posix_spawn loop. Timeouts and cancellation stay timer-driven signals to
// the group (see killer); the loop only sees their effect, the exit.

var (
	pidfdOnce sync.Once
	pidfdOK   bool
)

// pidfdSupported reports whether the kernel has pollable pidfds and
// clone(CLONE_PIDFD) (Linux 5.3).
func pidfdSupported() bool {
	pidfdOnce.Do(func() {
		fd, err := unix.PidfdOpen(os.Getpid(), 0)
		if err == nil {
			unix.Close(fd)
			pidfdOK = true
		}
	})
	return pidfdOK
}

// spawnNative runs the op with the poll engine; false means it is not
// available here and nothing was done.
func spawnNative(ctx context.Context, p *spawning) (Result, bool) {
	if !pidfdSupported() {
		return Result{}, false
	}
	var po, pe [2]int
	if err := unix.Pipe2(po[:], unix.O_CLOEXEC); err != nil {
		return p.fail(fmt.Errorf("executor: stdout pipe: %w", err)), true
	}
	if err := unix.Pipe2(pe[:], unix.O_CLOEXEC); err != nil {
		unix.Close(po[0])
		unix.Close(po[1])
		return p.fail(fmt.Errorf("executor: stderr pipe: %w", err)), true
	}
	pidfd := -1
	p.sys.PidFD = &pidfd
	attr := &syscall.ProcAttr{
		Dir:   p.spec.Dir,
		Env:   p.env,
		Files: []uintptr{p.stdin.Fd(), uintptr(po[1]), uintptr(pe[1])},
		Sys:   p.sys,
	}
	var (
		pid     int
		untrack func()
	)
	err := p.launch(func() error {
		var err error
		pid, untrack, err = forkTracked(p.spec.Path, p.argv, attr)
		if err != nil {
			return &os.PathError{Op: "fork/exec", Path: p.spec.Path, Err: err}
		}
		return nil
	}, func() bool { return pid != 0 })
	if err == nil && p.spec.Hooks.Started != nil {
		err = p.spec.Hooks.Started(pid)
	}
	unix.Close(po[1])
	unix.Close(pe[1])
	if err == nil && pidfd < 0 {
		err = fmt.Errorf("executor: no pidfd for pid %d", pid)
	}
	if err != nil {
		if pid != 0 { // do not leak the op
			signalGroup(pid, syscall.SIGKILL)
			var ws unix.WaitStatus
			unix.Wait4(pid, &ws, 0, nil)
			untrack()
		}
		if pidfd >= 0 {
			unix.Close(pidfd)
		}
		unix.Close(po[0])
		unix.Close(pe[0])
		return p.fail(err), true
	}
	// p.stdin must stay open until the child has it: ForkExec returns
	// after the exec.
	res := &p.res
	res.Pid = pid
	if p.spec.OnStart != nil {
		p.spec.OnStart(pid)
	}
	k := &killer{pgid: pid, grace: p.grace, pauses: p.spec.Pauses}
	disarm := p.arm(ctx, k)

	var (
		out  stdoutBuffer
		tail tailBuffer
		ws   unix.WaitStatus
	)
	const (
		iOut = iota
		iErr
		iPid
	)
	fds := []unix.PollFd{
		iOut: {Fd: int32(po[0]), Events: unix.POLLIN},
		iErr: {Fd: int32(pe[0]), Events: unix.POLLIN},
		iPid: {Fd: int32(pidfd), Events: unix.POLLIN},
	}
	closeAt := func(i int) {
		unix.Close(int(fds[i].Fd))
		fds[i].Fd = -1 // poll ignores negative descriptors
	}
	var (
		waitErr  error
		exited   bool
		deadline time.Time // after the exit: when to stop reading
	)
	for fds[iOut].Fd >= 0 || fds[iErr].Fd >= 0 || fds[iPid].Fd >= 0 {
		timeout := -1
		if exited {
			left := time.Until(deadline)
			if left <= 0 {
				res.PipesHeld = true
				break
			}
			timeout = int((left + time.Millisecond - 1) / time.Millisecond)
		}
		n, err := unix.Poll(fds, timeout)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			// Cannot happen with valid descriptors; stop reading, but
			// still wait for the process below.
			waitErr = fmt.Errorf("poll: %w", err)
			break
		}
		if n == 0 {
			continue // the deadline check above ends the loop
		}
		if fds[iOut].Fd >= 0 && fds[iOut].Revents != 0 {
			m, err := unix.Read(int(fds[iOut].Fd), out.next())
			if out.advance(max(m, 0)) {
				k.kill() // the output is invalid already: do not wait for the rest
				closeAt(iOut)
			} else if m <= 0 && err != unix.EINTR && err != unix.EAGAIN {
				closeAt(iOut)
			}
		}
		if fds[iErr].Fd >= 0 && fds[iErr].Revents != 0 {
			m, err := unix.Read(int(fds[iErr].Fd), tail.next())
			tail.advance(m)
			if m <= 0 && err != unix.EINTR && err != unix.EAGAIN {
				closeAt(iErr)
			}
		}
		if fds[iPid].Fd >= 0 && fds[iPid].Revents != 0 {
			waitErr = reapPid(pid, &ws)
			untrack()
			disarm()
			k.exited()
			exited = true
			deadline = time.Now().Add(p.waitDelay)
			closeAt(iPid)
		}
	}
	if !exited {
		// Only after a poll failure: the op is still ours to reap.
		if waitErr == nil {
			waitErr = reapPidBlocking(pid, &ws)
		} else {
			reapPidBlocking(pid, &ws)
		}
		untrack()
		disarm()
		k.exited()
	}
	for i := range fds {
		if fds[i].Fd >= 0 {
			closeAt(i)
		}
	}
	k.finish()

	res.Stdout, res.StdoutTruncated = out.buf, out.truncated
	res.StderrTail = tail.bytes()
	res.TimedOut, res.Canceled, res.Escalated = k.timedOut, k.canceled, k.killed
	if waitErr != nil {
		res.SpawnErr = fmt.Errorf("executor: wait for pid %d: %w", pid, waitErr)
	} else if ws.Signaled() {
		res.ExitCode, res.Signal = 128+int(ws.Signal()), ws.Signal()
	} else {
		res.ExitCode = ws.ExitStatus()
	}
	res.Duration = time.Since(p.t0)
	return *res, true
}

// reapPid waits for pid, whose pidfd said it exited.
func reapPid(pid int, ws *unix.WaitStatus) error {
	for {
		got, err := unix.Wait4(pid, ws, unix.WNOHANG, nil)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return err
		case got != pid:
			// The pidfd is readable only once the process is a zombie;
			// a WNOHANG miss would be a kernel oddity: wait for real.
			return reapPidBlocking(pid, ws)
		}
		return nil
	}
}

func reapPidBlocking(pid int, ws *unix.WaitStatus) error {
	for {
		_, err := unix.Wait4(pid, ws, 0, nil)
		if err != unix.EINTR {
			return err
		}
	}
}
