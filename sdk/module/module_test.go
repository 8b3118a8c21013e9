package module

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oarbank/svcrun/protocol"
)

// fake is a service whose every answer the test sets.
type fake struct {
	fp      protocol.Fingerprint
	err     error
	owned   protocol.OwnedList
	gotID   string
	gotCall *Call
	force   bool
}

func (f *fake) Fingerprint(c *Call) (protocol.Fingerprint, error) {
	f.gotCall = c
	return f.fp, f.err
}
func (f *fake) Start(c *Call) (protocol.OpResult, error) {
	c.Logf("starting")
	return protocol.OpResult{Changed: true}, f.err
}
func (f *fake) Stop(*Call) (protocol.OpResult, error) {
	return protocol.OpResult{Changed: false, Message: "not running"}, f.err
}
func (f *fake) Status(*Call) (protocol.Status, error) {
	return protocol.Status{Running: true, Ready: true}, f.err
}
func (f *fake) Ready(*Call) (protocol.Status, error) {
	return protocol.Status{Running: true, Message: "warming up"}, f.err
}
func (f *fake) ListOwned(*Call) (protocol.OwnedList, error) { return f.owned, f.err }
func (f *fake) Destroy(_ *Call, id string, force bool) (protocol.OpResult, error) {
	f.gotID, f.force = id, force
	return protocol.OpResult{Changed: true}, f.err
}

func testEnv(t *testing.T, files map[string]string) func(string) string {
	data := t.TempDir()
	env := map[string]string{
		"OARBANK_MODULE_DATA":   data,
		"OARBANK_MODULE":        "m",
		"OARBANK_SERVICE":       "s",
		"OARBANK_NODE_ID":       "n1",
		"OARBANK_PLATFORM":      "linux",
		"OARBANK_SETTINGS_FILE": filepath.Join(data, "settings.json"),
		"OARBANK_TOOLS_FILE":    filepath.Join(data, "tools.json"),
		"OARBANK_LIMITS_FILE":   filepath.Join(data, "limits.json"),
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(data, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return func(k string) string { return env[k] }
}

func yes() *bool { b := true; return &b }

// TestRun: each op prints one document that svcrun's decoder accepts, with
// the exit status it must have, and a failure says why on stdout and
// stderr.
func TestRun(t *testing.T) {
	boom := errors.New("boom")
	for _, c := range []struct {
		name     string
		svc      fake
		probe    bool
		args     []string
		code     int
		decodes  bool   // the output is a valid result of the op
		contains string // in stdout
	}{
		{name: "fingerprint",
			svc:  fake{fp: protocol.Fingerprint{Healthy: true, Running: yes(), Pools: map[string]int64{"p": 3}}},
			args: []string{"fingerprint"}, decodes: true, contains: `"pools":{"p":3}`},
		{name: "a service's fingerprint without running fails", svc: fake{fp: protocol.Fingerprint{Healthy: true}},
			args: []string{"fingerprint"}, code: 1, contains: "must say whether it is running"},
		{name: "a probe's fingerprint need not say running", probe: true,
			svc:  fake{fp: protocol.Fingerprint{Healthy: true, Attrs: map[string]any{"v": "17"}}},
			args: []string{"fingerprint"}, decodes: true},
		{name: "start sets ok", args: []string{"start"}, decodes: true, contains: `{"ok":true,"changed":true}`},
		{name: "stop", args: []string{"stop"}, decodes: true, contains: `"changed":false`},
		{name: "status", args: []string{"status"}, decodes: true},
		{name: "ready", args: []string{"ready"}, decodes: true, contains: `"ready":false`},
		{name: "empty owned list is []", args: []string{"list_owned"}, decodes: true, contains: `{"objects":[]}`},
		{name: "owned list",
			svc:  fake{owned: protocol.OwnedList{Objects: []protocol.Object{{ID: "k1", Kind: protocol.KindOther}}}},
			args: []string{"list_owned"}, decodes: true, contains: `"labels":{}`},
		{name: "an invalid object id fails the list",
			svc:  fake{owned: protocol.OwnedList{Objects: []protocol.Object{{ID: "-rf", Kind: protocol.KindOther}}}},
			args: []string{"list_owned"}, code: 1, contains: "invalid object id"},
		{name: "destroy", args: []string{"destroy", "k1"}, decodes: true},
		{name: "destroy --force", args: []string{"destroy", "k1", "--force"}, decodes: true},
		{name: "a failed start prints ok false", svc: fake{err: boom}, args: []string{"start"}, code: 1,
			contains: `{"ok":false,"changed":false,"message":"boom"}`},
		{name: "a failed status prints its message", svc: fake{err: boom}, args: []string{"status"}, code: 1,
			contains: `{"message":"boom"}`},
		{name: "Exit gives the exit status", svc: fake{err: Exit(7, boom)}, args: []string{"stop"}, code: 7,
			contains: "boom"},
		{name: "no op", args: nil, code: 2, contains: "no op given"},
		{name: "an unknown op", args: []string{"restart"}, code: 2, contains: `unknown op \"restart\"`},
		{name: "destroy without id", args: []string{"destroy"}, code: 2, contains: "object id"},
		{name: "destroy with a flag as id", args: []string{"destroy", "--force"}, code: 2, contains: "invalid object id"},
		{name: "destroy with another flag", args: []string{"destroy", "k1", "--all"}, code: 2,
			contains: "optionally --force"},
		{name: "status with arguments", args: []string{"status", "x"}, code: 2, contains: "takes no arguments"},
		{name: "a probe has no start", probe: true, args: []string{"start"}, code: 2, contains: "only fingerprint"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			f := c.svc
			var code int
			if c.probe {
				code = RunProbe(&f, c.args, testEnv(t, nil), &stdout, &stderr)
			} else {
				code = Run(&f, c.args, testEnv(t, nil), &stdout, &stderr)
			}
			out := stdout.String()
			if code != c.code {
				t.Errorf("exit %d, want %d; stdout %s stderr %s", code, c.code, out, stderr.String())
			}
			if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
				t.Errorf("stdout is not one line: %q", out)
			}
			if !strings.Contains(out, c.contains) {
				t.Errorf("stdout %s lacks %s", out, c.contains)
			}
			if c.code != 0 && !strings.Contains(stderr.String(), strings.ReplaceAll(c.contains, `\"`, `"`)) &&
				!strings.Contains(c.contains, "{") {
				t.Errorf("stderr %q does not say %s", stderr.String(), c.contains)
			}
			if !c.decodes {
				return
			}
			role := protocol.RoleService
			if c.probe {
				role = protocol.RoleProbe
			}
			op, _ := protocol.ParseOp(c.args[0])
			if _, err := protocol.Decode(op, role, protocol.Output{Stdout: stdout.Bytes(), ExitCode: code}); err != nil {
				t.Errorf("svcrun would refuse %s: %v", out, err)
			}
		})
	}
}

// TestRunFailureDecodesAsOpError: svcrun reads a failed op's message from
// the document Main prints.
func TestRunFailureDecodesAsOpError(t *testing.T) {
	for _, op := range []protocol.Op{protocol.OpStart, protocol.OpStatus, protocol.OpFingerprint} {
		var stdout bytes.Buffer
		code := Run(&fake{err: errors.New("no disk")}, []string{string(op)}, testEnv(t, nil), &stdout, &bytes.Buffer{})
		_, err := protocol.Decode(op, protocol.RoleService, protocol.Output{Stdout: stdout.Bytes(), ExitCode: code})
		var oe *protocol.OpError
		if !errors.As(err, &oe) || oe.Message != "no disk" {
			t.Errorf("%s: %v, want an op error with the message", op, err)
		}
	}
}

// TestRunReadsFiles: the settings, tools and limits files reach the Call,
// and a broken one fails the op naming it.
func TestRunReadsFiles(t *testing.T) {
	f := &fake{fp: protocol.Fingerprint{Running: yes()}}
	var stdout, stderr bytes.Buffer
	env := testEnv(t, map[string]string{
		"settings.json": `{"slots": 4, "name": "x\u00e9", "on": true}`,
		"tools.json":    `{"java": "/usr/bin/java"}`,
		"limits.json":   `{"mem_gb": 0.5}`,
	})
	if code := Run(f, []string{"fingerprint"}, env, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s %s", code, stdout.String(), stderr.String())
	}
	c := f.gotCall
	var slots int
	var name string
	var missing bool
	if ok, err := c.Setting("slots", &slots); !ok || err != nil || slots != 4 {
		t.Errorf("slots: %v %v %d", ok, err, slots)
	}
	if ok, err := c.Setting("name", &name); !ok || err != nil || name != "xé" {
		t.Errorf("name: %v %v %q", ok, err, name)
	}
	if ok, err := c.Setting("absent", &missing); ok || err != nil {
		t.Errorf("absent: %v %v", ok, err)
	}
	if ok, err := c.Setting("name", &slots); !ok || err == nil || !strings.Contains(err.Error(), `setting "name"`) {
		t.Errorf("a string read as a number: %v %v", ok, err)
	}
	if c.Tools["java"] != "/usr/bin/java" || c.Limits.MemGB == nil || *c.Limits.MemGB != 0.5 || c.Limits.Pids != nil {
		t.Errorf("tools %v, limits %+v", c.Tools, c.Limits)
	}
	if c.NodeID != "n1" || c.FullName() != "m/s" {
		t.Errorf("env %+v", c.Env)
	}

	stdout.Reset()
	stderr.Reset()
	code := Run(f, []string{"fingerprint"}, testEnv(t, map[string]string{"settings.json": `{"slots": `}), &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "settings.json") {
		t.Errorf("broken settings: exit %d, stderr %q", code, stderr.String())
	}
}

// TestRunOutsideSvcrun: an op without svcrun's environment fails, naming
// the variable.
func TestRunOutsideSvcrun(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := Run(&fake{}, []string{"status"}, func(string) string { return "" }, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "OARBANK_MODULE_DATA is not set") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
}

// TestLabels: the labels of an attempt's object are the ones Owns accepts,
// and another node's, service's or an unlabelled object are not owned.
func TestLabels(t *testing.T) {
	e := Env{Module: "redis", Service: "redis", NodeID: "n1"}
	l := e.Labels("a1")
	want := map[string]string{"oarbank.attempt_id": "a1", "oarbank.node": "n1", "oarbank.service": "redis/redis"}
	for k, v := range want {
		if l[k] != v {
			t.Errorf("%s = %q, want %q", k, l[k], v)
		}
	}
	for _, c := range []struct {
		labels map[string]string
		owns   bool
	}{
		{l, true},
		{Env{Module: "redis", Service: "redis", NodeID: "n2"}.Labels("a1"), false},
		{Env{Module: "redis", Service: "other", NodeID: "n1"}.Labels("a1"), false},
		{e.Labels(""), false},
		{nil, false},
	} {
		if got := e.Owns(c.labels); got != c.owns {
			t.Errorf("Owns(%v) = %v, want %v", c.labels, got, c.owns)
		}
	}
}
