package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/oarbank/svcrun/cgroup"
)

var (
	factsOnce sync.Once
	theFacts  facts
)

// hostFacts probes the host once per process.
func hostFacts() facts {
	factsOnce.Do(func() { theFacts = probeFacts() })
	return theFacts
}

// probeFacts tries each per-thread layer for real on a throwaway thread
// (it exits with its goroutine): a seccomp filter or a container runtime
// can forbid what the kernel has.
func probeFacts() facts {
	f := facts{goos: "linux", euid: os.Geteuid()}
	abi, err := landlockABI()
	if err != nil {
		f.landlockReason = err.Error()
	}
	done := make(chan struct{})
	goLocked(func() {
		defer close(done)
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			f.netnsReason = fmt.Sprintf("unshare(CLONE_NEWNET): %v", err)
			if errors.Is(err, unix.EPERM) && f.euid != 0 {
				f.netnsReason += " (svcrun is not root: entering a network namespace needs CAP_SYS_ADMIN)"
			}
		}
		if err := setNoNewPrivs(); err != nil {
			f.nnpReason = err.Error()
		}
		if abi > 0 {
			fd, err := buildRuleset(nil, abi, scoped(abi))
			if err == nil {
				err = restrictThread(fd)
				unix.Close(fd)
			}
			if err != nil {
				f.landlockReason = fmt.Sprintf("Landlock ABI %d is there but cannot be enforced here: %v", abi, err)
				abi = 0
			}
		}
		// Returning locked: this thread, confined, exits.
	})
	<-done
	f.landlock = abi
	return f
}

// Probe reports what the sandbox can apply on this host, the process
// containers included (cgroup.Probe, which creates the base cgroup to know
// whether it can and removes it again).
func Probe() Support {
	f := hostFacts()
	s := Support{OS: "linux", Enforced: true, EUID: f.euid, Landlock: f.landlock, LandlockReason: f.landlockReason}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		s.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	s.NoNewPrivs = feature(f.nnpReason)
	s.NetNS = feature(f.netnsReason)
	s.UserNS = feature(probeUserNS())
	s.CoreHard = feature("")
	if f.euid == 0 && !hasCapability(unix.CAP_SYS_RESOURCE) {
		s.CoreHard = feature("svcrun lacks CAP_SYS_RESOURCE: they keep svcrun's hard limit")
	}
	s.Cgroup = cgroup.Probe()
	return s
}

func feature(reason string) cgroup.Feature { return cgroup.Feature{OK: reason == "", Reason: reason} }

// probeUserNS says why a child cannot be cloned into a new user namespace,
// or "". The child execs a path that does not exist: ENOENT means the
// clone worked.
func probeUserNS() string {
	if data, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil &&
		strings.TrimSpace(string(data)) == "0" {
		return "disabled (/proc/sys/user/max_user_namespaces is 0)"
	}
	_, err := syscall.ForkExec("/nonexistent/svcrun-userns-probe", []string{"probe"}, &syscall.ProcAttr{
		Sys: &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER},
	})
	switch {
	case errors.Is(err, syscall.ENOENT):
		return ""
	case err == nil:
		return "unexpected: the probe started"
	}
	return fmt.Sprintf("clone(CLONE_NEWUSER): %v", err)
}

// hasCapability reports whether capability c is in this thread's
// effective set.
func hasCapability(c int) bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[c/32].Effective&(1<<(uint(c)%32)) != 0
}
