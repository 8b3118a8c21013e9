package executor

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReapOrphansCostsNothingPerLiveChild: a start reaps the dead orphans
// first, while one live daemon per running service is this process's
// child. Looking costs one waitid per child, never a read of its stat,
// and takes no lock a spawn needs: reading each stat under spawnMu made a
// boot of 1,000 services O(n^2) and stalled every spawn meanwhile.
func TestReapOrphansCostsNothingPerLiveChild(t *testing.T) {
	const n = 200
	liveOrphans(t, n)

	// A spawn in progress holds spawnMu shared: a scan must not wait.
	spawnMu.RLock()
	before := readSyscalls(t)
	done := make(chan int)
	go func() { done <- reapScan() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		spawnMu.RUnlock()
		t.Fatal("reapScan waited for spawnMu while a spawn held it")
	}
	reads := readSyscalls(t) - before
	go func() { done <- ReapOrphans() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		spawnMu.RUnlock()
		t.Fatal("ReapOrphans waited for spawnMu while a spawn held it, with no zombie to reap")
	}
	spawnMu.RUnlock()
	if reads >= n/2 {
		t.Errorf("reapScan made %d reads for %d live children: it reads what each child is", reads, n)
	}
}

// liveOrphans starts n sleeping processes and lets their parent exit: this
// process, the child subreaper (TestMain), inherits them. They are killed
// and reaped when the test ends.
func liveOrphans(t *testing.T, n int) []int {
	t.Helper()
	cmd := exec.Command(
		"/bin/sh", "-c",
		`i=0; while [ $i -lt `+strconv.Itoa(n)+` ]; do sleep 600 </dev/null >/dev/null 2>&1 & echo $!; i=$((i + 1)); done`)
	var out bytes.Buffer
	cmd.Stdout = &out
	err := RunCmd(cmd)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(out.String()) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("sh printed %q", f)
		}
		pids = append(pids, pid)
	}
	t.Cleanup(func() {
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		eventually(t, 60*time.Second, "the killed orphans were not reaped", func() bool {
			ReapOrphans()
			for _, pid := range pids {
				if _, _, ok := procStat(pid); ok {
					return false
				}
			}
			return true
		})
	})
	self := os.Getpid()
	for _, pid := range pids {
		if ppid, _, ok := procStat(pid); !ok || ppid != self {
			t.Fatalf("orphan %d: parent %d, want this process %d (the subreaper)", pid, ppid, self)
		}
	}
	return pids
}

// readSyscalls returns this process's read(2) count, syscr of /proc/self/io
// (task I/O accounting: skipped without it, unless
// REQUIRE_KERNEL_FEATURES=1).
func readSyscalls(t *testing.T) int {
	t.Helper()
	missing := func(why string) {
		if os.Getenv("REQUIRE_KERNEL_FEATURES") == "1" {
			t.Fatalf("REQUIRE_KERNEL_FEATURES=1: %s", why)
		}
		t.Skip(why)
	}
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		missing(fmt.Sprintf("no /proc/self/io: %v", err))
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "syscr: "); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	missing("no syscr in /proc/self/io")
	return 0
}
