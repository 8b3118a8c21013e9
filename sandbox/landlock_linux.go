package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock through raw system calls: landlock_restrict_self confines the
// calling thread only, which is what the confining thread needs (the
// all-threads helpers of go-landlock would confine svcrun).

// The access rights of each ABI.
const (
	fsV1 = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
		unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM

	// fileRights are the rights that apply to a file (a rule on a
	// non-directory may hold only those).
	fileRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE |
		unix.LANDLOCK_ACCESS_FS_IOCTL_DEV | unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX

	readRights = unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
)

// handledFS is every filesystem right the kernel of ABI abi knows: what it
// does not know it cannot deny.
func handledFS(abi int) uint64 {
	h := uint64(fsV1)
	if abi >= 2 {
		h |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		h |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		h |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	if abi >= 9 {
		h |= unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX
	}
	return h
}

// scoped is what the domain scopes at ABI abi: abstract Unix sockets, and
// signals when ScopeSignals is set.
func scoped(abi int) uint64 {
	if abi < 6 {
		return 0
	}
	s := uint64(unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET)
	if ScopeSignals {
		s |= unix.LANDLOCK_SCOPE_SIGNAL
	}
	return s
}

// rights are the Landlock rights of a, at ABI abi, on a directory or not.
func rights(a Access, abi int, dir bool) uint64 {
	var r uint64
	switch a {
	case ReadExec:
		r = readRights | unix.LANDLOCK_ACCESS_FS_EXECUTE
	case ReadOnly:
		r = readRights
	case ReadWrite:
		r = readRights | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
			unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
			unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
			unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO |
			unix.LANDLOCK_ACCESS_FS_MAKE_SYM | unix.LANDLOCK_ACCESS_FS_REFER |
			unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX
	case Device:
		r = unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
			unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if !dir {
		r &= fileRights
	}
	return r & handledFS(abi)
}

// rulesetAttr is struct landlock_ruleset_attr up to scoped (ABI 6).
type rulesetAttr struct {
	handledFS  uint64
	handledNet uint64
	scoped     uint64
}

// pathBeneathAttr is struct landlock_path_beneath_attr, which is packed:
// the kernel reads its first 12 bytes.
type pathBeneathAttr struct {
	allowed  uint64
	parentFD int32
	_        int32
}

// landlockABI returns the kernel's Landlock ABI version, or why there is
// none.
func landlockABI() (int, error) {
	v, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	switch {
	case e == unix.ENOSYS:
		return 0, errors.New("the kernel has no Landlock (Linux 5.13 or later, built with CONFIG_SECURITY_LANDLOCK)")
	case e == unix.EOPNOTSUPP:
		return 0, errors.New("the kernel has Landlock built in but not enabled (add landlock to the lsm= boot parameter)")
	case e != 0:
		return 0, fmt.Errorf("landlock_create_ruleset(VERSION): %v", e)
	}
	return int(v), nil
}

// buildRuleset creates the ruleset of rules at ABI abi, scoping scope,
// and returns its descriptor. Each path is opened O_PATH and must still be the path the
// plan resolved (no symbolic link swapped in since).
func buildRuleset(rules []Rule, abi int, scope uint64) (int, error) {
	attr := rulesetAttr{handledFS: handledFS(abi), scoped: scope}
	size := unsafe.Sizeof(attr)
	if abi < 6 {
		size = unsafe.Sizeof(attr.handledFS) // the ABI 1 struct
	}
	fd, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if e != 0 {
		return -1, fmt.Errorf("landlock_create_ruleset: %v", e)
	}
	for _, r := range rules {
		if err := addRule(int(fd), r, abi); err != nil {
			unix.Close(int(fd))
			return -1, err
		}
	}
	return int(fd), nil
}

func addRule(ruleset int, r Rule, abi int) error {
	pfd, err := unix.Open(r.Path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%s %s: open: %w", r.What, r.Path, err)
	}
	defer unix.Close(pfd)
	if real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(pfd)); err != nil || real != r.Path {
		return fmt.Errorf("%s %s: it now resolves to %q (%v): refused", r.What, r.Path, real, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return fmt.Errorf("%s %s: stat: %w", r.What, r.Path, err)
	}
	allowed := rights(r.Access, abi, st.Mode&unix.S_IFMT == unix.S_IFDIR)
	if allowed == 0 {
		return nil
	}
	attr := pathBeneathAttr{allowed: allowed, parentFD: int32(pfd)}
	_, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&attr)), 0, 0, 0)
	if e != 0 {
		return fmt.Errorf("%s %s: landlock_add_rule: %v", r.What, r.Path, e)
	}
	return nil
}

// restrictThread enforces the ruleset on the calling thread only; the
// thread must have no_new_privs (or CAP_SYS_ADMIN).
func restrictThread(ruleset int) error {
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), 0, 0); e != 0 {
		return fmt.Errorf("landlock_restrict_self: %v", e)
	}
	return nil
}

// setNoNewPrivs sets no_new_privs on the calling thread only (prctl is a
// per-thread system call; the runtime's AllThreadsSyscall is not used).
func setNoNewPrivs() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	return nil
}
