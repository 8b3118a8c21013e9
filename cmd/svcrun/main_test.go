package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/oarbank/svcrun/internal/cli"
)

// TestBadDuration: every duration flag of every command names the flag,
// the value and what a duration is, on one line and a pointer to -h, exit 2.
func TestBadDuration(t *testing.T) {
	const accepted = "not a duration: use a number with a unit, such as 500ms, 30s, 5m or 1h30m"
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"acquire", "--wait", "5x"}, `--wait "5x"`},
		{[]string{"acquire", "--capability", "kv", "--ttl=abc"}, `--ttl "abc"`},
		{[]string{"acquire", "--ttl", "30"}, `--ttl "30"`},
		{[]string{"run", "--wait", "1y", "--", "true"}, `--wait "1y"`},
		{[]string{"run", "--ttl", "", "--", "true"}, `--ttl ""`},
		{[]string{"op", "--timeout", "5q", "--bundle", "../../examples/modules/demo", "kv", "status"}, `--timeout "5q"`},
	} {
		code, out, errs := run(t, tc.args...)
		want := "svcrun " + tc.args[0] + ": " + tc.flag + ": " + accepted + "\nRun 'svcrun " + tc.args[0] +
			" -h' for usage.\n"
		wantCode := 2
		if tc.args[0] == "run" {
			wantCode = 125 // run's own failures, apart from its command's statuses
		}
		if code != wantCode || errs != want || out != "" {
			t.Errorf("%q: exit %d\nstderr: %q\n  want: %q\nstdout: %q", tc.args, code, errs, want, out)
		}
	}
}

// TestCommandLines runs what is decided before svcrun is reached: the
// socket is one nobody listens on, so a command line that is read right
// fails with exit 1 (unreachable), a wrong one with exit 2.
func TestCommandLines(t *testing.T) {
	const sock = "/nonexistent/s.sock"
	const unreachable = "cannot reach svcrun at " + sock
	for _, tc := range []struct {
		args []string
		code int
		err  string // on stderr
		json bool   // stdout is a failure's JSON, code unreachable
	}{
		// Flags after the arguments.
		{args: []string{"reset", "demo/kv", "--socket", sock}, code: 1, err: "svcrun reset: " + unreachable},
		{args: []string{"enable", "demo", "--socket", sock}, code: 1, err: "svcrun enable: " + unreachable},
		{args: []string{"disable", "--json", "demo", "--socket", sock}, code: 1, json: true},
		{args: []string{"renew", "lease-1", "--socket", sock, "--json"}, code: 1, json: true},
		{args: []string{"release", "lease-1", "--socket=" + sock}, code: 1, err: "svcrun release: " + unreachable},
		{args: []string{"doctor", "--socket", sock, "--json"}, code: 1, json: true},
		{args: []string{"reap", "--socket", sock, "--json"}, code: 1, json: true},
		{args: []string{"reload", "--json", "--socket", sock}, code: 1, json: true},
		{args: []string{"reset", "--socket", sock, "demo/kv", "--json"}, code: 1, json: true},
		{args: []string{"acquire", "--socket", sock, "--capability", "kv", "--json"}, code: 1, json: true},
		{args: []string{"status", "--socket", sock}, code: 1, err: "svcrun status: " + unreachable},
		{args: []string{"release", "--socket", sock, "--", "-odd-lease"}, code: 1, err: "svcrun release: " + unreachable},
		// Wrong arguments.
		{args: []string{"reset", "demo/kv", "demo/db", "--socket", sock}, code: 2,
			err: `svcrun reset: unexpected argument "demo/db": svcrun reset takes one MODULE/SERVICE, e.g. ` +
				`demo/kv (svcrun status lists the services)` + "\nRun 'svcrun reset -h' for usage.\n"},
		{args: []string{"reset", "--socket", sock, "--", "demo/kv", "--json"}, code: 2,
			err: `unexpected argument "--json": svcrun reset takes one MODULE/SERVICE, e.g. demo/kv (svcrun status lists the ` +
				`services); it came after --, where flags are taken for arguments: put it before the --`},
		{args: []string{"enable", "a", "b"}, code: 2, err: `svcrun enable: unexpected argument "b": ` +
			`svcrun enable takes one MODULE (svcrun status lists the modules of the services)`},
		{args: []string{"renew"}, code: 2, err: "svcrun renew: give LEASE (the id svcrun acquire printed)"},
		{args: []string{"reap", "now"}, code: 2, err: `svcrun reap: unexpected argument "now": svcrun reap takes flags only`},
		{args: []string{"doctor", "--json=maybe"}, code: 2, err: `invalid boolean value "maybe" for -json`},
		{args: []string{"acquire", "--pool", "kv-slots=0"}, code: 2,
			err: `svcrun acquire: --pool "kv-slots=0": give a number of tokens N, 1 or more`},
		{args: []string{"reload", "--nope"}, code: 2,
			err: "svcrun reload: unknown flag --nope\nRun 'svcrun reload -h' for usage.\n"},
		// TTLs: 0 or 1s and more for acquire, 1s and more for run.
		{args: []string{"acquire", "--socket", sock, "--ttl", "0"}, code: 1, err: unreachable},
		{args: []string{"acquire", "--socket", sock, "--ttl", "1s"}, code: 1, err: unreachable},
		{args: []string{"acquire", "--socket", sock, "--ttl", "500ms"}, code: 2,
			err: "svcrun acquire: --ttl must be 1s or more, or 0 for a lease held until released: " +
				"a shorter TTL would expire before svcrun renew could renew it\n"},
		{args: []string{"acquire", "--ttl", "-1s"}, code: 2, err: "svcrun acquire: --ttl must not be negative"},
		{args: []string{"run", "--socket", sock, "--ttl", "1ms", "--", "true"}, code: 125,
			err: "svcrun run: --ttl must be 1s or more: svcrun run renews the lease"},
		{args: []string{"run", "--socket", sock, "--ttl", "0", "--", "true"}, code: 125,
			err: "svcrun run: --ttl must be 1s or more"},
		{args: []string{"run", "--socket", sock, "--ttl", "1s", "--", "true"}, code: 125, err: unreachable},
		// run and op keep what follows their arguments for CMD and the op.
		{args: []string{"run", "--socket", sock, "--", "true", "--json"}, code: 125, err: unreachable},
		{args: []string{"op", "--bundle", "../../examples/modules/demo", "kv", "status", "--json"}, code: 2,
			err: `svcrun op: status takes no arguments, got ["--json"]`},
		{args: []string{"op", "--bundle", "../../examples/modules/demo", "kv", "destroy", "--force"}, code: 2,
			err: `svcrun op: invalid object id "--force"`},
	} {
		code, out, errs := run(t, tc.args...)
		bad := code != tc.code || !strings.Contains(errs, tc.err) || strings.Contains(errs, "Usage:")
		if tc.json {
			var f cli.FailureJSON
			bad = bad || errs != "" || json.Unmarshal([]byte(out), &f) != nil || f.OK || f.Code != "unreachable" ||
				!strings.Contains(f.Error, unreachable)
		}
		if bad {
			t.Errorf("%q: exit %d (want %d)\nstdout: %s\nstderr: %s", tc.args, code, tc.code, out, errs)
		}
	}
}

// TestUsage: svcrun -h states the exit codes, as README.md does, and usage
// has one stream.
func TestUsage(t *testing.T) {
	code, out, _ := run(t, "-h")
	if code != 0 || !strings.Contains(out, exitCodes) ||
		!strings.Contains(out, "Flags may come before or\nafter a command's arguments") {
		t.Errorf("svcrun -h: exit %d\n%s", code, out)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	words := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	_, para, ok := strings.Cut(string(readme), "\nExit codes of every svcrun command:")
	para, _, _ = strings.Cut(para, "\n\n")
	if want := words("Exit codes of every svcrun command:" + para); !ok || want != words(exitCodes) {
		t.Errorf("README.md says:\n%s\nsvcrun -h says:\n%s", want, words(exitCodes))
	}
	// Usage asked for goes to stdout, a missing command's to stderr, as
	// in svcsim.
	if code, out, errs := run(t); code != 2 || out != "" || !strings.HasPrefix(errs, "Usage: svcrun <command>") {
		t.Errorf("svcrun without a command: exit %d\nstdout: %q\nstderr: %q", code, out, errs)
	}
	code, out, errs := run(t, "reset", "-h")
	if code != 0 ||
		!strings.Contains(out, "Usage: svcrun reset [--json] [--socket PATH | --config FILE] MODULE/SERVICE") ||
		!strings.Contains(out, "-json") || errs != "" {
		t.Errorf("reset -h: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}

// TestJSONAsWritten: --json answers keep <, > and & as they are, as op's
// report always did.
func TestJSONAsWritten(t *testing.T) {
	const sock = "/nonexistent/<a&b>.sock"
	code, out, errs := run(t, "doctor", "--json", "--socket", sock)
	if code != 1 || !strings.Contains(out, `"error": "cannot reach svcrun at `+sock) || errs != "" {
		t.Errorf("exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
}
