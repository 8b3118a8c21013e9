package executor

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"syscall"
	"testing"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/protocol"
)

// TestOutcomeKeepsReasons: a protocol error's violations reach the
// outcome one by one, so that nobody decodes the output again to list
// them.
func TestOutcomeKeepsReasons(t *testing.T) {
	for _, tc := range []struct {
		name    string
		out     protocol.Output
		failure engine.FailureKind
		reasons []string
	}{
		{"protocol error", protocol.Output{Stdout: []byte(`{"healthy":true,"runing":false}` + "\n")}, engine.FailProtocol,
			[]string{"/runing: unknown property", "/running: missing required property (a service must report it)"}},
		{"op error", protocol.Output{Stdout: []byte(`{"ok":false,"message":"no"}` + "\n"), ExitCode: 1}, engine.FailOp, nil},
		{"success", protocol.Output{Stdout: []byte(`{"healthy":true,"running":false}` + "\n")}, engine.FailNone, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Outcome(protocol.OpFingerprint, protocol.RoleService, Result{Output: tc.out, Pid: 1})
			if o.Failure != tc.failure || !slices.Equal(o.Reasons, tc.reasons) {
				t.Errorf("outcome %+v, want %s with reasons %q", o, tc.failure, tc.reasons)
			}
		})
	}
}

// TestOutcomeOfSpawnErr: an op that could not be started is the node's
// failure (prepare) when the node's resources failed, and the module's
// (spawn) otherwise.
func TestOutcomeOfSpawnErr(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		failure engine.FailureKind
	}{
		{"data dir full", fmt.Errorf("svcenv: write settings.json: %w", syscall.ENOSPC), engine.FailPrepare},
		{"data dir over quota", fmt.Errorf("svcenv: write settings.json: %w", syscall.EDQUOT), engine.FailPrepare},
		{"data dir read-only", fmt.Errorf("svcenv: chmod home: %w", syscall.EROFS), engine.FailPrepare},
		{"disk failing", &os.PathError{Op: "fork/exec", Path: "/b/svc", Err: syscall.EIO}, engine.FailPrepare},
		{"no descriptors", fmt.Errorf("executor: stdout pipe: %w", syscall.EMFILE), engine.FailPrepare},
		{"no descriptors on the node", fmt.Errorf("executor: stdout pipe: %w", syscall.ENFILE), engine.FailPrepare},
		{"no processes", &os.PathError{Op: "fork/exec", Path: "/b/svc", Err: syscall.EAGAIN}, engine.FailPrepare},
		{"no memory", &os.PathError{Op: "fork/exec", Path: "/b/svc", Err: syscall.ENOMEM}, engine.FailPrepare},
		{"bundle replaced", nodeFault{errors.New("the bundle of module m was replaced")}, engine.FailPrepare},
		{"executable missing", &os.PathError{Op: "fork/exec", Path: "/b/svc", Err: syscall.ENOENT}, engine.FailSpawn},
		{"not executable", &os.PathError{Op: "fork/exec", Path: "/b/svc", Err: syscall.EACCES}, engine.FailSpawn},
		{"bad format", &os.PathError{Op: "fork/exec", Path: "/b/svc", Err: syscall.ENOEXEC}, engine.FailSpawn},
		{"unknown target", errors.New("status: no service m/x in the loaded modules"), engine.FailSpawn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Outcome(protocol.OpStart, protocol.RoleService, Result{SpawnErr: tc.err})
			if o.Failure != tc.failure || o.Message != tc.err.Error() {
				t.Errorf("outcome %+v, want %s: %s", o, tc.failure, tc.err)
			}
		})
	}
}
