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

// closeCgroupFD closes a descriptor of OpStart or Recover once the op is
// cloned: the Manager holds none, since every fork copies them all.
func closeCgroupFD(fd int) { syscall.Close(fd) }
