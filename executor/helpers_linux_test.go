package executor

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oarbank/svcrun/protocol"
	"github.com/oarbank/svcrun/svcenv"
)

// init keeps the main goroutine on the main thread, for Main to give to
// the reaper, as svcrun serve does.
func init() { runtime.LockOSThread() }

func TestMain(m *testing.M) {
	// Every test runs with the reaper on, on the main thread, as svcrun
	// does: nothing here may lose an exit status to it. (The sandbox's
	// tests run it on another thread, as a program without Main would.)
	// EXECUTOR_NO_REAPER=1 leaves it off, to measure what it costs in
	// BenchmarkFingerprintOp.
	Main(func() int {
		if os.Getenv("EXECUTOR_NO_REAPER") == "" {
			if err := BecomeSubreaper(); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		return m.Run()
	})
}

// fixture is a bundle holding testdata/svc.sh and a prepared module data dir.
type fixture struct {
	bundle string // bundle root, symlinks resolved
	script string // bin/svc.sh inside it
	data   string // module data dir
	env    []string
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{bundle: filepath.Join(root, "bundle"), data: filepath.Join(root, "data", "modules", "test")}
	f.script = filepath.Join(f.bundle, "bin", "svc.sh")
	// Copied with mode 0755, whatever mode git gave the checkout.
	copyExecutable(t, "testdata/svc.sh", f.script)
	l, err := svcenv.Paths(svcenv.Linux, f.data)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(f.data), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := svcenv.Prepare(l, nil); err != nil {
		t.Fatal(err)
	}
	if err := svcenv.WriteFiles(l, nil, svcenv.Files{}); err != nil {
		t.Fatal(err)
	}
	f.env, err = svcenv.Environ(svcenv.Input{
		Platform: svcenv.Linux, NodeID: "n1", Module: "test", Service: "svc", ModuleData: f.data, User: "tester",
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func copyExecutable(t testing.TB, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o755); err != nil {
		t.Fatal(err)
	}
}

// spec runs svc.sh in mode for op.
func (f *fixture) spec(mode string, op protocol.Op, timeout time.Duration) Spec {
	return Spec{Path: f.script, Args: []string{mode, string(op)}, Dir: f.bundle, Env: f.env, Timeout: timeout}
}

func (f *fixture) readFile(t testing.TB, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(f.data, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func (f *fixture) readPid(t testing.TB, name string) int {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(f.readFile(t, name)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// eventually polls cond until it holds or the (generous) deadline passes:
// for effects that happen after Spawn returned, such as a killed process
// disappearing.
func eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	_, state, ok := procStat(pid)
	return ok && state != 'Z'
}

// zombieChildren lists the zombies whose parent is this process.
func zombieChildren() []int {
	var zs []int
	for _, pid := range childrenByStat() {
		if _, state, ok := procStat(pid); ok && state == 'Z' {
			zs = append(zs, pid)
		}
	}
	return zs
}

// killGroupAtEnd kills what an op left in its group when the test ends.
func killGroupAtEnd(t testing.TB, pgid int) {
	t.Cleanup(func() {
		if pgid > 1 {
			syscall.Kill(-pgid, syscall.SIGKILL)
		}
	})
}

func syscallGetpgid(t testing.TB, pid int) int {
	t.Helper()
	pgid, err := syscall.Getpgid(pid)
	if err != nil {
		t.Fatal(err)
	}
	return pgid
}
