package sandbox

import (
	"fmt"
	"strings"

	"github.com/oarbank/svcrun/cgroup"
)

// Support is what Probe found on this host. String is the report of
// `svcrun sandbox` and `svcrun status`.
type Support struct {
	// OS is the platform (runtime.GOOS); Enforced is false outside Linux,
	// where no layer is applied and Reason says so.
	OS       string `json:"os"`
	Enforced bool   `json:"enforced"`
	Reason   string `json:"reason,omitempty"`
	// Kernel is the kernel release (uname -r) on Linux.
	Kernel string `json:"kernel"`
	// EUID is svcrun's effective user id (run_as and network namespaces
	// need 0).
	EUID int `json:"euid"`
	// Landlock is the kernel's Landlock ABI version, 0 when Landlock is
	// unusable (LandlockReason says why).
	Landlock       int    `json:"landlock"`
	LandlockReason string `json:"landlock_reason,omitempty"`
	// NoNewPrivs, NetNS and UserNS say whether a thread can set
	// no_new_privs, enter a new network namespace, and whether a child can
	// be cloned into a new user namespace (informational: the sandbox
	// does not use user namespaces).
	NoNewPrivs cgroup.Feature `json:"no_new_privs"`
	NetNS      cgroup.Feature `json:"net_ns"`
	UserNS     cgroup.Feature `json:"user_ns"`
	// CoreHard says whether the hard RLIMIT_CORE of run_as ops can be
	// lowered to 0 too (prlimit on another user's process needs
	// CAP_SYS_RESOURCE); their soft limit is 0 in any case.
	CoreHard cgroup.Feature `json:"core_hard"`
	// Cgroup is the process container's support (cgroup.Probe).
	Cgroup cgroup.Support `json:"cgroup"`
}

// landlockFeatures names what each ABI adds, as String prints it.
var landlockFeatures = []struct {
	abi        int
	linux, use string
}{
	{1, "5.13", "filesystem rules"},
	{2, "5.19", "rename and link across directories (refer)"},
	{3, "6.2", "truncate"},
	{4, "6.7", "TCP bind and connect (not used)"},
	{5, "6.10", "ioctl on devices"},
	{6, "6.12", "abstract Unix socket scoping"},
	{7, "6.15", "audit logging flags (not used)"},
	{8, "7.0", "all-thread enforcement (not used: svcrun stays unconfined)"},
	{9, "7.1", "pathname Unix socket connections (resolve_unix)"},
}

// String is the whole report: the sandbox's layers, then the process
// containers.
func (s Support) String() string {
	return s.Layers() + fmt.Sprintf("process containers: %s\n", indentRest(s.Cgroup.String()))
}

// Layers is the report of the sandbox's layers alone, for a status that
// reports the process containers a node really uses (its own cgroup base)
// on its own.
func (s Support) Layers() string {
	var b strings.Builder
	if !s.Enforced {
		fmt.Fprintf(&b, "sandbox: NOT enforced on %s: %s\n", s.OS, s.Reason)
		return b.String()
	}
	who := fmt.Sprintf("uid %d", s.EUID)
	if s.EUID == 0 {
		who = "root"
	}
	fmt.Fprintf(&b, "sandbox: enforced on %s %s; svcrun runs as %s\n", s.OS, s.Kernel, who)
	if s.Landlock > 0 {
		var has, lacks []string
		for _, f := range landlockFeatures {
			if f.abi <= s.Landlock {
				has = append(has, f.use)
			} else {
				lacks = append(lacks, fmt.Sprintf("%s (ABI %d, Linux %s)", f.use, f.abi, f.linux))
			}
		}
		fmt.Fprintf(&b, "landlock: ABI %d: %s\n", s.Landlock, strings.Join(has, ", "))
		if len(lacks) > 0 {
			fmt.Fprintf(&b, "landlock lacks: %s\n", strings.Join(lacks, ", "))
		}
	} else {
		fmt.Fprintf(&b, "landlock: no: %s\n", s.LandlockReason)
	}
	if s.Landlock >= 6 {
		if ScopeSignals {
			fmt.Fprintf(&b, "signal scoping: on: ops signal no process outside their module's current domain "+
				"(daemons of ops before an svcrun restart or a reload included)\n")
		} else {
			fmt.Fprintf(&b, "signal scoping: off (ScopeSignals): it would cut ops off from the daemons earlier ops "+
				"left, after a restart or a reload; run_as keeps ops from signalling svcrun\n")
		}
	}
	switch {
	case s.Landlock >= 9:
		fmt.Fprintf(&b, "pathname unix sockets: confined by Landlock\n")
	case s.EUID == 0:
		fmt.Fprintf(&b, "pathname unix sockets: not confined by Landlock; file permissions guard them when ops "+
			"run as run_as\n")
	default:
		fmt.Fprintf(&b, "pathname unix sockets: not confined: ops run as svcrun's own user\n")
	}
	fmt.Fprintf(&b, "no_new_privs: %s\n", yesNo(s.NoNewPrivs))
	fmt.Fprintf(&b, "network namespaces (network = \"none\"): %s\n", yesNo(s.NetNS))
	fmt.Fprintf(&b, "user namespaces: %s (not used)\n", yesNo(s.UserNS))
	if s.EUID == 0 {
		fmt.Fprintf(&b, "run_as: yes: ops run as run_as when it is set\n")
	} else {
		fmt.Fprintf(&b, "run_as: no: svcrun is not root; ops run as its own user\n")
	}
	fmt.Fprintf(&b, "rlimit_core: yes: soft 0 from the fork; hard 0 for run_as ops: %s\n", yesNo(s.CoreHard))
	return b.String()
}

// yesNo is a feature as the report of the sandbox's layers words it.
func yesNo(f cgroup.Feature) string {
	if f.OK {
		return "yes"
	}
	return "no: " + f.Reason
}

// indentRest indents every line of a multi-line report but the first.
func indentRest(s string) string {
	s = strings.TrimRight(s, "\n")
	if !strings.Contains(s, "\n") {
		return s
	}
	return "\n  " + strings.ReplaceAll(s, "\n", "\n  ")
}
