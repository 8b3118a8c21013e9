//go:build unix

package module

import (
	"errors"
	"fmt"
	"syscall"
)

func detached(c *Credential) (*syscall.SysProcAttr, error) {
	a := &syscall.SysProcAttr{Setsid: true}
	if c != nil {
		a.Credential = &syscall.Credential{Uid: c.UID, Gid: c.GID}
	}
	return a, nil
}

// alive reports whether pid is a live process: one that exists (even of
// another user, which kill refuses with EPERM) and is not a zombie.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	return !zombie(pid)
}

// terminate sends SIGTERM to pid's process group when pid leads one (so
// that the daemon's own children end too), else to pid.
func terminate(pid int) error { return signal(pid, syscall.SIGTERM) }

func kill(pid int) error { return signal(pid, syscall.SIGKILL) }

func signal(pid int, sig syscall.Signal) error {
	target := pid
	if pgid, err := syscall.Getpgid(pid); err == nil && pgid == pid {
		target = -pid
	}
	if err := syscall.Kill(target, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal %v to pid %d: %w", sig, pid, err)
	}
	return nil
}
