package main

import (
	"slices"
	"strings"
	"testing"
)

func TestHoistGlobalFlags(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{[]string{"status"}, []string{"status"}},
		{[]string{"--socket", "S", "status", "--json"}, []string{"status", "--socket", "S", "--json"}},
		{[]string{"--socket=S", "-config", "C", "run", "--", "true"},
			[]string{"run", "--socket=S", "-config", "C", "--", "true"}},
		{[]string{"--socket"}, []string{"--socket"}},           // no value: the usage error stays
		{[]string{"--socket", "S"}, []string{"--socket", "S"}}, // no command: the usage error stays
		{[]string{"--json", "status"}, []string{"--json", "status"}},
		{[]string{"status", "--socket", "S"}, []string{"status", "--socket", "S"}},
	} {
		if got := hoistGlobalFlags(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("hoistGlobalFlags(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestGlobalFlagsBeforeTheCommand: `svcrun --socket S status` talks to S.
func TestGlobalFlagsBeforeTheCommand(t *testing.T) {
	const sock = "/nonexistent/global.sock"
	code, _, errs := run(t, "--socket", sock, "status")
	if code != 1 || !strings.Contains(errs, "cannot reach svcrun at "+sock) {
		t.Errorf("exit %d, stderr:\n%s", code, errs)
	}
}
