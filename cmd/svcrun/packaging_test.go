package main

import (
	"os"
	"strings"
	"testing"
)

// TestUnitReloadWaitsForTheVerdict: systemctl reload runs svcrun reload,
// which waits for the verdict and fails on a refusal, rather than a
// signal that succeeds whatever svcrun makes of the file.
func TestUnitReloadWaitsForTheVerdict(t *testing.T) {
	unit, err := os.ReadFile("../../packaging/svcrun.service")
	if err != nil {
		t.Fatal(err)
	}
	var reload []string
	for line := range strings.Lines(string(unit)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "ExecReload="); ok {
			reload = append(reload, v)
		}
	}
	if len(reload) != 1 || !strings.HasPrefix(reload[0], "/usr/bin/svcrun reload") {
		t.Errorf("ExecReload= %q, want one: /usr/bin/svcrun reload", reload)
	}
}
