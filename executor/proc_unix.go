//go:build unix

package executor

import (
	"errors"
	"os"
	"syscall"
)

// newSysProcAttr puts the op in a process group of its own, whose id is its
// pid: timeouts, Kill and Freeze address the whole group.
func newSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends sig to every process of the group pgid.
func signalGroup(pgid int, sig syscall.Signal) error {
	if pgid <= 1 {
		return errors.New("executor: refusing to signal process group <= 1")
	}
	return syscall.Kill(-pgid, sig)
}

// groupAlive reports whether the group pgid still has a process (zombies
// included).
func groupAlive(pgid int) bool {
	if pgid <= 1 {
		return false
	}
	return syscall.Kill(-pgid, 0) != syscall.ESRCH
}

// groupHasLive reports whether the group pgid has a process that is not a
// zombie. Outside Linux a zombie cannot be told from the living.
func groupHasLive(pgid int) bool {
	if !groupAlive(pgid) {
		return false
	}
	return groupHasLiveMember(pgid)
}

// exitStatus returns the exit code, 128+n for a process ended by signal n.
func exitStatus(state *os.ProcessState) (int, syscall.Signal) {
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), ws.Signal()
	}
	return state.ExitCode(), 0
}

const (
	sigStop = syscall.SIGSTOP
	sigCont = syscall.SIGCONT
)
