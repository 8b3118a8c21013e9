package main

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/oarbank/svcrun/api"
	"github.com/oarbank/svcrun/conformance"
	"github.com/oarbank/svcrun/internal/testhost"
)

// TestCheckDemo: svcrun check of the demo module prints one PASS line per
// check of kv and of posix-sh and the summary, and exits 0; --json is one
// document with every check and its evidence.
func TestCheckDemo(t *testing.T) {
	code, out, errs := run(t, "check", "--bundle", "../../examples/modules/demo")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	var want []string
	for _, c := range conformance.Names(false) {
		want = append(want, "demo/kv "+c)
	}
	for _, c := range conformance.Names(true) {
		want = append(want, "demo/posix-sh "+c)
	}
	if len(lines) != len(want)+1 {
		t.Fatalf("%d lines, want %d checks and a summary:\n%s", len(lines), len(want), out)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], "PASS "+w+": ") {
			t.Errorf("line %d: %q, want PASS %s: ...", i+1, lines[i], w)
		}
	}
	summary := regexp.MustCompile(`^demo: 15 checks: 15 passed, 0 failed, 0 skipped in [0-9.]+s \(containers: [^;]+; ` +
		`a temporary module data dir, removed\)$`)
	if s := lines[len(lines)-1]; !summary.MatchString(s) {
		t.Errorf("summary %q", s)
	}

	data := t.TempDir()
	code, out, errs = run(t, "check", "--bundle", "../../examples/modules/demo", "--data", data, "posix-sh")
	if code != 0 || !strings.HasSuffix(out, "; module data dir "+data+")\n") {
		t.Errorf("--data: exit %d, stdout\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(data, "settings.json")); err != nil {
		t.Errorf("--data: the module data dir is not kept: %v", err)
	}

	code, out, errs = run(t, "check", "--json", "--bundle", "../../examples/modules/demo", "kv")
	if code != 0 {
		t.Fatalf("--json: exit %d\n%s%s", code, out, errs)
	}
	var rep struct {
		Module string `json:"module"`
		Passed int    `json:"passed"`
		Checks []struct {
			Target string `json:"target"`
			Check  string `json:"check"`
			Status string `json:"status"`
			Ops    []struct {
				Op         string   `json:"op"`
				OK         bool     `json:"ok"`
				Stdout     string   `json:"stdout"`
				DurationMS *float64 `json:"duration_ms"`
				TimeoutMS  float64  `json:"timeout_ms"`
			} `json:"ops"`
		} `json:"checks"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	if rep.Module != "demo" || len(rep.Checks) != len(conformance.Names(false)) || rep.Passed != len(rep.Checks) {
		t.Fatalf("--json of kv: %+v", rep)
	}
	life := rep.Checks[1]
	if life.Check != "lifecycle" || life.Target != "demo/kv" || len(life.Ops) == 0 {
		t.Fatalf("the lifecycle check: %+v", life)
	}
	if o := life.Ops[0]; o.Op != "start" || !o.OK || o.Stdout == "" || o.DurationMS == nil || o.TimeoutMS != 10000 {
		t.Errorf("the evidence of lifecycle's start: %+v", o)
	}
}

// TestCheckFlawAndUsage: a failing check exits 1 with its FAIL line and
// the failed op's evidence; wrong command lines exit 2; a bundle that is
// not a module exits 1.
func TestCheckFlawAndUsage(t *testing.T) {
	code, out, _ := run(t, "check", "--bundle", "../../conformance/testdata/flaw-stop-twice")
	if code != 1 {
		t.Errorf("flaw-stop-twice: exit %d, want 1\n%s", code, out)
	}
	for _, want := range []string{
		"\nFAIL stop-twice/svc stop-twice: stop failed: exit status 1: not running\n",
		"\n    stop (stop-twice): exit status 1: not running\n",
		"\nstop-twice: 12 checks: 11 passed, 1 failed, 0 skipped in ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("flaw-stop-twice: no %q in\n%s", want, out)
		}
	}

	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"check"}, 2, "svcrun check: give --bundle DIR\n"},
		{[]string{"check", "--bundle", "../../examples/modules/demo", "nope"}, 2,
			`svcrun check: no service or probe "nope" in module "demo"`},
		{[]string{"check", "--bundle", "../../examples/modules/demo", "--bogus"}, 2,
			"bogus"}, // the wording is internal/cli's
		{[]string{"check", "--bundle", "testdata"}, 1, "module.toml"},
	} {
		code, _, errs := run(t, tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.err) {
			t.Errorf("%q: exit %d, stderr %q; want exit %d with %q", tc.args, code, errs, tc.code, tc.err)
		}
	}
}

// TestCheckJob: svcrun check --job runs the job as svcrun run would, with
// the services file of runRun's writer, and list-owned-labels judges its
// objects: the good module passes, a module listing them with another
// node fails that check only; --job needs a service to run against.
func TestCheckJob(t *testing.T) {
	dir := t.TempDir()
	job := "cp \"$OARBANK_SERVICES_FILE\" " + dir + "/services.json && env > " + dir +
		"/env && sh ../../conformance/testdata/good-job/job.sh"
	code, out, errs := run(t, "check", "--bundle", "../../conformance/testdata/good-job",
		"--node-id", "node-7", "--job", job)
	if code != 0 || !strings.Contains(out, "PASS good-job/svc list-owned-labels: the job ") {
		t.Fatalf("good-job: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	b, err := os.ReadFile(filepath.Join(dir, "services.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sf api.ServicesFile
	if err := json.Unmarshal(b, &sf); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"oarbank.attempt_id": sf.Attempt, "oarbank.node": "node-7",
		"oarbank.service": "good-job/svc"}
	if len(sf.Services) != 1 || sf.NodeID != "node-7" || !strings.HasPrefix(sf.Attempt, "svcrun-check-job-") ||
		!maps.Equal(sf.Labels, want) || !maps.Equal(sf.Services[0].Labels, want) ||
		sf.Services[0].Attrs["objects_dir"] == nil {
		t.Errorf("services file:\n%s", b)
	}
	env, _ := os.ReadFile(filepath.Join(dir, "env"))
	for _, v := range []string{"OARBANK_NODE_ID=node-7", "OARBANK_ATTEMPT_ID=" + sf.Attempt,
		"OARBANK_LEASE_ID=" + sf.Lease, "OARBANK_SERVICES_FILE="} {
		if !strings.Contains(string(env), "\n"+v) {
			t.Errorf("the job's environment lacks %s", v)
		}
	}

	code, out, _ = run(t, "check", "--bundle", "../../conformance/testdata/flaw-job-labels",
		"--job", "sh ../../conformance/testdata/good-job/job.sh")
	if code != 1 ||
		!strings.Contains(out, "FAIL flaw-job-labels/svc list-owned-labels: 1 of 1 objects are not labelled") ||
		strings.Count(out, "FAIL") != 1 {
		t.Errorf("flaw-job-labels: exit %d\n%s", code, out)
	}
	code, out, _ = run(t, "check", "--bundle", "../../conformance/testdata/good-job", "--job", "echo broken >&2; exit 3")
	if code != 1 ||
		!strings.Contains(out, "FAIL good-job/svc list-owned-labels: the job echo broken >&2; exit 3 (attempt ") ||
		!strings.Contains(out, "failed after") || !strings.Contains(out, "      | broken") {
		t.Errorf("a failing job: exit %d\n%s", code, out)
	}
	if code, _, errs := run(t, "check", "--bundle", "../../examples/modules/jdk", "--job", "true"); code != 2 ||
		!strings.Contains(errs, "no service") {
		t.Errorf("--job of a bundle without services: exit %d, %s", code, errs)
	}
}

// TestCheckGrants: svcrun check takes the grants a node would approve from
// the flags or a node configuration's entry of the module, checked against
// the manifest as svcrun serve checks them; run_as comes from the node
// configuration.
func TestCheckGrants(t *testing.T) {
	demo := "../../examples/modules/demo"
	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"--grant-write", "/nope"}, 1,
			`"/nope" is not asked for by module "demo", whose [sandbox].write asks for nothing`},
		{[]string{"--grant-read", "/etc/ssl"}, 1,
			`"/etc/ssl" is not asked for by module "demo", whose [sandbox].read asks for nothing`},
		{[]string{"--config", "testdata/grant-node.toml"}, 1,
			`modules[0].grants.read: "/etc/ssl" is not asked for by module "demo"`},
		{[]string{"--config", "testdata/no-modules.toml"}, 1, "no [[modules]] entry whose bundle is module demo"},
	} {
		code, _, errs := run(t, append([]string{"check", "--bundle", demo}, tc.args...)...)
		if code != tc.code || !strings.Contains(errs, tc.err) {
			t.Errorf("%q: exit %d, stderr %q; want exit %d with %q", tc.args, code, errs, tc.code, tc.err)
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("run_as needs root")
	}
	if code, _, errs := run(t, "check", "--bundle", demo, "--run-as", "root"); code != 1 ||
		!strings.Contains(errs, "it must be an unprivileged user") {
		t.Errorf("--run-as root: exit %d, stderr %q", code, errs)
	}
	// The demo where run_as can reach it, named by a copy of the
	// configuration.
	demo = testhost.Reachable(t, demo)
	text, err := os.ReadFile("testdata/check-node.toml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "check-node.toml")
	old := []byte("../../../examples/modules/demo")
	if !bytes.Contains(text, old) {
		t.Fatalf("testdata/check-node.toml names no %s", old)
	}
	text = bytes.Replace(text, old, []byte(demo), 1)
	if err := os.WriteFile(cfg, text, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "check", "--bundle", demo, "--config", cfg, "kv")
	if code != 0 {
		t.Errorf("check --config with run_as nobody: exit %d\n%s%s", code, out, errs)
	}
}
