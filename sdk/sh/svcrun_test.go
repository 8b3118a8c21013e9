// Package svcrunsh tests svcrun.sh, the POSIX sh library for modules, by
// running its functions through every POSIX shell of the host.
package svcrunsh

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/oarbank/svcrun/protocol"
)

// shells are the shells the library must work in; bash runs in its POSIX
// mode. A shell the host lacks is skipped, but sh and dash are required.
var shells = []struct {
	name string
	argv []string
	must bool
}{
	{"sh", []string{"sh"}, true},
	{"dash", []string{"dash"}, true},
	{"bash-posix", []string{"bash", "--posix"}, false},
	{"busybox", []string{"busybox", "sh"}, false},
}

type shell struct {
	argv []string
	lib  string
}

// forShells runs f once per shell.
func forShells(t *testing.T, f func(t *testing.T, sh shell)) {
	lib, err := filepath.Abs("svcrun.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range shells {
		t.Run(s.name, func(t *testing.T) {
			if _, err := exec.LookPath(s.argv[0]); err != nil {
				if s.must {
					t.Fatalf("%s is missing: %v", s.argv[0], err)
				}
				t.Skipf("no %s here", s.argv[0])
			}
			f(t, shell{argv: s.argv, lib: lib})
		})
	}
}

// run sources the library and runs script with env added; it returns
// stdout, stderr and the exit status.
func (sh shell) run(t *testing.T, script string, env ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(sh.argv[0], append(sh.argv[1:], "-c", ". \"$SVCRUN_LIB\"\n"+script)...)
	cmd.Env = append([]string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", "SVCRUN_LIB=" + sh.lib,
		"OARBANK_NODE_ID=node-1", "OARBANK_MODULE=redis", "OARBANK_SERVICE=redis"}, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), code
}

// TestJSONString: every string comes back from a JSON decoder as it went
// in: control characters, quotes, backslashes, UTF-8 and trailing
// newlines.
func TestJSONString(t *testing.T) {
	var ctl strings.Builder
	for c := 1; c < 32; c++ {
		ctl.WriteByte(byte(c))
	}
	cases := []string{
		"", "plain", `say "hi"`, `back\slash\\`, ctl.String(), "del\x7f", "é 漢字 😀",
		"trailing newlines\n\n", "\nleading", "-n", "%s %d", "tab\there", "a/b </script>",
	}
	forShells(t, func(t *testing.T, sh shell) {
		for _, s := range cases {
			out, errs, code := sh.run(t, `svcrun_json_string "$S"`, "S="+s)
			var got string
			if err := json.Unmarshal([]byte(out), &got); err != nil || code != 0 {
				t.Errorf("%q: exit %d, %v: %q %s", s, code, err, out, errs)
				continue
			}
			if got != s {
				t.Errorf("%q came back as %q (%s)", s, got, out)
			}
		}
	})
}

// TestResults: each result function prints a document svcrun's decoder
// accepts for its op.
func TestResults(t *testing.T) {
	cases := []struct {
		name, script string
		op           protocol.Op
		role         protocol.Role
		want         string // in the decoded result's JSON
	}{
		{"service fingerprint",
			`svcrun_fingerprint --healthy true --running false --message "up \"now\"" --attr sock ` +
				`"$OARBANK_MODULE_DATA/run/redis.sock" --attr-num port 0 --attr-bool tls false --pool redis-db 15 ` +
				`--pool other 0 --mem-gb 0.25`,
			protocol.OpFingerprint, protocol.RoleService, `"pools":{"redis-db":15,"other":0},"reserve":{"mem_gb":0.25}`},
		{"probe fingerprint", `svcrun_fingerprint --healthy true --attr version "17.0.2"`, protocol.OpFingerprint,
			protocol.RoleProbe, `"attrs":{"version":"17.0.2"}`},
		{"start", `svcrun_result --changed true`, protocol.OpStart, protocol.RoleService, `"changed":true`},
		{"stop", `svcrun_result --changed true --escalated true --message killed`, protocol.OpStop,
			protocol.RoleService, `"escalated":true`},
		{"destroy, already gone", `svcrun_result --message "already gone"`, protocol.OpDestroy,
			protocol.RoleService, `"changed":false`},
		{"status", `svcrun_status true false "warming up"`, protocol.OpReady, protocol.RoleService, `"message":"warming up"`},
		{"empty owned list", `svcrun_owned_reset; svcrun_owned_print`, protocol.OpListOwned, protocol.RoleService,
			`"objects":[]`},
		{"owned list", `svcrun_owned_reset
svcrun_owned_add k1 other --attempt a1 --created-at 2026-12-01T17:00:00Z
svcrun_owned_add "db-é" volume --label x 'y"z' --busy true
svcrun_owned_print`, protocol.OpListOwned, protocol.RoleService,
			`"labels":{"oarbank.attempt_id":"a1","oarbank.node":"node-1","oarbank.service":"redis/redis"}`},
	}
	forShells(t, func(t *testing.T, sh shell) {
		for _, c := range cases {
			out, errs, code := sh.run(t, c.script, "OARBANK_MODULE_DATA=/data")
			if code != 0 || strings.Count(out, "\n") != 1 {
				t.Errorf("%s: exit %d, stdout %q, stderr %s", c.name, code, out, errs)
				continue
			}
			res, err := protocol.Decode(c.op, c.role, protocol.Output{Stdout: []byte(out)})
			if err != nil {
				t.Errorf("%s: svcrun refuses %s: %v", c.name, out, err)
				continue
			}
			if len(res.Warnings) > 0 {
				t.Errorf("%s: warnings %v", c.name, res.Warnings)
			}
			if !strings.Contains(out, c.want) {
				t.Errorf("%s: %s lacks %s", c.name, out, c.want)
			}
		}
	})
}

// TestBadArguments: a bad argument prints nothing on stdout, says why on
// stderr and returns 2, so no half document reaches svcrun.
func TestBadArguments(t *testing.T) {
	cases := []struct{ script, says string }{
		{`svcrun_fingerprint --running true`, "--healthy is required"},
		{`svcrun_fingerprint --healthy yes`, "healthy must be true or false"},
		{`svcrun_fingerprint --healthy true --pool p -1`, "pool p must be a whole number"},
		{`svcrun_fingerprint --healthy true --pool p 1.5`, "whole number"},
		{`svcrun_fingerprint --healthy true --attr-num n 0x10`, "must be a JSON number"},
		{`svcrun_fingerprint --healthy true --mem-gb -1`, "mem_gb must be >= 0"},
		{`svcrun_fingerprint --healthy true --bogus`, "unknown argument"},
		{`svcrun_status true maybe`, "ready must be true or false"},
		{`svcrun_result --changed 1`, "changed must be true or false"},
		{`svcrun_owned_add -rf volume`, "invalid object id"},
		{`svcrun_owned_add "a b" volume`, "invalid object id"},
		{`svcrun_owned_add k1 disk`, "kind must be"},
		{`svcrun_owned_add k1 vm --created-at yesterday`, "RFC 3339"},
	}
	forShells(t, func(t *testing.T, sh shell) {
		for _, c := range cases {
			out, errs, code := sh.run(t, c.script)
			if code != 2 || out != "" || !strings.Contains(errs, c.says) {
				t.Errorf("%s: exit %d, stdout %q, stderr %q; want 2, nothing, %q", c.script, code, out, errs, c.says)
			}
		}
	})
}

// TestFail: svcrun_fail exits with its code and svcrun reads its message.
func TestFail(t *testing.T) {
	forShells(t, func(t *testing.T, sh shell) {
		out, errs, code := sh.run(t, `svcrun_fail "no \"disk\"" 3; echo not reached`)
		if code != 3 || !strings.Contains(errs, `no "disk"`) {
			t.Fatalf("exit %d, stderr %q", code, errs)
		}
		_, err := protocol.Decode(protocol.OpStart, protocol.RoleService,
			protocol.Output{Stdout: []byte(out), ExitCode: code})
		var oe *protocol.OpError
		if !errors.As(err, &oe) || oe.Message != `no "disk"` {
			t.Errorf("%s: %v, want an op error with the message", out, err)
		}
	})
}

// TestSetting: top-level strings, numbers and booleans are read, nested
// values and broken files refused.
func TestSetting(t *testing.T) {
	settings := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(settings, []byte(`{
  "bool": false,
  "esc": "q\"b\\s\/n\nt\tu\u00e9\ud83d\ude00",
  "maxmemory_mb": 64,
  "nested": {"a": [1, "}"]},
  "neg": -1.5e3,
  "nil": null,
  "plain": "x y",
  "plain": "last wins",
  "utf8": "漢字"
}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(t.TempDir(), "broken.json")
	os.WriteFile(broken, []byte(`["not an object"]`), 0o600)
	cases := []struct {
		script, want string
		code         int
	}{
		{`svcrun_setting maxmemory_mb`, "64", 0},
		{`svcrun_setting neg`, "-1.5e3", 0},
		{`svcrun_setting bool`, "false", 0},
		{`svcrun_setting esc`, "q\"b\\s/n\nt\tué😀", 0},
		{`svcrun_setting utf8`, "漢字", 0},
		{`svcrun_setting plain`, "last wins", 0},
		{`svcrun_setting absent`, "", 1},
		{`svcrun_setting absent 7`, "7", 0},
		{`svcrun_setting nil dflt`, "dflt", 0},
		{`svcrun_setting nested`, "", 2},
		{`OARBANK_SETTINGS_FILE=` + broken + ` svcrun_setting x`, "", 2},
		{`v=$(svcrun_setting maxmemory_mb) && echo "got $v"`, "got 64\n", 0},
		{`OARBANK_TOOLS_FILE=$OARBANK_SETTINGS_FILE svcrun_tool utf8`, "漢字", 0},
		{`svcrun_json_get "$OARBANK_SETTINGS_FILE" bool`, "false", 0},
	}
	forShells(t, func(t *testing.T, sh shell) {
		for _, c := range cases {
			out, errs, code := sh.run(t, c.script, "OARBANK_SETTINGS_FILE="+settings)
			if out != c.want || code != c.code {
				t.Errorf("%s: %q exit %d (stderr %q), want %q exit %d", c.script, out, code, errs, c.want, c.code)
			}
		}
	})
}

// TestJSONAt: svcrun_json_at follows keys and array indexes down a
// services file as svcrun run writes it; what is absent returns 1, an
// object or array 2.
func TestJSONAt(t *testing.T) {
	file := filepath.Join(t.TempDir(), "services.json")
	if err := os.WriteFile(file, []byte(`{
  "node_id": "node-1",
  "labels": {"oarbank.attempt_id": "a1", "oarbank.node": "node-1", "oarbank.service": "redis/redis"},
  "services": [
    {"name": "other/x", "capabilities": [], "attrs": {"socket": "wrong"}, "labels": {}},
    {"name": "redis/redis", "capabilities": ["kv", "redis"],
     "attrs": {"databases": 4, "socket": "/d/run/redis \"s\".sock", "ok": true, "gone": null}, "labels": {}}
  ],
  "probes": []
}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		script, want string
		code         int
	}{
		{`svcrun_json_at "$F" node_id`, "node-1", 0},
		{`svcrun_json_at "$F" labels oarbank.service`, "redis/redis", 0},
		{`svcrun_json_at "$F" services 1 attrs socket`, `/d/run/redis "s".sock`, 0},
		{`svcrun_json_at "$F" services 1 attrs databases`, "4", 0},
		{`svcrun_json_at "$F" services 1 attrs ok`, "true", 0},
		{`svcrun_json_at "$F" services 1 capabilities 1`, "redis", 0},
		{`svcrun_json_at "$F" services 1 attrs gone`, "", 1},
		{`svcrun_json_at "$F" services 2 name`, "", 1},
		{`svcrun_json_at "$F" probes 0 name`, "", 1},
		{`svcrun_json_at "$F" node_id x`, "", 1},
		{`svcrun_json_at "$F" services 1`, "", 2},
		{`svcrun_json_at "$F"`, "", 2},
	}
	forShells(t, func(t *testing.T, sh shell) {
		for _, c := range cases {
			out, errs, code := sh.run(t, c.script, "F="+file)
			if out != c.want || code != c.code {
				t.Errorf("%s: %q exit %d (stderr %q), want %q exit %d", c.script, out, code, errs, c.want, c.code)
			}
		}
	})
}

// TestLabels: the labels of an object are this node's and service's, and
// svcrun_owns accepts them and nothing else.
func TestLabels(t *testing.T) {
	forShells(t, func(t *testing.T, sh shell) {
		out, _, _ := sh.run(t, `svcrun_labels a1`)
		var l map[string]string
		if err := json.Unmarshal([]byte(out), &l); err != nil || l[protocol.LabelAttemptID] != "a1" ||
			l[protocol.LabelNode] != "node-1" || l[protocol.LabelService] != "redis/redis" {
			t.Errorf("labels %s: %v", out, err)
		}
		out, _, _ = sh.run(t,
			`for a in "node-1 redis/redis a1" "node-2 redis/redis a1" "node-1 redis/x a1" "node-1 redis/redis ''"; do
eval "set -- $a"; if svcrun_owns "$@"; then echo yes; else echo no; fi; done`)
		if out != "yes\nno\nno\nno\n" {
			t.Errorf("owns: %q", out)
		}
	})
}

// TestDaemon: a daemon starts once, is alive, stops with SIGTERM or, when
// it ignores that, SIGKILL, and a second stop finds nothing.
func TestDaemon(t *testing.T) {
	cases := []struct {
		name, daemon, escalated string
	}{
		{"ends on SIGTERM", `sleep 1000`, "false"},
		{"ignores SIGTERM", `sh -c 'trap "" TERM; echo up; while :; do sleep 1; done'`, "true"},
		// Another signal: USR1, since the background jobs of a shell ignore
		// INT, a shell cannot trap what it was started ignoring, and HUP is
		// ignored from the start under nohup.
		{"ends on SIGUSR1", `sh -c 'trap "" TERM; trap "exit 0" USR1; echo up; while :; do sleep 0.05; done'`, "false USR1"},
	}
	forShells(t, func(t *testing.T, sh shell) {
		for _, c := range cases {
			dir := t.TempDir()
			escalated, sig, _ := strings.Cut(c.escalated, " ")
			if sig != "" {
				sig = "10 " + sig
			} else {
				sig = "1"
			}
			script := `pf=$D/d.pid lf=$D/d.log
svcrun_daemon_alive "$pf" && echo alive-before
svcrun_daemon_start "$pf" "$lf" ` + c.daemon + ` || echo start-failed
svcrun_daemon_start "$pf" "$lf" sleep 1 && echo started-twice
svcrun_daemon_alive "$pf" && echo alive
pid=$(svcrun_daemon_pid "$pf")
[ "` + c.escalated + `" = false ] || until grep -q up "$lf"; do sleep 0.05; done
svcrun_daemon_stop "$pf" ` + sig + ` || echo stop-failed
echo "stopped=$SVCRUN_STOPPED escalated=$SVCRUN_ESCALATED"
kill -0 "$pid" 2>/dev/null && [ "$(cut -d' ' -f3 /proc/$pid/stat)" != Z ] && echo still-there
[ -e "$pf" ] && echo pidfile-left
svcrun_daemon_stop "$pf" 1
echo "again stopped=$SVCRUN_STOPPED"
`
			out, errs, code := sh.run(t, script, "D="+dir)
			want := "alive\nstopped=true escalated=" + escalated + "\nagain stopped=false\n"
			if out != want || code != 0 {
				t.Errorf("%s: exit %d, stdout:\n%s\nstderr: %s\nwant:\n%s", c.name, code, out, errs, want)
			}
		}
	})
}

// TestDaemonWait: svcrun_daemon_wait returns once the daemon ends, and 1
// while it still runs at its bound.
func TestDaemonWait(t *testing.T) {
	forShells(t, func(t *testing.T, sh shell) {
		dir := t.TempDir()
		out, errs, _ := sh.run(t, `pf=$D/d.pid
svcrun_daemon_start "$pf" /dev/null sh -c 'while [ ! -e "$D/gate" ]; do sleep 0.05; done'
svcrun_daemon_wait "$pf" 0 || echo still-running
: >"$D/gate"
svcrun_daemon_wait "$pf" 60 && echo ended
svcrun_daemon_alive "$pf" || echo not-alive
`, "D="+dir)
		if out != "still-running\nended\nnot-alive\n" {
			t.Errorf("stdout %q, stderr %s", out, errs)
		}
	})
}

// TestDaemonPIDFileFailure: a daemon whose pid file cannot be written is
// killed, so that no later start runs a second one beside it.
func TestDaemonPIDFileFailure(t *testing.T) {
	forShells(t, func(t *testing.T, sh shell) {
		dir := t.TempDir()
		// A sleep nobody else runs: the pid is unique among the live
		// processes /proc shows, and 20,000,000 above it (pid_max is at
		// most 2^22) no other test's marker (cmd/svcrun's are 10,000,000
		// above) can meet it.
		arg := strconv.Itoa(20_000_000 + os.Getpid())
		script := `svcrun_daemon_start "$D/missing/d.pid" "$D/d.log" sleep ` + arg + `
echo "code=$?"
`
		out, errs, _ := sh.run(t, script, "D="+dir)
		if out != "code=2\n" || !strings.Contains(errs, "cannot write the pid file") {
			t.Errorf("stdout:\n%s\nstderr: %s", out, errs)
		}
		procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, f := range procs {
			if b, _ := os.ReadFile(f); string(b) == "sleep\x00"+arg+"\x00" {
				t.Errorf("the daemon outlived its failed start: %s", f)
			}
		}
	})
}
