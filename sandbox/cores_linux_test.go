package sandbox

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/oarbank/svcrun/executor"
)

// TestDisableCores runs in a child process (it lowers the process's hard
// limit for good) and checks that a grandchild cannot raise it.
func TestDisableCores(t *testing.T) {
	if os.Getenv("SVCRUN_CORES_CHILD") == "1" {
		if err := DisableCores(); err != nil {
			t.Fatal(err)
		}
		var l unix.Rlimit
		if err := unix.Getrlimit(unix.RLIMIT_CORE, &l); err != nil || l.Cur != 0 || l.Max != 0 {
			t.Fatalf("RLIMIT_CORE %+v, %v", l, err)
		}
		out, _ := childOutput(exec.Command("sh", "-c", "ulimit -c unlimited 2>/dev/null && echo raised || echo refused"))
		if strings.TrimSpace(string(out)) != "refused" {
			t.Fatalf("an op raised its core limit: %s", out)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestDisableCores$", "-test.v")
	cmd.Env = append(os.Environ(), "SVCRUN_CORES_CHILD=1")
	if out, err := childOutput(cmd); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

// childOutput runs cmd and returns its stdout, and its stderr too unless
// cmd has its own: started through the executor, as every child of this
// subreaper must be (TestMain), or the reaper may take its exit status
// first (waitid: no child processes).
func childOutput(cmd *exec.Cmd) ([]byte, error) {
	var out bytes.Buffer
	cmd.Stdout = &out
	if cmd.Stderr == nil {
		cmd.Stderr = &out
	}
	err := executor.RunCmd(cmd)
	return out.Bytes(), err
}
