// Package module is the Go SDK for writing the services and probes of a
// svcrun module: one executable per service or probe, called once per op
// (docs/protocol.md).
//
// A service implements Service and calls Main from its main function; a
// probe implements Probe and calls MainProbe. Main reads the op and its
// arguments from the command line and the op's environment (Env) and its
// settings, tools and limits files (Call), runs the one method of the op,
// and prints exactly one JSON document: the result, encoded by package
// protocol (the types svcrun decodes), or on an error {"ok":false,...} for
// start, stop and destroy and {"message":...} for the others. The exit
// status follows: 0 for a result, 1 for an error the method returned (or
// the code of an error made by Exit), 2 for a wrong command line (an
// unknown op, destroy without an id). stdout is the document's alone: under
// Main, what a method prints on os.Stdout goes to stderr, where Call.Logf
// writes too.
//
// Main also keeps the rules a method could forget: a service's fingerprint
// must say running, ok is true exactly when the exit status is 0, and an
// owned object's id must pass protocol.ValidObjectID.
//
// Daemon is the part of a start and a stop that every service repeats:
// detach the daemon into a session of its own (setsid) with its stdio away
// from the op's pipes, keep its pid in a pid file under the module data
// dir, tell whether it is alive, wait for it to end, and stop it with
// SIGTERM then SIGKILL. Env.Labels and Env.Owns are the three ownership
// labels of the objects a service creates for attempts.
package module
