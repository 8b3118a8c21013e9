package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestOpDemo runs every op of the demo module, as a module author would
// try it, end to end through the real executables.
func TestOpDemo(t *testing.T) {
	data := t.TempDir()
	op := func(args ...string) (int, string, string) {
		t.Helper()
		return run(t,
			append([]string{"op", "--bundle", "../../examples/modules/demo", "--data", data, "--node-id", "n1"}, args...)...)
	}
	t.Cleanup(func() { op("kv", "stop") })
	for _, step := range []struct {
		args []string
		out  string
	}{
		{[]string{"kv", "fingerprint"}, `{
  "healthy": true,
  "running": false,
  "attrs": {
    "objects_dir": "` + filepath.Join(data, "objects") + `"
  },
  "pools": {
    "kv-slots": 4
  },
  "reserve": {
    "mem_gb": 0.05
  }
}
`},
		{[]string{"kv", "start"}, "{\n  \"ok\": true,\n  \"changed\": true\n}\n"},
		{[]string{"kv", "start"}, "{\n  \"ok\": true,\n  \"changed\": false,\n  \"message\": \"already running\"\n}\n"},
		{[]string{"kv", "status"}, "{\n  \"running\": true,\n  \"ready\": true\n}\n"},
		{[]string{"kv", "ready"}, "{\n  \"running\": true,\n  \"ready\": true\n}\n"},
		{[]string{"kv", "list_owned"}, "{\n  \"objects\": []\n}\n"},
		{[]string{"kv", "destroy", "vol-1", "--force"},
			"{\n  \"ok\": true,\n  \"changed\": false,\n  \"message\": \"already gone\"\n}\n"},
		{[]string{"kv", "stop"}, "{\n  \"ok\": true,\n  \"changed\": true\n}\n"},
		{[]string{"kv", "status"}, "{\n  \"running\": false,\n  \"ready\": false\n}\n"},
		{[]string{"posix-sh", "fingerprint"},
			"{\n  \"healthy\": true,\n  \"attrs\": {\n    \"shell\": \"/bin/sh\"\n  }\n}\n"},
	} {
		code, out, errs := op(step.args...)
		if code != 0 || out != step.out {
			t.Errorf("svcrun op %s: exit %d\nstdout:\n%s\nwant:\n%s\nstderr:\n%s",
				strings.Join(step.args, " "), code, out, step.out, errs)
		}
	}
	// The op saw the module data dir and its files.
	for _, f := range []string{"settings.json", "tools.json", "limits.json", "home", "tmp", "run"} {
		if _, err := os.Stat(filepath.Join(data, f)); err != nil {
			t.Errorf("module data dir: %v", err)
		}
	}
}

func TestOpSettings(t *testing.T) {
	data := t.TempDir()
	settings := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(settings, []byte(`{"slots": 7}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "op", "--bundle", "../../examples/modules/demo",
		"--data", data, "--settings", settings, "kv", "fingerprint")
	if code != 0 || !strings.Contains(out, `"kv-slots": 7`) {
		t.Errorf("exit %d\n%s%s", code, out, errs)
	}
}

func TestOpJSON(t *testing.T) {
	data := t.TempDir()
	code, out, errs := run(t, "op", "--json", "--bundle", "../../examples/modules/demo",
		"--data", data, "posix-sh", "fingerprint")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r struct {
		Module, Probe, Op, DataDir string
		OK                         bool
		ExitCode                   *int `json:"exit_code"`
		Result                     map[string]any
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if r.Module != "demo" || r.Probe != "posix-sh" || r.Op != "fingerprint" || !r.OK || r.ExitCode == nil ||
		*r.ExitCode != 0 || r.Result["healthy"] != true {
		t.Errorf("report %+v", r)
	}
}

// badBundle is a module whose service breaks the protocol in several ways.
func badBundle(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"module.toml": "[module]\nname = \"bad\"\nversion = \"1\"\n\n[[services]]\nname = \"svc\"\nexec = [\"bin/svc\"]\n",
		"bin/svc": `#!/bin/sh
case $1 in
fingerprint) printf '{"healthy":true,"runing":false,"pools":{"x":-1}}\n' ;;
start)
	echo "starting" >&2
	echo "error: port 8080 is taken" >&2
	printf '{"ok":false,"message":"port taken"}\n'
	exit 1 ;;
status) echo "waiting for ever" >&2; sleep 100 ;;
esac
`,
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestOpFailures(t *testing.T) {
	bundle := badBundle(t)
	data := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		errs []string
	}{
		{"protocol error", []string{"svc", "fingerprint"}, []string{
			"svcrun op: bad/svc fingerprint broke the protocol: /pools/x: must be >= 0; ",
			"  protocol violations (3):\n    /pools/x: must be >= 0\n    /runing: unknown property\n" +
				"    /running: missing required property (a service must report it)\n",
			`  stdout: "{\"healthy\":true,\"runing\":false,\"pools\":{\"x\":-1}}\n"`,
			"  module data dir: " + data,
		}},
		{"op error", []string{"svc", "start"}, []string{
			"svcrun op: bad/svc start failed: exit status 1: port taken (stderr: error: port 8080 is taken)\n",
			"  stderr (last 2 lines):\n    | starting\n    | error: port 8080 is taken\n",
		}},
		{"timeout", []string{"--timeout", "300ms", "svc", "status"}, []string{
			"svcrun op: bad/svc status timed out: killed after 300ms; " +
				"its process group got SIGTERM (stderr: waiting for ever)\n",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"op", "--bundle", bundle, "--data", data}, tc.args...)
			// Flags must come before SERVICE: move a --timeout up front.
			if tc.args[0] == "--timeout" {
				args = append([]string{"op", "--timeout", tc.args[1], "--bundle", bundle, "--data", data}, tc.args[2:]...)
			}
			code, out, errs := run(t, args...)
			if code != 1 || out != "" {
				t.Errorf("exit %d, stdout %q", code, out)
			}
			for _, want := range tc.errs {
				if !strings.Contains(errs, want) {
					t.Errorf("stderr lacks %q:\n%s", want, errs)
				}
			}
		})
	}
	code, out, _ := run(t, "op", "--json", "--bundle", bundle, "--data", data, "svc", "start")
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 1 {
		t.Fatalf("exit %d, %v:\n%s", code, err, out)
	}
	if r["ok"] != false || r["failure"] != "failed" || r["exit_code"] != 1.0 ||
		!strings.Contains(r["stderr_tail"].(string), "port 8080") {
		t.Errorf("report %v", r)
	}
}

func TestOpUsage(t *testing.T) {
	demo := "../../examples/modules/demo"
	for _, tc := range []struct {
		args []string
		code int
		errs string
	}{
		{[]string{"op", "--bundle", demo, "x", "fingerprint"}, 2,
			`svcrun op: no service or probe "x" in module "demo"; services: kv; probes: posix-sh`},
		{[]string{"op", "--bundle", demo, "kv", "restart"}, 2,
			`unknown op "restart"; ops: fingerprint, start, stop, status, ready, list_owned, destroy`},
		{[]string{"op", "--bundle", demo, "posix-sh", "start"}, 2,
			"demo/posix-sh is a probe: it implements only fingerprint"},
		{[]string{"op", "--bundle", demo, "kv", "status", "now"}, 2, `status takes no arguments, got ["now"]`},
		{[]string{"op", "--bundle", demo, "kv", "destroy"}, 2, "destroy needs the object ID"},
		{[]string{"op", "--bundle", demo, "kv", "destroy", "-rf"}, 2, `invalid object id "-rf": starts with '-'`},
		{[]string{"op", "--bundle", demo, "kv", "destroy", "a", "--now"}, 2, `destroy takes ID [--force], got ["a" "--now"]`},
		{[]string{"op", "kv", "status"}, 2, "give --bundle DIR"},
		{[]string{"op", "--bundle", demo, "kv"}, 2, "give the SERVICE (or probe) and the OP"},
		{[]string{"op", "--bundle", "testdata/bad-bundle", "kv", "status"}, 1, "invalid: 3 errors"},
	} {
		code, _, errs := run(t, tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.errs) {
			t.Errorf("%q: exit %d, stderr:\n%s\nwant exit %d and %q", tc.args, code, errs, tc.code, tc.errs)
		}
	}
}

// TestOpWithConfig runs ops as the node of a configuration runs them: its
// data dir, settings and sandbox.
func TestOpWithConfig(t *testing.T) {
	demo, err := filepath.Abs("../../examples/modules/demo")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "svcrun.toml")
	text := "node_id = \"op-node\"\ndata_dir = \"data\"\nmemory_budget_gb = 1\nsandbox = \"best_effort\"\n\n" +
		"[[modules]]\nbundle = \"" + demo + "\"\nsettings = { slots = 3 }\n"
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "op", "--config", cfg, "--json", "demo/kv", "fingerprint")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(out, `"kv-slots": 3`) || !strings.Contains(out, filepath.Join(dir, "data", "modules", "demo")) {
		t.Errorf("the op did not see the node's settings or data dir:\n%s", out)
	}
	if code, _, errs := run(t, "op", "--config", cfg, "nope", "fingerprint"); code != 2 ||
		!strings.Contains(errs, `no service or probe "nope" in the modules of`) {
		t.Errorf("unknown service: exit %d: %s", code, errs)
	}
	if code, _, errs := run(t, "op", "--config", cfg, "--bundle", demo, "kv", "fingerprint"); code != 2 ||
		!strings.Contains(errs, "give --bundle DIR or --config FILE") {
		t.Errorf("both modes: exit %d: %s", code, errs)
	}
}

// TestOpOtherPlatform: a service the manifest keeps to another platform
// is refused by the manifest's own rule, naming the platforms.
func TestOpOtherPlatform(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the fixture's other platform is windows")
	}
	bundle := t.TempDir()
	writeBundle(t, bundle, map[string]string{
		"module.toml": "[module]\nname = \"win\"\nversion = \"1\"\n\n[[services]]\nname = \"svc\"\nexec = [\"bin/svc\"]\n" +
			"platforms = [\"windows\"]\n",
		"bin/svc": "#!/bin/sh\nexit 0\n",
	})
	code, _, errs := run(t, "op", "--bundle", bundle, "--data", t.TempDir(), "svc", "fingerprint")
	if want := "service win/svc runs only on windows, not on " + runtime.GOOS; code != 1 || !strings.Contains(errs, want) {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 1 and %q", code, errs, want)
	}
}

// writeBundle writes files (path in dir -> content) into dir, readable
// and executable by every user.
func writeBundle(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOpBesideRunningSvcrun: svcrun op --config against a node whose
// svcrun runs says so, with its pid and what the op bypasses; an op that
// changes the service (start, stop, destroy) needs --bypass-svcrun.
func TestOpBesideRunningSvcrun(t *testing.T) {
	cfg, _ := served(t)
	runs := fmt.Sprintf("svcrun (pid %d) runs this node", os.Getpid())
	for _, tc := range []struct {
		args     []string
		code     int
		says     string
		notStart bool // the op must not have run
	}{
		{[]string{"demo/kv", "start"}, 1, "--bypass-svcrun runs it anyway", true},
		{[]string{"demo/kv", "stop"}, 1, "--bypass-svcrun runs it anyway", true},
		{[]string{"demo/kv", "destroy", "obj-1"}, 1, "--bypass-svcrun runs it anyway", true},
		{[]string{"demo/kv", "fingerprint"}, 0, "bypasses svcrun's ordering of demo/kv's ops", false},
		{[]string{"--bypass-svcrun", "demo/kv", "status"}, 0, "bypasses", false},
	} {
		code, out, errs := run(t, append([]string{"op", "--config", cfg}, tc.args...)...)
		if code != tc.code || !strings.Contains(errs, runs) || !strings.Contains(errs, tc.says) {
			t.Errorf("op %v: exit %d, want %d, saying %q and %q\nstdout: %s\nstderr: %s",
				tc.args, code, tc.code, runs, tc.says, out, errs)
		}
		if tc.notStart && out != "" {
			t.Errorf("op %v ran: %s", tc.args, out)
		}
	}
}
