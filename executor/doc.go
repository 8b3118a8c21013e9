// Package executor runs the ops of services and probes as processes: the
// real world's engine.Executor (docs/architecture.md), and the runner behind
// `svcrun op`.
//
// # One op process: Spawn
//
// Spawn(ctx, Spec) runs one op process synchronously and returns a Result:
//
//   - Exec: Spec.Path, an absolute path (the manifest's exec[0] resolved
//     inside the bundle by resolveCommand; no PATH lookup, no shell), with
//     argv exec[1:], the op, the op's arguments; working directory the
//     bundle root.
//   - Environment: exactly Spec.Env (svcenv.Environ). Nothing of svcrun's
//     own environment is added; a nil Env is an empty one.
//   - stdin is /dev/null, opened once for all ops. stdout is read up to
//     protocol.MaxStdout+1 bytes: one byte more sets StdoutTruncated and
//     kills the op's process group at once, since the output is invalid
//     whatever follows. stderr is drained as it comes and only its last
//     protocol.StderrTailSize bytes are kept, so the op never blocks on it.
//   - Process group: the op leads a group of its own (its pid is the group
//     id), which every process it forks joins unless it leaves.
//   - Timeout: at Spec.Timeout, or when ctx ends, the group gets SIGTERM;
//     Grace (DefaultGrace) later, SIGKILL, unless the group emptied.
//     Result.TimedOut (or Canceled) and Escalated say what happened. The
//     group of an op that exits on its own is never signalled: a start
//     op's daemons live there.
//   - Leftovers: once the op's process has exited, stdout and stderr are
//     read for at most WaitDelay (DefaultWaitDelay) more, so a daemon that
//     kept them open cannot hold the op (Result.PipesHeld).
//   - Result: the protocol.Output (stdout, stderr tail, exit status, 128+n
//     for a death by signal n), the pid, SpawnErr when it could not be
//     started at all, and the duration.
//
// Outcome(op, role, Result) turns a Result into the engine's
// engine.Outcome through protocol.Decode, the one interpreter of op
// output: FailPrepare or FailSpawn (see below), FailTimeout, FailProtocol
// (also for an overrun stdout), FailOp, or the decoded result; Message is one line for people with the
// last line of stderr where it helps.
//
// # Two engines
//
// On Linux (5.3 and later) the op's own goroutine waits in poll(2) on its
// two pipes and on the op's pidfd, which becomes readable at the exit, and
// reads what is ready: the work of a C posix_spawn loop, and close to its
// time (bench/README.md#op has today's ratio). Elsewhere, and on older kernels, the
// portable engine uses os.StartProcess, the runtime's poller and a goroutine
// in Wait. Both pass the same tests.
//
// # Sandbox hooks
//
// Spec.Hooks is the extension point of the sandbox (docs/decisions.md, Sandbox):
// SysProcAttr adjusts the child's attributes (Credential for run_as,
// Cloneflags for namespaces, UseCgroupFD and CgroupFD to clone the op into
// its service's cgroup), and Launch runs the fork on the thread it must
// happen on (a locked OS thread confined by Landlock), and Started sees
// the op's pid as soon as it runs (the sandbox's prlimit of RLIMIT_CORE; an
// error there kills the op and fails it as a spawn). Files handed to the
// child are opened before Launch, on Spawn's goroutine. Package sandbox
// builds these hooks.
//
// # The reaper
//
// BecomeSubreaper makes svcrun the child subreaper of its descendants
// (prctl PR_SET_CHILD_SUBREAPER): a daemon that an op forks and abandons is
// re-parented to svcrun rather than to init, and so stays reachable. The
// executor of svcrun serve (Config.Subreaper) calls it in both modes. In
// process groups the reaper's orphan exits are the crash events. With
// cgroup containers the cgroups tell the deaths, but the zombie must still
// go at once: init may reap late (seconds on some VMs) or never (a
// container whose PID 1 does not reap), and a zombie answers kill -0, so a
// restart's start would take the dead daemon for a live one. A reaper,
// blocked in waitid(P_ALL, WEXITED|WNOWAIT) rather than driven by
// SIGCHLD, reaps those orphans when they die. In svcrun serve it runs on
// the main thread, which Main gives it, with __WNOTHREAD: the kernel
// re-parents orphans to that thread and ops are forked on others, so the
// reaper is woken by, and looks at, the orphans only. Elsewhere (a
// program without Main) it is a goroutine, woken by every op's end to
// look at every child (the idle CPU of 1,000 services: bench/HISTORY.md,
// the idle figure on a PVM guest). It never reaps a child
// that Spawn or StartCmd waits for: those are registered, under a lock that
// the reaper takes to reap, before the reaper can see them. In a process
// that called BecomeSubreaper every child must therefore be started by Spawn
// or StartCmd; an exec.Cmd started otherwise may lose its exit status.
// A start op reaps the dead orphans itself before it is spawned: the retry
// of a crashed daemon follows the emptying of its container within
// milliseconds, and a start that asks whether the daemon of its pid file
// still runs (kill -0) would otherwise find its zombie, if the reaper has
// not got to it, and answer "already running". That look is cheap beside
// one live daemon per running service: it takes no lock a spawn needs, a
// zombie in flight is left to its owner first (up to ownerWaitMin), and only then
// are the children asked, one waitid each, whether they exited.
// Before it reaps an orphan the reaper tells the cgroup Manager whether a
// signal killed it (NoteChildExit): a daemon's master that svcrun
// inherited is such an orphan, and its death by a signal is a crash the
// engine takes without a status (docs/decisions.md, rule-member-exited).
// Linux only; elsewhere orphans go to init (launchd), which reaps them.
//
// # The engine.Executor
//
// New(Config, post) builds the executor of a node from its configuration
// and loaded modules (nodeconfig.LoadModules: each manifest with its
// [[modules]] entry). Every service and probe that runs on the host
// platform gets, once, its command (resolveCommand), its environment
// (svcenv.Environ with the module data dir <data_dir>/modules/<module>) and
// its sandbox hooks. Before a module's first op, and again after Update,
// its data dir is prepared and its settings, tools and limits files
// written (svcenv.Prepare, WriteFiles), where they are not already as
// they would be written: an op on a full data dir whose module's
// configuration did not change needs no write.
//
// An op that could not be started is classified once, in Outcome
// (failureOf): FailPrepare when the node is to blame (its data dir cannot
// be written: ENOSPC, EDQUOT, EROFS, EIO; the pipes or the fork are
// refused for lack of descriptors, processes or memory: EMFILE, ENFILE,
// EAGAIN, ENOMEM; the module's bundle was replaced since it was loaded,
// which a reload resolves), FailSpawn when the module is (its executable
// missing or not executable, its bundle, manifest or sandbox refused, an
// unknown target). The engine never holds a FailPrepare against the
// service: nothing of the module ran.
//
// One name per verb: Spawn is one op process; Run(RunOp), engine.Executor's
// verb, is the asynchronous op; RunWait the synchronous op of the same
// executor; RunStandalone the synchronous op without an executor around
// it; PrepareDataDir the preparation of a module's data dir alone.
//
// Run(RunOp) returns at once; a goroutine waits until no op an earlier
// svcrun started on the service still runs (see "Ops across restarts"),
// then for a slot of the global cap (Config.MaxConcurrentOps, default the
// node's max_concurrent_ops), runs the op, and posts
// &engine.OpDone{ID, Outcome}. Every RunOp is answered
// exactly once, failures included (unknown target, a probe asked for more
// than fingerprint: FailSpawn). Close kills the ops still running and waits
// for their OpDone. RunWait runs an op the same way synchronously and
// returns its Result with the Outcome, nothing posted; Procs lists a
// service's living processes, and a stop's Result.Left what it left
// behind: svcrun check judges a module by them.
//
// RunStandalone(ctx, Config, RunOp) is one op of the same assembly,
// synchronous, without a daemon around it: `svcrun op` runs it, so that
// the module data dir (<data_dir>/modules traversable, 0711, for run_as),
// its files, the environment, the command, the timeout, the sandbox hooks
// and the outcome are those of the daemon's ops. It has no process
// container, no cap on concurrent ops and no record for a later svcrun.
//
// The Config of a node's ops (its configuration, modules, run_as identity
// and sandbox hooks) is built by sandbox.ExecutorConfig, for the daemon,
// `svcrun op` and `svcrun check` alike; each adds only what is its own.
//
// # Process containers
//
// With Config.Containers (a working cgroup.Manager), every service has a
// cgroup v2 of its own and each of its ops is cloned straight into it
// (SysProcAttr.UseCgroupFD, composed after the target's own SysProcAttr
// hook), so whatever a start leaves behind stays there, double forks and
// setsid'd processes included. Kill writes cgroup.kill, Freeze and Thaw
// cgroup.freeze, none of them waiting (they run on the driver's loop). The
// node's limits become memory.max and pids.max where those controllers are
// enabled (recorded missing otherwise). The Manager is told when each op
// starts and ends: a container still populated at the end of an op holds a
// daemon and is armed (engine.ContainerPopulated is posted, before the op's
// OpDone: the service is contained, and status becomes a safety net), and
// when an armed container empties with no op of the service running,
// engine.ContainerEmptied is posted (bench/README.md#master-death has how
// soon after the death; the package cgroup doc has the rule). An op
// whose clone into its cgroup fails because the container was removed
// under svcrun (the clone's ENOENT reads as a missing executable) runs in
// the container re-created for it (cgroup.Manager.Recover, logged at
// WARN). An op whose clone fails otherwise is run again without it, and if
// that starts, the service falls back to process groups until Update, with
// the cause in ContainerMode.
// Probes always run in process groups. ContainerMode says, per service,
// "cgroup" or "process-group: <why>".
//
// After every stop op, whatever its outcome, what is left in the service's
// container is killed (cgroup.kill; in the fallback SIGKILL to the
// service's known process groups) and waited for, bounded, before the stop
// counts as ended and its OpDone is posted, as systemd's
// KillMode=control-group does: a worker that outlived its SIGKILLed master
// would otherwise hold what the next start needs (its port), and that
// start would fail. The kill happens while the stop still counts as
// running, so the container is not armed by it; the emptying that the stop
// itself causes is posted, if at all, before the stop's OpDone, while the
// engine is stopping the service, which does not take it for a crash.
//
// The fallback, for services without a container: Kill, Freeze and Thaw
// send SIGKILL, SIGSTOP and SIGCONT to the process groups of the service:
// those of its running ops and those its ops left processes in (the daemon
// of a start). A process that leaves its group (setsid, or a double fork
// that changes group) is out of reach, and a group id is forgotten once the
// group is seen empty (at the end of each of the service's ops and before
// every signal), so a group id recycled in between could be signalled.
// Where svcrun is the child subreaper (BecomeSubreaper, as svcrun serve
// is in this mode), the daemons its ops leave become its children, and the reaper
// tells the executor the group of each one it reaps: when that empties the
// last group a service's ops left processes in, with none of its ops
// running, engine.ContainerEmptied is posted for the service, as its
// cgroup would, as soon as the reaper has reaped it. A daemon that
// left its group, or one whose parent outside the group still lives, is
// not seen: the status polls find it.
//
// # Ops across restarts
//
// No op of a service begins while an op that an earlier svcrun started on
// it still runs: a start killed with its svcrun (kill -9) would otherwise
// go on in the service's container, the next svcrun's fingerprint would
// say running:false, and a second start would leave two daemons. Before a
// mutating op (start, stop, destroy) is spawned, a record of it is written
// to <data_dir>/ops/<module>.<name>.<svcrun pid>.<op id>.json: the
// service, the op and its argv, the boot id, when it began (wall clock
// and CLOCK_BOOTTIME), its timeout and svcrun's pid. Once the spawn
// returns, a second line adds the op's pid (its process group) and the
// pid's start time (/proc/<pid>/stat field 22), so that a reused pid is
// never taken for the op; when the op, and after a stop the kill of what it
// left, have ended, the record is removed (its file is renamed to a free
// name, <pid>.<token>.<n>.free, emptied and reused by a later op: a file created
// and removed per op made ext4 search past every inode freed in the last
// minute; the next svcrun removes the free files). Each line is one write(2),
// without fsync: the records must survive the death of svcrun's process,
// not of the machine, whose crash ends the ops too (records of an earlier
// boot are dropped). Read-only ops are not recorded: one left
// running changes nothing a fingerprint could be misled by, and
// fingerprint and status run every period.
//
// New reads the records an earlier svcrun left and resolves them in the
// background, and Run holds every op of their service (fingerprints
// included, so before the boot fingerprint) until they are; only that
// service waits, since the engine starts each other service once its own
// fingerprint has answered (a start that reserves memory waits for the
// fingerprints of the services that reserve it): an op whose
// pid still runs with the recorded start time is waited for (its pidfd)
// until it ends or its deadline (began + timeout), then its process group
// gets the timeout treatment (SIGTERM, the grace, SIGKILL). A record
// without a pid (svcrun died between the spawn and the record) is resolved
// on every process group leader that started after the record and is in
// the service's cgroup, or runs the op's argv and started within 5 s of
// it. After a leftover stop, what is left in the service's container (or
// the stop's process group) is killed, as the stop's own end would have.
// Each of these is logged at WARN. An unreadable record is kept and
// reported, since what it names is unknown. The process-group fallback
// holds the same: the op's group is its pid. Linux only: elsewhere nothing
// is recorded.
package executor
