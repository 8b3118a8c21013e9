//go:build !linux

package executor

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// startTracked starts a process. Without a reaper there is nothing to track.
func startTracked(path string, argv []string, attr *os.ProcAttr) (*os.Process, func(), error) {
	p, err := os.StartProcess(path, argv, attr)
	if err != nil {
		return nil, nil, err
	}
	return p, func() {}, nil
}

// StartCmd starts cmd; call done after cmd.Wait returned. It exists for
// symmetry with Linux, where the reaper must know every child.
func StartCmd(cmd *exec.Cmd) (done func(), err error) {
	return func() {}, cmd.Start()
}

// RunCmd runs cmd to its end.
func RunCmd(cmd *exec.Cmd) error { return cmd.Run() }

// BecomeSubreaper is Linux only (prctl PR_SET_CHILD_SUBREAPER): elsewhere the
// orphans of ops are re-parented to init (launchd), which reaps them.
func BecomeSubreaper() error {
	return fmt.Errorf("executor: a child subreaper needs Linux: %w", errors.ErrUnsupported)
}

// Main runs prog and exits with its code: without a subreaper no thread
// is kept for one.
func Main(prog func() int) { os.Exit(prog()) }

// ReapOrphans does nothing without a subreaper.
func ReapOrphans() int { return 0 }

// subscribeOrphanExits: without a reaper no orphan exit is seen.
func subscribeOrphanExits(func(pgid int)) (cancel func()) { return func() {} }

// subscribeOrphanDeaths: without a reaper no orphan's death is seen.
func subscribeOrphanDeaths(func(pid int, killed bool)) (cancel func()) { return func() {} }

// groupMembers needs /proc: elsewhere no process is listed.
func groupMembers([]int) []int { return nil }

// living cannot tell zombies apart without /proc.
func living(pids []int) []int { return pids }

// exited cannot look at a child without reaping it here: a timeout
// proceeds.
func exited(int) bool { return false }
