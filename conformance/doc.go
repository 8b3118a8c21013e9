// Package conformance is `svcrun check`: it owns the checks a module's
// services and probes must pass to follow service protocol 1
// (docs/check.md), and runs them through the agent's own op runner.
//
// Every op runs as the daemon runs it: executor.Executor.RunWait, with the
// module's environment and data dir, its sandbox (sandbox.For), the
// protocol's timeout of the op (start: the manifest's start_timeout_s),
// the validation of the output (executor.Outcome), and each service in
// its cgroup v2 process container where the host allows it (as root),
// else in the process groups of the executor's fallback. The container
// is what the checks count processes in: the daemons a start left, what a
// stop left behind (executor.Result.Left).
//
// The checks are data: the checks table names each one, says whether it
// applies to services, probes or both, which checks it needs to have
// passed, and the function that judges it from the ops it runs. A check
// passes, fails, or is skipped: skipped when a check it needs did not
// pass, or when one of its ops timed out or broke the protocol, which is
// then reported once, by the checks output and timeouts, judged last over
// every op of the service or probe. So a module with one flaw fails one
// check.
//
// Check runs the checks of the services and probes asked for, one target
// after the other and one op at a time, and stops what it started: after
// every check a service whose container is not empty (or that a check
// started) gets a stop, then a kill of its container; at the end the
// containers are removed with their base cgroup, whatever failed.
package conformance
