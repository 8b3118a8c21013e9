package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oarbank/svcrun/api"
)

// TestCheckJobLeavesNothing: what a job of svcrun check --job starts in
// the background is killed with it.
func TestCheckJobLeavesNothing(t *testing.T) {
	marker := fmt.Sprintf("%d", 400000+os.Getpid()%100000) // a sleep nobody else runs
	j := runCheckJob(context.Background(), "sleep "+marker+" & echo started", api.Grant{Lease: "lease-x", Attempt: "attempt-x", NodeID: "n"})
	if j.ExitCode != 0 || !strings.Contains(j.Stdout, "started") {
		t.Fatalf("job %+v", j)
	}
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range cmdlines {
		b, _ := os.ReadFile(f)
		if strings.Join(strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"), " ") == "sleep "+marker {
			t.Errorf("the job's background sleep outlived it: %s", f)
		}
	}
}
