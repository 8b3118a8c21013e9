//go:build linux

// Package pythonsdk tests oarbank_sdk.service_protocol, the Python SDK for
// modules: its own unit tests, run with Debian's python3, and the output of
// every op of a small service and probe written with it, decoded by svcrun's
// decoder and validated against the project's schemas.
package pythonsdk

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oarbank/svcrun/protocol"
	"github.com/oarbank/svcrun/schemas"
)

// python is the interpreter a Debian node has, which the SDK's
// executables name in their #! line: not whatever python3 PATH finds.
const python = "/usr/bin/python3"

// needPython skips the test without /usr/bin/python3, except in CI
// (REQUIRE_KERNEL_FEATURES=1 or CI set), which installs it.
func needPython(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(python); err != nil {
		if os.Getenv("REQUIRE_KERNEL_FEATURES") == "1" || os.Getenv("CI") != "" {
			t.Fatalf("%s is missing (apt-get install python3): %v", python, err)
		}
		t.Skipf("%s is missing (apt-get install python3)", python)
	}
}

// TestUnittest runs the SDK's own unit tests (tests/), without writing
// bytecode into the tree.
func TestUnittest(t *testing.T) {
	needPython(t)
	cmd := exec.Command(python, "-B", "-m", "unittest", "discover", "-s", "tests", "-v")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python unittest: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("\nOK")) {
		t.Fatalf("python unittest did not say OK:\n%s", out)
	}
}

// bundle copies testdata/tiny and the SDK into a new bundle, as a module
// vendors it (lib/oarbank_sdk), and returns the bundle's directory.
func bundle(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata/tiny")); err != nil {
		t.Fatal(err)
	}
	sdk := os.DirFS("oarbank_sdk")
	err := fs.WalkDir(sdk, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == "__pycache__" {
			return fs.SkipDir
		}
		dst := filepath.Join(dir, "lib", "oarbank_sdk", p)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := fs.ReadFile(sdk, p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, exe := range []string{"tiny-service", "tiny-probe"} {
		if err := os.Chmod(filepath.Join(dir, "bin", exe), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// op is an environment to run ops in, as svcrun gives it.
type op struct {
	bundle, data string
	env          []string
}

func newOp(t *testing.T) *op {
	needPython(t)
	data := t.TempDir()
	files := map[string]string{"settings.json": `{"slots": 3}`, "tools.json": `{"sleep": "/bin/sleep"}`,
		"limits.json": `{"mem_gb": 0.5, "pids": 64}`}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(data, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	o := &op{bundle: bundle(t), data: data, env: []string{
		"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "OARBANK_MODULE_DATA=" + data, "OARBANK_MODULE=tiny",
		"OARBANK_SERVICE=tiny", "OARBANK_NODE_ID=node-1", "OARBANK_PLATFORM=linux",
		"OARBANK_SETTINGS_FILE=" + filepath.Join(data, "settings.json"),
		"OARBANK_TOOLS_FILE=" + filepath.Join(data, "tools.json"),
		"OARBANK_LIMITS_FILE=" + filepath.Join(data, "limits.json"),
	}}
	t.Cleanup(func() { o.run(t, nil, "bin/tiny-service", "stop") })
	return o
}

// run runs exe of the bundle with args and env added, as svcrun does (stdin
// /dev/null, the bundle its working directory), and returns stdout, stderr
// and the exit status once stdout and stderr have closed: a daemon that
// kept them would hold run until the cutoff.
func (o *op) run(t *testing.T, env []string, exe string, args ...string) ([]byte, []byte, int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(o.bundle, exe), args...)
	cmd.Dir = o.bundle
	cmd.Env = append(append([]string{}, o.env...), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		t.Fatalf("%s %v: its stdout or stderr still open 60 s on (a daemon kept them?): %v\nstderr: %s", exe, args,
			<-done, stderr.String())
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.Bytes(), stderr.Bytes(), code
}

var schemaOf = map[protocol.Op]schemas.Name{
	protocol.OpFingerprint: schemas.Fingerprint, protocol.OpStart: schemas.OpResult, protocol.OpStop: schemas.OpResult,
	protocol.OpDestroy: schemas.OpResult, protocol.OpStatus: schemas.Status, protocol.OpReady: schemas.Status,
	protocol.OpListOwned: schemas.OwnedList,
}

// TestOps runs every op of the tiny service and probe in a lifecycle's
// order; each output is one line, valid against its op's schema, and
// decoded by svcrun's decoder without a warning into what the op meant.
func TestOps(t *testing.T) {
	o := newOp(t)
	running := func(r protocol.Result) string {
		return strconv.FormatBool(r.Status != nil && r.Status.Running)
	}
	steps := []struct {
		exe  string
		role protocol.Role
		args []string
		want func(r protocol.Result) string
		is   string
	}{
		{"bin/tiny-probe", protocol.RoleProbe, []string{"fingerprint"}, func(r protocol.Result) string {
			return r.Fingerprint.Attrs["node"].(string)
		}, "node-1"},
		{"bin/tiny-service", protocol.RoleService, []string{"fingerprint"}, func(r protocol.Result) string {
			f := r.Fingerprint
			return strconv.FormatBool(*f.Running) + " " + strconv.FormatInt(f.Pools["tiny-slots"], 10) + " " +
				strconv.FormatInt(f.Pools["max"], 10) + " " + strconv.FormatFloat(f.Reserve.MemGB, 'g', -1, 64) + " " +
				f.Attrs["tool"].(string) + " " + f.Message
		}, "false 3 9223372036854775807 0.5 /bin/sleep tiny \"quoted\" é\n"},
		{"bin/tiny-service", protocol.RoleService, []string{"status"}, running, "false"},
		{"bin/tiny-service", protocol.RoleService, []string{"start"}, func(r protocol.Result) string {
			return strconv.FormatBool(r.OpResult.Changed)
		}, "true"},
		{"bin/tiny-service", protocol.RoleService, []string{"start"}, func(r protocol.Result) string {
			return strconv.FormatBool(r.OpResult.Changed) + " " + r.OpResult.Message
		}, "false already running"},
		{"bin/tiny-service", protocol.RoleService, []string{"ready"}, running, "true"},
		{"bin/tiny-service", protocol.RoleService, []string{"fingerprint"}, func(r protocol.Result) string {
			return strconv.FormatBool(*r.Fingerprint.Running)
		}, "true"},
		{"bin/tiny-service", protocol.RoleService, []string{"list_owned"}, func(r protocol.Result) string {
			var b strings.Builder
			for _, ob := range r.OwnedList.Objects {
				b.WriteString(ob.ID + " " + ob.Kind + " " + ob.Labels["oarbank.service"] + " " +
					ob.CreatedAt.UTC().Format(time.RFC3339Nano) + " " + strconv.FormatBool(ob.Busy) + ";")
			}
			return b.String()
		}, "vol-a1 volume tiny/tiny 2026-12-01T17:00:00Z true;db-é other  2026-12-01T17:00:00.5Z false;"},
		{"bin/tiny-service", protocol.RoleService, []string{"destroy", "vol-a1", "--force"}, func(r protocol.Result) string {
			return strconv.FormatBool(r.OpResult.Changed) + " " + r.OpResult.Message
		}, "true destroyed, force True"},
		{"bin/tiny-service", protocol.RoleService, []string{"destroy", "never-made"}, func(r protocol.Result) string {
			return strconv.FormatBool(r.OpResult.Changed)
		}, "false"},
		{"bin/tiny-service", protocol.RoleService, []string{"stop"}, func(r protocol.Result) string {
			return strconv.FormatBool(r.OpResult.Changed) + " " + strconv.FormatBool(r.OpResult.Escalated)
		}, "true false"},
		{"bin/tiny-service", protocol.RoleService, []string{"stop"}, func(r protocol.Result) string {
			return strconv.FormatBool(r.OpResult.Changed)
		}, "false"},
		{"bin/tiny-service", protocol.RoleService, []string{"status"}, running, "false"},
	}
	for _, s := range steps {
		name := filepath.Base(s.exe) + " " + strings.Join(s.args, " ")
		stdout, stderr, code := o.run(t, nil, s.exe, s.args...)
		if code != 0 || bytes.Count(stdout, []byte("\n")) != 1 {
			t.Fatalf("%s: exit %d, stdout %q, stderr:\n%s", name, code, stdout, stderr)
		}
		opName := protocol.Op(s.args[0])
		if err := schemas.ValidateJSON(schemaOf[opName], stdout); err != nil {
			t.Errorf("%s: %s: %v", name, stdout, err)
		}
		res, err := protocol.Decode(opName, s.role, protocol.Output{Stdout: stdout, StderrTail: stderr})
		if err != nil {
			t.Errorf("%s: svcrun refuses %s: %v", name, stdout, err)
			continue
		}
		if len(res.Warnings) > 0 {
			t.Errorf("%s: warnings %v", name, res.Warnings)
		}
		if got := s.want(res); got != s.is {
			t.Errorf("%s: %s gives %q, want %q", name, stdout, got, s.is)
		}
	}
}

// TestFailures: a failing op, a wrong command line and an op run outside
// svcrun each exit non-zero with one JSON object whose message svcrun
// shows, and no traceback on stdout.
func TestFailures(t *testing.T) {
	o := newOp(t)
	cases := []struct {
		name     string
		env      []string
		exe      string
		args     []string
		code     int
		message  string
		okFalse  bool
		inStderr string
	}{
		{"start raises", []string{"TINY_FAIL=start"}, "bin/tiny-service", []string{"start"}, 1,
			"start broke on purpose", true, "Traceback"},
		{"status raises", []string{"TINY_FAIL=status"}, "bin/tiny-service", []string{"status"}, 1,
			"status broke on purpose", false, "RuntimeError"},
		{"stop fails with a code", []string{"TINY_FAIL=stop", "TINY_FAIL_CODE=3"}, "bin/tiny-service",
			[]string{"stop"}, 3, "stop failed on purpose", true, "stop failed on purpose"},
		{"unknown op", nil, "bin/tiny-service", []string{"restart"}, 2, "unknown op 'restart'", false, "unknown op"},
		{"no op", nil, "bin/tiny-service", nil, 2, "no op given", false, "no op given"},
		{"destroy a flag", nil, "bin/tiny-service", []string{"destroy", "-rf"}, 2, "invalid object id", true, "flag"},
		{"probe start", nil, "bin/tiny-probe", []string{"start"}, 2, "a probe implements only fingerprint", true, "probe"},
		{"not run by svcrun", []string{"OARBANK_NODE_ID="}, "bin/tiny-service", []string{"fingerprint"}, 1,
			"not run by svcrun: OARBANK_NODE_ID is not set", false, "OARBANK_NODE_ID"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := o.run(t, c.env, c.exe, c.args...)
			if code != c.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, c.code, stderr)
			}
			if bytes.Count(stdout, []byte("\n")) != 1 || bytes.Contains(stdout, []byte("Traceback")) {
				t.Errorf("stdout %q: want one line, no traceback", stdout)
			}
			if !bytes.Contains(stderr, []byte(c.inStderr)) {
				t.Errorf("stderr lacks %q:\n%s", c.inStderr, stderr)
			}
			if c.okFalse {
				// start, stop, destroy: a valid op result, ok false.
				if err := schemas.ValidateJSON(schemas.OpResult, stdout); err != nil ||
					!bytes.Contains(stdout, []byte(`"ok": false`)) {
					t.Errorf("%s: want a valid op result with ok false: %v", stdout, err)
				}
			}
			op := protocol.OpStatus
			if len(c.args) > 0 && protocol.Op(c.args[0]).Valid() {
				op = protocol.Op(c.args[0])
			}
			role := protocol.RoleService
			if c.exe == "bin/tiny-probe" {
				op, role = protocol.OpFingerprint, protocol.RoleProbe
			}
			_, err := protocol.Decode(op, role, protocol.Output{Stdout: stdout, StderrTail: stderr, ExitCode: code})
			var oe *protocol.OpError
			if !errors.As(err, &oe) || !strings.Contains(oe.Error(), c.message) {
				t.Errorf("svcrun reads %q as %v, want a failure saying %q", stdout, err, c.message)
			}
		})
	}
}

// TestDaemonDetached: the daemon start leaves has a session of its own and
// none of the op's pipes, so the op's stdout and stderr close when the op
// exits (run would wait for them otherwise), and stop ends it with SIGTERM.
func TestDaemonDetached(t *testing.T) {
	o := newOp(t)
	if _, stderr, code := o.run(t, nil, "bin/tiny-service", "start"); code != 0 {
		t.Fatalf("start: exit %d\n%s", code, stderr)
	}
	data, err := os.ReadFile(filepath.Join(o.data, "tiny.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	sid, err := sessionOf(pid)
	if err != nil {
		t.Fatal(err)
	}
	if sid != pid {
		t.Errorf("the daemon %d is in session %d: want its own (setsid)", pid, sid)
	}
	want := map[string]string{"0": "/dev/null", "1": filepath.Join(o.data, "tiny.log"),
		"2": filepath.Join(o.data, "tiny.log")}
	for fd, path := range want {
		if got, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + fd); err != nil || got != path {
			t.Errorf("the daemon's fd %s is %q (%v), want %s", fd, got, err, path)
		}
	}
	if log, _ := os.ReadFile(filepath.Join(o.data, "tiny.log")); len(log) != 0 {
		t.Errorf("the log holds %q: the op's stray print went there, not to the op's stderr", log)
	}
	stdout, stderr, code := o.run(t, nil, "bin/tiny-service", "stop")
	if code != 0 || !bytes.Contains(stdout, []byte(`"changed": true`)) {
		t.Fatalf("stop: exit %d, %s\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
		if s, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); !bytes.Contains(s, []byte(") Z")) {
			t.Errorf("the daemon %d outlived stop", pid)
		}
	}
}

// sessionOf reads the session id of pid from /proc/<pid>/stat.
func sessionOf(pid int) (int, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil && err != io.EOF {
		return 0, err
	}
	// pid (comm) state ppid pgrp session ...: comm may hold spaces.
	fields := strings.Fields(line[strings.LastIndexByte(line, ')')+1:])
	if len(fields) < 4 {
		return 0, errors.New("short stat: " + line)
	}
	return strconv.Atoi(fields[3])
}
