// Package cgroup is svcrun's process container on Linux (docs/decisions.md, Sandbox):
// one cgroup v2 per service, that every op of the service is cloned into,
// so that whatever an op leaves behind (the daemon of a start, its double
// forks, its setsid'd children) stays in one place that can be frozen,
// killed and watched.
//
// # Detection: Probe
//
// Probe finds the cgroup2 mount in /proc/self/mountinfo (/sys/fs/cgroup
// when it is cgroup2, else the first cgroup2 mount, such as
// /sys/fs/cgroup/unified on a hybrid host), svcrun's own cgroup in
// /proc/self/cgroup ("0::/path"), and creates the base cgroup
// <mount><own>/<name> (default name "svcrun-<node id>"). It reports which
// core files work (cgroup.events, cgroup.kill from 5.14, cgroup.freeze
// from 5.2) and whether the memory and pids controllers could be enabled
// for the containers ("+memory +pids" into the subtree_control of svcrun's
// cgroup and of the base), with the reason of every missing layer. Probe
// never fails: a host without a writable cgroup v2 gets a Support that says
// why, and svcrun falls back to process groups and signals.
//
// # Containers: Manager
//
// New(Options) returns a Manager whether or not cgroups work; Err says why
// they do not. A service module/name has the container
// <base>/<module>/<name>; names are checked against [a-z0-9][a-z0-9-]*.
// OpStart (or Create) makes the container, counts the op and returns a new
// O_PATH descriptor of its directory for SysProcAttr.CgroupFD (clone3
// CLONE_INTO_CGROUP), which the caller closes; OpEnd ends the op. Kill writes cgroup.kill (fallback: SIGKILL
// every pid of cgroup.procs, frozen first, until it is empty), Freeze and
// Thaw write cgroup.freeze (fallback: SIGSTOP and SIGCONT), and each can
// wait, bounded, for cgroup.events to say it is done. Limits writes
// memory.max and pids.max where those controllers are enabled and records
// them missing otherwise. Remove deletes an empty container; Close stops
// the watcher and leaves the containers (and the daemons in them) for the
// next svcrun to adopt.
//
// # One svcrun per base
//
// Two svcruns with the same node id (it defaults to the host name) would
// share the base and replace, kill and freeze each other's containers. New
// therefore takes an exclusive flock(2) of the base directory (it works on
// cgroupfs), held by an O_CLOEXEC descriptor until Close, so that the
// daemons ops leave never hold it and a svcrun killed with SIGKILL leaves
// no lock. The holder records "<pid> <data dir>" in the base's
// user.svcrun.owner xattr (Linux 5.7 and later). A second Manager is
// refused: its Err wraps ErrInUse and names the node id, the base, the
// holder's pid (from /proc/locks) and data dir, and the fix (its own
// node_id); svcrun then refuses to start rather than fall back.
//
// A container removed under a running service all the same (by an svcrun
// without the lock, or by hand) makes the clone of the next op fail with
// ENOENT, which reads as if the executable were missing. Recover tells it
// by the container's directory (gone, or another inode than the one the
// Manager recorded; OpStart tells it too, by ErrRemoved), re-creates it with its limits, logs a WARN naming it,
// and gives the op the new descriptor.
//
// # Emptied events
//
// One goroutine reads an inotify descriptor watching IN_MODIFY of every
// container's cgroup.events and re-reads the file at each event (opened
// each time and checked to be the container's by its inode: a container
// holds no descriptor, since every op's fork copies them all).
// Ops run in the container, so it empties after every op of a service
// whose daemon lives elsewhere or that is stopped: that is not a crash.
// The rule is therefore: a container is armed when an op ends and the
// container is still populated (a process outlived the op: the service has
// a daemon); an armed container that is seen empty while none of the
// service's ops runs (at the watcher's event, or at the end of an op) is
// reported once to Options.OnEmptied, and disarmed until an op ends with
// it populated again. Each arming is told to SetOnArmed's function: the container then
// holds the service's daemon, whose death will be an event.
//
// # Member exits
//
// A daemon's master that dies while its workers live on (nginx's, killed
// alone) leaves its container populated: no emptied event tells it. So
// while a container is armed and no op of its service runs, the Manager
// watches its oldest processes by pidfd (Linux 5.3, Support.MemberExits):
// up to two, oldest first by start time, and never the youngest, whose
// death alone would empty the container (a single-process daemon holds no
// pidfd). They are picked when an op ends and again after one exits, so an
// op's own processes are never watched, and a worker respawned or a fork
// that comes and goes is younger than them. The pidfds live in the
// descriptor table of one locked OS thread that unshared its own
// (unshare(CLONE_FILES)) and closed its copies of the rest: every op's fork
// copies the table of the thread that forks, which holds none of them. The
// thread waits in epoll_wait: nothing runs while none exits. A watched
// process that exits while the container stays populated is told to
// SetOnMemberExited's function at once, or at the end of the op that runs
// then (a stop may be what ended it); Kill and Terminate stop the
// watching first. The word says whether the process was svcrun's own
// child (a subreaper inherits a daemon's master) and a signal killed it:
// the thread peeks at the zombie (waitid WNOWAIT), and svcrun's reaper,
// should it reap first, tells NoteChildExit before it does. Where pidfds
// are missing, or a pidfd cannot be opened (RLIMIT_NOFILE), nothing is
// watched and status polls see such a death.
package cgroup

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Options configure a Manager (and ProbeWith).
type Options struct {
	// NodeID names the base cgroup "svcrun-<NodeID>" unless Name is set.
	NodeID string
	// Name is the base cgroup's name under svcrun's own cgroup; default
	// "svcrun-<NodeID>", or "svcrun" without a node id.
	Name string
	// Parent, if set, is the cgroup directory the base is created in
	// instead of <mount><svcrun's own cgroup>; it must be inside a
	// cgroup2 mount.
	Parent string
	// OnEmptied is told the service (module/name) whose armed container
	// emptied. It is called from the watcher goroutine or from OpEnd and
	// must not block; SetOnEmptied replaces it.
	OnEmptied func(service string)
	// DataDir is the data dir of the svcrun that owns the Manager. It is
	// recorded on the base so that a second svcrun refused by the lock
	// can name the first one's.
	DataDir string
	// Logger gets the WARN of a container re-created by Recover; default
	// slog.Default().
	Logger *slog.Logger
}

// Feature is one capability of the host, a layer of the process container
// or of the sandbox: whether it works here, and why not.
type Feature struct {
	OK     bool   `json:"ok"`
	Reason string `json:"reason,omitempty"` // why it is missing; "" when OK
}

func (f Feature) String() string {
	if f.OK {
		return "yes"
	}
	return "missing: " + f.Reason
}

// Support is what Probe found: what works and what is missing, with
// reasons. It is printed by svcrun status and svcrun sandbox.
type Support struct {
	// Mount is the cgroup2 mount point; "" when there is none.
	Mount string `json:"mount"`
	// Own is svcrun's own cgroup, from /proc/self/cgroup ("/" for the root).
	Own string `json:"own"`
	// Parent is <Mount><Own> (or Options.Parent): where the base is.
	Parent string `json:"parent"`
	// Base is the base cgroup, <Parent>/<name>, parent of the modules'.
	Base string `json:"base"`
	// Containers says whether per-service cgroups can be created and ops
	// cloned into them (a writable base with cgroup.events). Without it
	// svcrun falls back to process groups and signals.
	Containers Feature `json:"containers"`
	// Kill is cgroup.kill (Linux 5.14); without it Kill signals every pid
	// of cgroup.procs.
	Kill Feature `json:"kill"`
	// Freeze is cgroup.freeze (Linux 5.2); without it Freeze and Thaw
	// signal SIGSTOP and SIGCONT to every pid of cgroup.procs.
	Freeze Feature `json:"freeze"`
	// Controllers are the controllers available to the base's parent
	// (its cgroup.controllers).
	Controllers []string `json:"controllers"`
	// Memory and Pids say whether memory.max and pids.max can be set on
	// the containers (the controller is enabled down to them).
	Memory Feature `json:"memory"`
	Pids   Feature `json:"pids"`
	// MemberExits is pidfd_open (Linux 5.3): the death of a daemon's
	// master whose workers live on in its container is an event. Without
	// it only the container's emptying is, and status polls see the rest.
	MemberExits Feature `json:"member_exits"`
}

// Available reports whether containers work.
func (s Support) Available() bool { return s.Containers.OK }

// Missing lists the missing layers, one "layer: reason" each.
func (s Support) Missing() []string {
	var out []string
	for _, l := range []struct {
		name string
		f    Feature
	}{
		{"cgroup v2 process containers", s.Containers}, {"cgroup.kill", s.Kill}, {"cgroup.freeze", s.Freeze},
		{"memory.max", s.Memory}, {"pids.max", s.Pids}, {"member exits (pidfd)", s.MemberExits}} {
		if !l.f.OK {
			out = append(out, l.name+": "+l.f.Reason)
		}
	}
	return out
}

// String is the multi-line report of svcrun status and svcrun sandbox.
func (s Support) String() string {
	var b strings.Builder
	mount := s.Mount
	if mount == "" {
		mount = "(none)"
	}
	fmt.Fprintf(&b, "cgroup v2 mount %s, svcrun's cgroup %s, base %s\n", mount, orNone(s.Own), orNone(s.Base))
	if s.Containers.OK {
		fmt.Fprintf(&b, "process containers: cgroup v2 (one per service, ops cloned into it)\n")
	} else {
		fmt.Fprintf(&b, "process containers: process groups and signals (%s)\n", s.Containers.Reason)
	}
	fmt.Fprintf(&b, "cgroup.kill: %s\n", s.Kill)
	fmt.Fprintf(&b, "cgroup.freeze: %s\n", s.Freeze)
	fmt.Fprintf(&b, "controllers available: %s\n", orNone(strings.Join(s.Controllers, " ")))
	fmt.Fprintf(&b, "memory.max: %s\n", s.Memory)
	fmt.Fprintf(&b, "pids.max: %s\n", s.Pids)
	fmt.Fprintf(&b, "member exits (pidfd): %s\n", s.MemberExits)
	return b.String()
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// Status is one container, for status and tests.
type Status struct {
	Service string
	Path    string
	// Populated and Frozen are the last cgroup.events seen.
	Populated, Frozen bool
	// Armed says the container held a process that outlived an op: its
	// emptying will be reported.
	Armed bool
	// Ops counts the service's ops running now.
	Ops int
	// Memory and Pids say what memory.max and pids.max were set to:
	// "max" (no cap), a number, or "missing: <why>".
	Memory, Pids string
}

// LimitsStatus is what Limits did.
type LimitsStatus struct {
	Memory, Pids string
}

// ErrBusy is returned by Remove for a container that is populated or has
// an op running.
var ErrBusy = errors.New("cgroup: container in use")

// ErrRemoved is wrapped by the error of OpStart and Create for a container
// removed under the Manager (by another svcrun, or by hand): Recover
// re-creates it.
var ErrRemoved = errors.New("cgroup: process container removed")

// ErrInUse is wrapped by the Err of a Manager whose base cgroup another
// svcrun (another Manager) holds: two svcruns with the same node_id would
// otherwise remove, kill and freeze each other's containers.
var ErrInUse = errors.New("cgroup: process containers in use by another svcrun")

// DefaultWait is the bound the tests and the CLI give Kill, Freeze and Thaw.
const DefaultWait = 2 * time.Second

// The name patterns are compiled on first use: their counted repetitions
// make big programs, and every command of the binary, a client's too, would
// compile them at start.
var (
	serviceNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`) })
	baseNameRE    = sync.OnceValue(
		func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$`) })
)

// splitService checks a service's full name module/name and returns its
// parts.
func splitService(service string) (module, name string, err error) {
	module, name, ok := strings.Cut(service, "/")
	if !ok || !serviceNameRE().MatchString(module) || !serviceNameRE().MatchString(name) {
		return "", "", fmt.Errorf("cgroup: %q is not a service name (module/name, each [a-z0-9][a-z0-9-]*)", service)
	}
	return module, name, nil
}

// baseName is the base cgroup's name for o.
func (o Options) baseName() (string, error) {
	name := o.Name
	if name == "" {
		name = "svcrun"
		if o.NodeID != "" {
			name += "-" + o.NodeID
		}
	}
	if !baseNameRE().MatchString(name) || strings.HasPrefix(name, "cgroup.") {
		return "", fmt.Errorf("cgroup: %q cannot name the base cgroup", name)
	}
	return name, nil
}
