package executor

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/nodeconfig"
	"github.com/oarbank/svcrun/protocol"
	"github.com/oarbank/svcrun/runtime"
)

// A service whose start leaves a daemon in its group and whose status op
// takes a while (as a real status that queries the daemon may).
const review2Script = `#!/bin/sh
data=$OARBANK_MODULE_DATA
case $1 in
start)
	sleep 1000 </dev/null >/dev/null 2>&1 &
	echo $! >"$data/daemon.pid"
	printf '{"ok":true,"changed":true}\n'
	;;
status)
	sleep 1
	printf '{"running":true,"ready":true}\n'
	;;
esac
`

const review2Manifest = `[module]
name = "test"
version = "1.0"

[[services]]
name = "d"
exec = ["bin/svc.sh"]
`

// In the process-group fallback, a daemon that dies while another op of its
// service (a status poll) runs is reported when that op ends (groupExited
// cannot: the op's group is still there), as the cgroup Manager reports
// the same death at the op's end (OpEnd).
func TestDaemonDeathDuringAnOpIsReported(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bundle", "bin", "svc.sh")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte(review2Script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "bundle", manifest.FileName), []byte(review2Manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "svcrun.toml")
	node, err := nodeconfig.Parse(file, file, []byte(testNode), nodeconfig.Host{Hostname: "h", MemoryBytes: 8 << 30, Cores: 2, Platform: "linux"})
	if err != nil {
		t.Fatal(err)
	}
	mods, err := nodeconfig.LoadModules(node)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan runtime.OpDone, 10)
	emptied := make(chan string, 10)
	x, err := New(Config{Node: node, Modules: mods, WaitDelay: 100 * time.Millisecond}, func(ev runtime.Event) {
		switch ev := ev.(type) {
		case runtime.OpDone:
			done <- ev
		case runtime.ContainerEmptied:
			emptied <- ev.Service
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(x.Close)
	target := runtime.Target{Module: "test", Name: "d"}
	x.Run(runtime.RunOp{ID: 1, Target: target, Op: protocol.OpStart, Timeout: 10 * time.Second})
	if d := <-done; d.Outcome.Failure != runtime.FailNone {
		t.Fatalf("start: %+v", d.Outcome)
	}
	b, err := os.ReadFile(filepath.Join(node.ModuleDataDir("test"), "daemon.pid"))
	if err != nil {
		t.Fatal(err)
	}
	daemon, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	t.Cleanup(func() { syscall.Kill(daemon, syscall.SIGKILL) })

	// A status poll runs; the daemon crashes meanwhile.
	x.Run(runtime.RunOp{ID: 2, Target: target, Op: protocol.OpStatus, Timeout: 10 * time.Second})
	time.Sleep(300 * time.Millisecond)
	if err := syscall.Kill(daemon, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if d := <-done; d.Outcome.Failure != runtime.FailNone {
		t.Fatalf("status: %+v", d.Outcome)
	}
	select {
	case s := <-emptied:
		t.Logf("ContainerEmptied for %s", s)
	case <-time.After(2 * time.Second):
		t.Fatalf("the daemon died during a status op: no ContainerEmptied, ever (groups now %v)", x.Groups("test/d"))
	}
}
