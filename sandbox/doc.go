// Package sandbox confines the ops of a module's services and probes
// (docs/decisions.md, Sandbox): what they may read, write and execute, their network,
// their user, and what they can reach of svcrun. It builds the executor's
// Hooks; it never confines svcrun itself. docs/sandbox.md is the guide for
// people; this is the contract.
//
// # Layers
//
// On Linux an op is confined by these layers, each a Layer whose name
// messages and `svcrun sandbox` use:
//
//   - landlock: Landlock filesystem rules. Read and execute the bundle and
//     the system directories (/usr, /bin, /sbin, /lib*, /etc); read /proc
//     and the approved read grants; read and execute the granted tools (the
//     files); read and write, without execute, the module data dir and the
//     approved write grants; read and write (as files, no ioctl)
//     /dev/null, /dev/zero and /dev/urandom. Nothing else: /run, /tmp,
//     /var, /home, /root, /sys, the rest of /dev, svcrun's data dir and
//     socket stay out. Every right of the kernel's ABI is handled, so what
//     is not granted is denied: REFER (ABI 2), TRUNCATE (3), IOCTL_DEV (5)
//     and RESOLVE_UNIX (9) when the kernel has them. Symbolic links of
//     every path are resolved when the module is planned and checked again
//     when its rules are built.
//   - landlock-truncate: ABI 3 or later; below, truncate(2) of a file the
//     op may only read is not confined.
//   - landlock-scope: ABI 6 abstract Unix socket scoping: the op cannot
//     connect to an abstract socket created outside its module's domain
//     (with network "none" the namespace already hides the host's).
//     Signals are not scoped unless ScopeSignals is set (see there).
//   - unix-sockets: connect(2) to pathname Unix sockets (svcrun's API
//     socket, the container runtimes'). Landlock confines it from ABI 9;
//     below, file permissions do: ops must run as run_as, and run_as must
//     not be able to write svcrun's socket or a container runtime socket
//     that exists (its supplementary groups that could are dropped). A
//     world-writable socket elsewhere (a D-Bus system bus) stays reachable
//     below ABI 9.
//   - no_new_privs: set-user-ID programs do not raise the op's privileges.
//   - netns (network = "none" only): an empty network namespace, with only
//     a loopback that is down. Needs svcrun to be root (CAP_SYS_ADMIN).
//   - run_as: when svcrun is root, ops run as run_as (uid, gid, groups),
//     and the module data dir is theirs (Identity.Owner). An op that runs
//     as root, or as svcrun's own user, can signal svcrun and read its
//     environment in /proc: Landlock stops neither (see below), only a
//     different user does. So svcrun as root without run_as, and svcrun
//     not root at all, report this layer missing.
//   - rlimit_core: RLIMIT_CORE 0. Resource limits belong to the process,
//     not to a thread, and a child inherits its parent's: so while at
//     least one op is being forked svcrun's own soft limit is 0 (the hard
//     one unchanged, so it can be put back without privilege), and the op
//     is born with a soft limit of 0 (no window in which it could dump
//     core). Started then lowers the op's hard limit to 0 with prlimit(2);
//     for a run_as op that needs CAP_SYS_RESOURCE, without which the op
//     keeps svcrun's hard limit. setrlimit on the confining thread would
//     change svcrun's limits for good, and os/exec has no per-child rlimit.
//
// The process containers (cgroup v2, package cgroup) are the executor's:
// its cgroup hook composes after the sandbox's SysProcAttr, so the op is
// cloned into its service's cgroup with its credentials, and, /sys being
// outside every rule, it cannot write itself out of it.
//
// A module whose sandbox is unsound by configuration is refused in both
// modes: a rule that contains svcrun's data dir (its state and every
// module's data) or socket, a write rule that contains the module's
// bundle, a path that reaches a forbidden socket or /dev/kvm once its
// symbolic links are resolved (manifest.Forbidden), an unknown run_as. A
// grant whose path does not exist yet is checked the same way, its links
// followed by their targets' names: a device or socket can appear later.
//
// # Modes
//
// With sandbox = "require", a module whose sandbox misses any layer is
// refused: Hooks returns an error that names each missing layer and why,
// and the executor fails every op of the module with FailSpawn and that
// message. With "best_effort" the ops run with what the host supports;
// Plan.Missing, Report and `svcrun sandbox --config` say exactly what is
// missing. A layer the probe found working that fails when a confining
// thread sets it up fails the op in both modes, naming the layer.
//
// On macOS and Windows nothing is enforced: Probe says so, every module's
// plan misses the layer "sandbox", and require refuses every module.
//
// # How a confined op is started
//
// Landlock, no_new_privs and the network namespace are attributes of a
// thread, which a child inherits from the thread that forks it. For each
// distinct policy (one per module) a goroutine locks itself to an OS
// thread (never the main thread, which kill(2) and /proc/<pid> address)
// and never unlocks it, so that the Go scheduler runs nothing else there
// and the thread dies with the goroutine; threads the runtime creates
// later are cloned from its template thread, not from a locked one. On
// that thread it enters a new network namespace (network "none"), sets
// no_new_privs and calls landlock_restrict_self with raw per-thread system
// calls (not go-landlock's helpers, which confine every thread), then
// serves requests: the executor's Launch hook hands it the op's start
// function, which forks and execs there. svcrun's other threads stay
// unconfined. The executor opens every file handed to the op (stdin,
// pipes, the cgroup directory) on its own goroutine, before Launch.
//
// The thread lives as long as svcrun: every op of a module, and every
// process its ops leave behind, then share one Landlock domain (each
// landlock_restrict_self makes a new one). A reload that changes a
// module's policy gives it a new confining thread; the old one exits once
// idle. A Landlock rule holds the file its path named when the thread was
// confined, so the policy names each path's file too (device and inode):
// a bundle, grant or tool replaced under the same path (a package
// upgrade) is a new policy at the next reload. Per op the hand-off to the
// thread and back costs two pipe wake-ups
// (see BenchmarkSandboxedFingerprintOp).
//
// Per op, SysProcAttr sets the Credential (run_as), Launch forks on the
// confined thread with the soft RLIMIT_CORE at 0, and Started lowers the
// hard one.
//
// # What Landlock does not stop
//
// The op and the svcrun thread that forks it share a domain, and Landlock
// (here, Linux 6.18) checks only ptrace attachment to a process outside
// the domain, not reading /proc/<pid>/environ. So an op of svcrun's own
// user, or root, can signal svcrun (tgkill to the confining thread,
// whatever the scoping) and read its environment: run_as is what
// separates them. Ops of different modules share run_as: they can read
// each other's /proc/<pid>/environ and, without ScopeSignals, signal each
// other's processes; they cannot open each other's files, attach to each
// other, or reach each other's abstract sockets.
package sandbox
