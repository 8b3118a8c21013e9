package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oarbank/svcrun/api"
)

// TestCheckJobLeavesNothing: what a job of svcrun check --job starts in
// the background is killed with it.
func TestCheckJobLeavesNothing(t *testing.T) {
	// A sleep nobody else runs: the pid is unique among the live
	// processes /proc shows, and 10,000,000 above it (pid_max is at most
	// 2^22) no other test's marker (sdk/sh's are 20,000,000 above) nor a
	// pid modulo some base of another test process can meet it.
	marker := strconv.Itoa(10_000_000 + os.Getpid())
	j := runCheckJob(context.Background(), "sleep "+marker+" & echo started",
		api.Grant{Lease: "lease-x", Attempt: "attempt-x", NodeID: "n"})
	if j.ExitCode != 0 || !strings.Contains(j.Stdout, "started") {
		t.Fatalf("job %+v", j)
	}
	// The kill is sent when the job ends; the sleep is gone once it has
	// been delivered (a zombie's cmdline is empty), which a loaded machine
	// may take a while to do: the test waits for that, up to a bound far
	// beyond any delivery.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		left := sleepsOf(marker)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job's background sleep outlived it: %s", left)
		}
	}
}

// sleepsOf lists the /proc/PID/cmdline files of live processes running
// `sleep marker`.
func sleepsOf(marker string) []string {
	var out []string
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range cmdlines {
		b, _ := os.ReadFile(f)
		if strings.Join(strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"), " ") == "sleep "+marker {
			out = append(out, f)
		}
	}
	return out
}
