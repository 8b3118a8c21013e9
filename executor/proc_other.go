//go:build !unix

package executor

import (
	"errors"
	"os"
	"syscall"
)

// Without unix process groups an op is addressed by its own pid only: what it
// leaves behind is out of reach (the sandbox issue brings job objects).

func newSysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

var errNoGroups = errors.New("executor: process groups are not supported on this platform")

// signalGroup can only kill the leader itself.
func signalGroup(pid int, sig syscall.Signal) error {
	if sig != syscall.SIGKILL && sig != syscall.SIGTERM {
		return errNoGroups
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

// groupAlive cannot tell; the leader has been waited for when it is asked.
func groupAlive(int) bool { return false }

func groupHasLive(int) bool { return false }

func exitStatus(state *os.ProcessState) (int, syscall.Signal) {
	return state.ExitCode(), 0
}

// Windows has no stop and continue signals; Freeze and Thaw report
// errNoGroups.
const (
	sigStop = syscall.Signal(-19)
	sigCont = syscall.Signal(-18)
)
