package executor

import (
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A timeout that fires after the op's process exited, before its exit was
// taken (svcrun was paused, or busy), does not terminate the op's group,
// where a start's daemon lives.
func TestTerminateSkipsAnExitedOp(t *testing.T) {
	// Tracked, as an op is: the reaper of a test that made this process a
	// subreaper leaves it alone.
	pid, untrack, err := forkTracked("/bin/sh", []string{"sh", "-c", "exit 0"}, &syscall.ProcAttr{
		Env: []string{}, Files: []uintptr{0, 1, 2}, Sys: &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		var ws unix.WaitStatus
		unix.Wait4(pid, &ws, 0, nil)
		untrack()
	}()
	deadline := time.Now().Add(60 * time.Second)
	for !exited(pid) {
		if time.Now().After(deadline) {
			t.Fatal("the op did not exit within 60 s")
		}
		time.Sleep(time.Millisecond) // waiting for another process's exit
	}
	k := &killer{pgid: pid, grace: time.Hour}
	k.terminate(&k.timedOut)
	if k.timedOut || !k.termAt.IsZero() {
		t.Errorf("an op that had exited was terminated at its timeout (timedOut %v)", k.timedOut)
	}

	// A live op is terminated as before.
	live, untrackLive, err := forkTracked("/bin/sleep", []string{"sleep", "60"}, &syscall.ProcAttr{
		Env: []string{}, Files: []uintptr{0, 1, 2}, Sys: &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer untrackLive()
	k = &killer{pgid: live, grace: time.Hour}
	k.terminate(&k.timedOut)
	var ws unix.WaitStatus
	unix.Wait4(live, &ws, 0, nil)
	k.graceKill.Stop()
	if !k.timedOut || ws.Signal() != syscall.SIGTERM {
		t.Errorf("a live op at its timeout: timedOut %v, ended by %v, want SIGTERM", k.timedOut, ws.Signal())
	}
}
