//go:build !linux

package sandbox

import (
	"runtime"

	"github.com/oarbank/svcrun/cgroup"
)

func hostFacts() facts {
	why := notEnforced(runtime.GOOS)
	return facts{goos: runtime.GOOS, landlockWhy: why, nnpWhy: why, netnsWhy: why, euid: -1}
}

// Probe says that the sandbox is not enforced on this platform.
func Probe() Support {
	why := notEnforced(runtime.GOOS)
	no := Feature{Reason: why}
	return Support{OS: runtime.GOOS, Reason: why, EUID: -1, LandlockReason: why,
		NoNewPrivs: no, NetNS: no, UserNS: no, CoreHard: no, Cgroup: cgroup.Probe()}
}
