// Package protocol owns service protocol 1 as the agent sees it: the seven
// ops and their default timeouts, the typed results (the Go counterpart of
// the SDK's oarbank_sdk.service_protocol models), the rules for object ids
// and ownership labels, and Decode, the one function that turns an op's raw
// output into a typed result or an error. Nothing else in the agent reads a
// service's stdout.
//
// It is pure: no processes, no clock, no I/O. The executor runs the op and
// fills an Output; the engine acts on the Result or the error.
//
// # Decoding
//
// The exit status is authoritative (spec: "Exit 0 means the operation
// succeeded"):
//
//   - Exit 0: stdout must be one JSON document valid against the op's schema
//     (package schemas), else Decode returns a *ProtocolError listing every
//     problem.
//   - Non-zero exit: Decode returns an *OpError. Stdout is only mined for a
//     "message"; garbage there is not a protocol error, because a failing
//     op may have died before printing anything sensible.
//   - ok must agree with the exit status in the results of start, stop and
//     destroy: ok:false with exit 0, or ok:true with a non-zero exit, is a
//     *ProtocolError.
//
// Both error types count as a failed op; errors.As tells them apart for
// messages and metrics. Both carry the stderr tail, and their Error() is one
// line naming the op, the problems and the last line of stderr.
//
// # Strictness
//
// Protocol 1 is strict so that a mistake in a service fails loudly at once
// rather than being half-understood. On exit 0 these are protocol errors:
// stdout over MaxStdout (1 MiB) or truncated by the executor; a UTF-8 byte
// order mark (RFC 8259 forbids emitting one); invalid UTF-8 (the byte offset
// is given); no document, only white space, two documents or trailing
// garbage (each said so); duplicate object keys (key and pointer given); a
// lone UTF-16 surrogate escape (encoding/json would turn it into U+FFFD
// silently); nesting deeper than 64 levels; a number literal longer than 100
// characters, with an exponent beyond ±400, or outside float64 range; every
// schema violation, each with its JSON pointer; a service's fingerprint
// without running (probes may omit it). Reasons are sorted by JSON pointer,
// array indexes numerically.
//
// Numbers follow JSON Schema: 2.0 and 2e0 are integers, so a pool of 2.0
// decodes as 2; a pool above the int64 range is a protocol error. Attrs
// numbers decode as float64.
//
// # Owned objects
//
// An object of list_owned whose id fails ValidObjectID is left out of the
// result with a warning naming its index and the rule it broke; it never
// fails the whole list, since the other objects can still be reaped, and it
// can never be passed to destroy. Every Object.ID in a decoded OwnedList
// passes ValidObjectID.
//
// # Encoding
//
// Each result type has a MarshalJSON giving its wire document, for services
// written in Go (the SDK, sdk/module): the types carry no JSON tags, so
// nothing reads an op's output but Decode, and what they encode to is what
// Decode accepts.
//
// # Performance
//
// Stdout is parsed once, by a small parser of this package that also checks
// what encoding/json cannot (duplicate keys, second documents); the schema
// validates that generic value, and the typed result is built from the same
// value. Decoding a typical fingerprint takes about 4-5 µs of CPU in 35
// allocations (BenchmarkDecodeFingerprint), most of it in the parser; the
// validation (package schemas) takes about 1 µs and one allocation
// (bench/README.md, row decode).
package protocol
