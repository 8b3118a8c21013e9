package executor

import "syscall"

// withCgroupFD wraps a SysProcAttr hook so that the op is cloned straight
// into the cgroup fd (clone3 CLONE_INTO_CGROUP), after the hook ran.
func withCgroupFD(hook func(*syscall.SysProcAttr), fd int) func(*syscall.SysProcAttr) {
	return func(a *syscall.SysProcAttr) {
		if hook != nil {
			hook(a)
		}
		a.UseCgroupFD, a.CgroupFD = true, fd
	}
}
