package module

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/oarbank/svcrun/protocol"
)

// chatty prints on stdout from inside its op, as careless code does.
type chatty struct{ fake }

func (c *chatty) Fingerprint(*Call) (protocol.Fingerprint, error) {
	fmt.Println("debug: fingerprinting")
	running := false
	return protocol.Fingerprint{Healthy: true, Running: &running}, nil
}

// TestMain lets the test binary be a service (SDK_TEST_MAIN=service) or a
// probe (=probe) for TestMainStdout.
func TestMain(m *testing.M) {
	switch os.Getenv("SDK_TEST_MAIN") {
	case "service":
		Main(&chatty{})
	case "probe":
		MainProbe(&chatty{})
	}
	os.Exit(m.Run())
}

// TestMainStdout: under Main and MainProbe a method's prints reach stderr,
// and stdout holds the one document.
func TestMainStdout(t *testing.T) {
	for _, c := range []struct {
		role string
		who  protocol.Role
	}{{"service", protocol.RoleService}, {"probe", protocol.RoleProbe}} {
		t.Run(c.role, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "fingerprint")
			data := t.TempDir()
			cmd.Env = []string{"SDK_TEST_MAIN=" + c.role, "OARBANK_MODULE_DATA=" + data, "OARBANK_MODULE=m",
				"OARBANK_SERVICE=s", "OARBANK_NODE_ID=n1"}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v: %s %s", err, stdout.String(), stderr.String())
			}
			if _, err := protocol.Decode(protocol.OpFingerprint, c.who, protocol.Output{Stdout: stdout.Bytes()}); err != nil {
				t.Errorf("stdout %q: %v", stdout.String(), err)
			}
			if !strings.Contains(stderr.String(), "debug: fingerprinting") {
				t.Errorf("stderr %q lacks the method's print", stderr.String())
			}
		})
	}
}
