//go:build !linux

package sandbox

import (
	"fmt"
	"runtime"

	"github.com/oarbank/svcrun/cgroup"
)

// notEnforced is why nothing is enforced on goos.
func notEnforced(goos string) string {
	return fmt.Sprintf("the sandbox is not enforced on %s: ops run unconfined, as svcrun's own user with all "+
		"its rights (no Landlock, namespaces or no_new_privs there)", goos)
}

func hostFacts() facts {
	reason := notEnforced(runtime.GOOS)
	return facts{goos: runtime.GOOS, landlockReason: reason, nnpReason: reason, netnsReason: reason, euid: -1}
}

// Probe says that the sandbox is not enforced on this platform.
func Probe() Support {
	reason := notEnforced(runtime.GOOS)
	no := cgroup.Feature{Reason: reason}
	return Support{OS: runtime.GOOS, Reason: reason, EUID: -1, LandlockReason: reason,
		NoNewPrivs: no, NetNS: no, UserNS: no, CoreHard: no, Cgroup: cgroup.Probe()}
}
