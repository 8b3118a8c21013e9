// Package engine is the service manager's engine: one single-threaded state
// machine that holds every rule of service protocol 1, and the driver loop
// that connects it to a world.
//
// # The engine
//
// Engine.Step takes one Event at a time and returns the Effects to carry
// out. It never reads the clock, sleeps, starts goroutines or touches the
// OS: time is the argument of Step, ops are RunOp effects answered by
// OpDone events, timers are SetTimer effects answered by Fire events. Maps
// are iterated in sorted order, so the same events give the same effects,
// byte for byte; this is what makes the simulator deterministic and the
// property tests meaningful.
//
// The rules it implements (docs/protocol.md, and docs/decisions.md,
// Agent rules): the three lifecycles and platform filtering; refcounting by leases and the readiness gate; idle
// stop; watching by status and fingerprint and container-emptied events
// (status every watched period while the container holds the daemon,
// container-populated, since its death is then an event);
// health (a stopped service whose latest fingerprint says unhealthy is not
// started);
// exponential backoff, unhealthy at max_failures, reset; adoption after an
// agent restart; pools reserved atomically with FIFO admission and
// deadlines, leases with TTL, one lease per attempt (an acquire repeated
// with the same requirements gets the lease already held); the memory budget with yielding; freezing (a
// service thawed for an admission is checked by a status first);
// stop escalation; per-service op serialization and a global cap on ops in
// flight; reaping, in rounds that never overlap (a ReapNow during a round
// gets the next one, and a ReapDone ends a round asked for) and list only
// the services that may hold an orphan, but for the first round, a sweep
// every ReapSweepPeriod and a ReapNow, which list every running one; probes and doctor events; enabling, disabling and
// removing modules (a removal is a disable whose admitted leases end,
// Expired with a Reason, and whose services are forgotten once stopped);
// the faults of the node itself, never charged to a holder or a module
// (a pause of svcrun moves the deadlines that judge them, an op svcrun
// could not prepare counts no failure and kills nothing, a container that
// still holds processes is stopped before a start, a member of a
// container that exits alone runs its status at once).
// Each rule's file here, and the scenarios that play it, are in the
// table of scenarios/README.md ("Rules and files"), which a test keeps
// complete against the rules marked in the documentation.
//
// # The driver contract
//
// A driver feeds the engine and carries out its effects. Driver.Run is the
// one loop that does it: svcrun's agent, the simulated world and the
// benchmark workload all run it, on a real or a virtual scheduler; their
// own events (the agent's calls, the fake executor's crashes, a workload's
// jobs) travel on the same scheduler and are taken by Driver.Own, and
// Driver.After sees each step once carried out (the agent journals it, the
// simulator checks its invariants). The contract:
//
//   - Boot is the first event, once, with the state the store kept.
//   - The effects of one step are carried out in order, except that the
//     persistence effects (PutLease, DeleteLease, PutService) of a step are
//     made durable together, in one transaction, BEFORE any other effect of
//     that step is carried out. In particular an Admitted answer is never
//     sent, and no op is started, before the lease that caused it is on
//     disk: a crash at any moment loses no admitted lease. If the store
//     fails, the driver must stop without carrying out the step's other
//     effects.
//   - Every RunOp is answered by exactly one OpDone with its ID, after the
//     op's process (and any process it left in the foreground) has ended or
//     been killed at its Timeout.
//   - SetTimer replaces the pending timer of the same key; CancelTimer
//     drops it; a cancelled or replaced timer never fires. A Fire may come
//     late but never early.
//   - A step's effects are the driver's until the next Step, which reuses
//     the slice and the storage its *RunOp, *SetTimer and *CancelTimer
//     point to: what is kept longer is copied (an executor gets its RunOp
//     by value).
//   - Kill, Freeze and Thaw act on a service's process container and are
//     done before the next event is stepped.
//   - Admitted, AlreadyHeld, Rejected, Renewed, Released, Expired and
//     LeaseUnknown are
//     answers for the holders of leases, ReapDone for the callers of a
//     ReapNow with a ticket; Note explains decisions for logs
//     and traces.
package engine
