//go:build linux

package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// initBudget is what one package's initialisation may allocate when
// svcrun starts. Every command pays it, `svcrun run` in a job's hot path
// too, so expensive package-level values (a regexp with counted
// repetitions, a table, a compiled schema) are made on first use.
type initBudget struct{ bytes, allocs int64 }

// TestStartInitsAreCheap starts the real binary with GODEBUG=inittrace=1
// and checks what each package's initialisation allocates against its
// budget. Allocations, not times: a loaded machine cannot break them.
func TestStartInitsAreCheap(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	// svcrun's own packages need nothing at start; the Go library and the
	// dependencies a few tables.
	own, other := initBudget{bytes: 4 << 10, allocs: 50}, initBudget{bytes: 64 << 10, allocs: 500}
	bin := buildSvcrun(t)
	cmd := exec.Command(bin, "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("svcrun version: %v\n%s", err, stderr.String())
	}
	inits := parseInitTrace(t, stderr.String())
	if len(inits) == 0 {
		t.Fatalf("GODEBUG=inittrace=1 traced no init:\n%s", stderr.String())
	}
	for pkg, got := range inits {
		budget := other
		if pkg == "main" || strings.HasPrefix(pkg, "github.com/oarbank/svcrun/") {
			budget = own
		}
		if got.bytes > budget.bytes || got.allocs > budget.allocs {
			t.Errorf("init of %s allocates %d bytes in %d allocations at every start, over its budget of %d bytes, "+
				"%d allocations: make the package-level value it builds on first use (sync.OnceValue)",
				pkg, got.bytes, got.allocs, budget.bytes, budget.allocs)
		}
	}
}

// parseInitTrace reads the lines of GODEBUG=inittrace=1, such as
// "init net/http @7.5 ms, 0.028 ms clock, 4712 bytes, 49 allocs".
func parseInitTrace(t *testing.T, trace string) map[string]initBudget {
	t.Helper()
	out := map[string]initBudget{}
	sc := bufio.NewScanner(strings.NewReader(trace))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 11 || f[0] != "init" || f[8] != "bytes," || f[10] != "allocs" {
			continue
		}
		b, err1 := strconv.ParseInt(f[7], 10, 64)
		a, err2 := strconv.ParseInt(f[9], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("unreadable inittrace line %q", sc.Text())
		}
		out[f[1]] = initBudget{bytes: b, allocs: a}
	}
	return out
}
