package executor

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestReaperOnMainThread: with the reaper on the main thread (Main, as
// svcrun serve runs it), an orphan's death wakes it and the orphan is
// reaped, while the exits of ops, children of other threads, do not wake
// it at all: before, each op's exit woke it, and it looked at every child
// (a daemon per running service) twice an op.
func TestReaperOnMainThread(t *testing.T) {
	if !mainOffered.Load() {
		t.Fatal("this package's TestMain runs the reaper on the main thread (Main); it did not")
	}
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "orphan.pid")
	// The op leaves a child that outlives it: an orphan, re-parented to
	// the main thread.
	res := Spawn(context.Background(), Spec{
		Path:    "/bin/sh",
		Args:    []string{"-c", `sleep 60 </dev/null >/dev/null 2>&1 & echo $! >"$1"`, "sh", pidFile},
		Timeout: 10 * time.Second,
	})
	if res.SpawnErr != nil || res.ExitCode != 0 {
		t.Fatalf("the op that leaves an orphan: %+v", res)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	orphan, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if p, _, _, _ := procStatGroup(orphan); p != os.Getpid() {
		t.Fatalf("the orphan %d has parent %d, want this process %d", orphan, p, os.Getpid())
	}

	before := reaperWakes.Load()
	for i := range 20 {
		r := Spawn(context.Background(), Spec{Path: "/bin/true", Timeout: 10 * time.Second})
		if r.SpawnErr != nil || r.ExitCode != 0 {
			t.Fatalf("op %d: %+v", i, r)
		}
	}
	if woke := reaperWakes.Load() - before; woke != 0 {
		t.Errorf("20 ops' exits woke the reaper %d time(s), want none: it waits for the main thread's children only", woke)
	}

	// The orphan's death wakes it, and it reaps the zombie: the pid
	// leaves /proc. Waited for on the process's end, with no deadline.
	if err := unix.Kill(orphan, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat("/proc/" + strconv.Itoa(orphan)); os.IsNotExist(err) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if reaperWakes.Load() == before {
		t.Error("the orphan was reaped, but not by a wake of the reaper")
	}
}
