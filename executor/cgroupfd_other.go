//go:build !linux

package executor

import "syscall"

// withCgroupFD: there are no cgroups outside Linux (cgroup.Manager.OpStart
// always fails there, so this is never reached).
func withCgroupFD(hook func(*syscall.SysProcAttr), _ int) func(*syscall.SysProcAttr) {
	return hook
}

// closeCgroupFD: never reached outside Linux (see withCgroupFD).
func closeCgroupFD(int) {}
