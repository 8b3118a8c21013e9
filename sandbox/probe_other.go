//go:build !linux

package sandbox

import (
	"fmt"
	"runtime"

	"github.com/oarbank/svcrun/cgroup"
)

// notEnforced is why nothing is enforced on goos.
func notEnforced(goos string) string {
	return fmt.Sprintf("the sandbox is not enforced on %s: ops run unconfined, as svcrun's own user with all its rights (no Landlock, namespaces or no_new_privs there)", goos)
}

func hostFacts() facts {
	why := notEnforced(runtime.GOOS)
	return facts{goos: runtime.GOOS, landlockWhy: why, nnpWhy: why, netnsWhy: why, euid: -1}
}

// Probe says that the sandbox is not enforced on this platform.
func Probe() Support {
	why := notEnforced(runtime.GOOS)
	no := cgroup.Feature{Reason: why}
	return Support{OS: runtime.GOOS, Reason: why, EUID: -1, LandlockReason: why,
		NoNewPrivs: no, NetNS: no, UserNS: no, CoreHard: no, Cgroup: cgroup.Probe()}
}
