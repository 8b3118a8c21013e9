package main

import (
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestUnitExposure: systemd-analyze security scores the packaged unit at
// most 5.0 (MEDIUM); docs/operating.md, Hardening, says what it restricts.
// packaging/nspawn-test.sh checks the same score under a booted systemd,
// and that the modules' daemons still work under it; this is the check
// every go test run gets. It needs systemd-analyze 250 or later
// (--offline), and skips without it.
func TestUnitExposure(t *testing.T) {
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("no systemd-analyze on this host")
	}
	out, err := exec.Command("systemd-analyze", "security", "--offline=yes", "--no-pager",
		"../../packaging/svcrun.service").CombinedOutput()
	if err != nil && strings.Contains(string(out), "offline") {
		t.Skipf("this systemd-analyze has no --offline: %s", out)
	}
	m := regexp.MustCompile(`Overall exposure level for svcrun\.service: ([0-9.]+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("systemd-analyze security --offline=yes packaging/svcrun.service printed no exposure level (%v):\n%s",
			err, out)
	}
	score, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil || score > 5.0 {
		t.Errorf("packaging/svcrun.service: exposure %s, want at most 5.0:\n%s", m[1], out)
	}
}
