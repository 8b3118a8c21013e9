package executor

import (
	"slices"
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
