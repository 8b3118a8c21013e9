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
// The rules it implements are marked where the documentation states them,
// each with an anchor rule-NAME in docs/protocol.md or docs/decisions.md.
// The table "Rules and files" of scenarios/README.md maps each mark to the
// files here that hold it and to the scenarios that play it; TestRuleTable
// (sim/scenario) keeps the marks, the rows and the scenarios in step.
//
// The files follow the ideas: engine.go holds the Engine, Step, settling
// and the emit and timer primitives; service.go a service's lifecycle,
// failures and reset; lease.go leases and admission; memory.go the memory
// budget and pressure; probe.go probes and doctor events; reap.go reaping;
// modules.go boot and reloads; pause.go svcrun's own pauses; events.go and
// effects.go what goes in and out of Step, effects.go with their one-line
// text.
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
