package executor

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/protocol"
)

// Outcome turns the result of an op process into what the engine acts on,
// through protocol.Decode, the one interpreter of op output:
//
//   - SpawnErr: FailPrepare when the node is to blame, FailSpawn when the
//     module is (failureOf);
//   - TimedOut or Canceled: FailTimeout, whatever the op printed (a
//     canceled op may not have started at all);
//   - StdoutTruncated: FailProtocol (the op was killed at the limit, so its
//     exit status says nothing);
//   - otherwise Decode decides: a result, FailOp for a *protocol.OpError,
//     FailProtocol for a *protocol.ProtocolError (or a bad call), whose
//     violations are kept in Reasons.
//
// Message is one line for people: what went wrong and, where it helps, the
// last line of stderr; not the op nor the kind of failure, which whoever
// shows it names ("start failed: exit status 1: ...", as the engine says). The result's warnings (an owned object
// skipped for a bad id) stay in Outcome.Result.Warnings.
func Outcome(op protocol.Op, role protocol.Role, res Result) engine.Outcome {
	switch {
	case res.SpawnErr != nil:
		return engine.Outcome{Failure: failureOf(res.SpawnErr), Message: res.SpawnErr.Error()}
	case res.Canceled && res.Pid == 0:
		return engine.Outcome{Failure: engine.FailTimeout, Message: "canceled before it started"}
	case res.TimedOut || res.Canceled:
		var b strings.Builder
		if res.TimedOut {
			fmt.Fprintf(&b, "killed after %v; its process group got SIGTERM", roundDuration(res.Timeout))
		} else {
			fmt.Fprintf(&b, "canceled after %v; its process group got SIGTERM", roundDuration(res.Duration))
		}
		if res.Escalated {
			b.WriteString(", then SIGKILL")
		}
		stderrLine(&b, res.StderrTail)
		return engine.Outcome{Failure: engine.FailTimeout, Message: b.String()}
	}
	out := res.Output
	if out.StdoutTruncated {
		// The op was killed at the limit: its exit status is ours, and
		// the output is invalid already.
		out.ExitCode = 0
	}
	r, err := protocol.Decode(op, role, out)
	if err == nil {
		return engine.Outcome{Result: r}
	}
	var oe *protocol.OpError
	var pe *protocol.ProtocolError
	var reasons []string
	if errors.As(err, &pe) {
		reasons = pe.Reasons
	}
	switch {
	case errors.As(err, &oe):
		msg := oe.Detail()
		if res.Signal != 0 && oe.Message == "" {
			var b strings.Builder
			fmt.Fprintf(&b, "killed by signal %d (%v)", int(res.Signal), res.Signal)
			stderrLine(&b, res.StderrTail)
			msg = b.String()
		}
		return engine.Outcome{Failure: engine.FailOp, Message: msg}
	}
	msg := err.Error() // a bad call, not the op's output
	if pe != nil {
		msg = pe.Detail()
	}
	if res.StdoutTruncated {
		msg += " (the op was killed)"
	}
	return engine.Outcome{Failure: engine.FailProtocol, Message: msg, Reasons: reasons}
}

// nodeErrnos are the errors of an op that could not be prepared or
// started for want of the node's resources: its data dir cannot be
// written (full, over quota, read-only, failing), or descriptors,
// processes or memory ran out for the pipes and the fork.
var nodeErrnos = []error{
	syscall.ENOSPC, syscall.EDQUOT, syscall.EROFS, syscall.EIO,
	syscall.EMFILE, syscall.ENFILE, syscall.EAGAIN, syscall.ENOMEM,
}

// nodeFault marks a failure of the node whatever its errno (a bundle
// replaced since it was loaded, a sandbox the node's configuration or
// kernel refuses).
type nodeFault struct{ error }

func (f nodeFault) Unwrap() error { return f.error }

// failureOf tells whose an op that could not be started is: the node's
// (FailPrepare: nothing of the module ran, and nothing it did or is
// could have helped; the engine never holds it against the service) or
// the module's (FailSpawn: its executable is missing or not executable,
// its bundle or manifest is invalid).
func failureOf(err error) engine.FailureKind {
	if errors.As(err, new(nodeFault)) {
		return engine.FailPrepare
	}
	for _, e := range nodeErrnos {
		if errors.Is(err, e) {
			return engine.FailPrepare
		}
	}
	return engine.FailSpawn
}

func stderrLine(b *strings.Builder, tail []byte) {
	if l := protocol.LastLine(tail); l != "" {
		b.WriteString(" (stderr: ")
		b.WriteString(l)
		b.WriteString(")")
	}
}

// roundDuration shows a duration with at most millisecond precision.
func roundDuration(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Microsecond)
}
