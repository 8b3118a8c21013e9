package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/oarbank/svcrun/internal/cli"
	"github.com/oarbank/svcrun/internal/tomldoc"
)

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = program.Run(context.Background(), &cli.Env{Stdout: &out, Stderr: &errb}, hoistGlobalFlags(args)) // as main does
	return code, out.String(), errb.String()
}

func TestValidate(t *testing.T) {
	demo, err := filepath.Abs("../../examples/modules/demo")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		args       []string
		code       int
		out, errs  []string // lines that must appear
		notOutLine string
	}{
		{name: "valid bundle", args: []string{"validate", "--bundle", "../../examples/modules/demo"}, code: 0, out: []string{
			"module demo 0.1.0 (" + demo + "): 1 service, 1 probe, network none",
			"  service demo/kv: on_demand, pools kv-slots, capabilities kv, platforms all, start timeout 10s, idle timeout 30s",
			"  probe demo/posix-sh: capability posix-sh, every 5m0s, platforms all",
		}},
		{name: "valid config", args: []string{"validate", "--config", "../../examples/node.toml"}, code: 0, out: []string{
			"module demo 0.1.0 (" + demo + "): 1 service, 1 probe, network none",
		}},
		{name: "invalid bundle", args: []string{"validate", "--bundle", "testdata/bad-bundle"}, code: 1, errs: []string{
			`testdata/bad-bundle/module.toml:2:1: module.name: "Bad" is not a valid module name: use 1-63 of a-z, ` +
				`0-9 and '-', starting with a letter or digit`,
			`testdata/bad-bundle/module.toml:7:9: services[0].exec[0]: "/bin/sh" must be relative to the bundle root (no PATH ` +
				`lookup, no absolute paths)`,
			`testdata/bad-bundle/module.toml:8:1: services[0].lifecycle: "sometimes" is not a lifecycle: use "on_demand", ` +
				`"always" or "manual"`,
			"invalid: 3 errors",
		}},
		{name: "same bundle twice",
			args: []string{"validate", "--bundle", "../../examples/modules/demo", "--bundle", "../../examples/modules/demo"},
			code: 1, errs: []string{
				`module "demo" is also the name of the bundle`,
			}},
		{name: "invalid config", args: []string{"validate", "--config", "testdata/bad-node.toml"}, code: 1, errs: []string{
			`testdata/bad-node.toml:3:1: sandbox: "off" is not a sandbox mode: use "require" or "best_effort"`,
			// The grant is checked against the manifest although the file has a mistake.
			`testdata/bad-node.toml:6:1: modules[0].grants.read: "/etc/ssl" is not asked for by module "demo", ` +
				`whose [sandbox].read asks for nothing: grant only what the manifest asks`,
			"invalid: 2 errors",
		}},
		{name: "config without modules", args: []string{"validate", "--config", "testdata/no-modules.toml"}, code: 0,
			errs: []string{
				"svcrun validate: warning: testdata/no-modules.toml: no [[modules]]: svcrun runs nothing on this node; " +
					"a running svcrun refuses to reload this file while it has modules enabled (to stop them all, " +
					"set enabled = false on each and reload first)",
			}},
		{name: "missing config", args: []string{"validate", "--config", "testdata/nope.toml"}, code: 1, errs: []string{
			"testdata/nope.toml: cannot read the node configuration: no such file or directory",
		}},
		{name: "no flags", args: []string{"validate"}, code: 2,
			errs: []string{"svcrun validate: give --bundle DIR or --config FILE"}},
		{name: "both flags", args: []string{"validate", "--bundle", "x", "--config", "y"}, code: 2,
			errs: []string{"give either --bundle or --config, not both"}},
		{name: "stray argument", args: []string{"validate", "--bundle", "x", "extra"}, code: 2,
			errs: []string{`unexpected argument "extra"`}},
		{name: "bad flag", args: []string{"validate", "--bundel", "x"}, code: 2,
			errs: []string{"unknown flag --bundel (did you mean --bundle?)"}},
		{name: "unknown command", args: []string{"frobnicate"}, code: 2,
			errs: []string{`svcrun: unknown command "frobnicate"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := run(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out, errs)
			}
			for _, l := range tc.out {
				if !strings.Contains(out, l) {
					t.Errorf("stdout lacks %q:\n%s", l, out)
				}
			}
			for _, l := range tc.errs {
				if !strings.Contains(errs, l) {
					t.Errorf("stderr lacks %q:\n%s", l, errs)
				}
			}
		})
	}
}

func TestInvalidConfigGrant(t *testing.T) {
	// A config that parses but grants what the manifest did not ask.
	code, _, errs := run(t, "validate", "--config", "testdata/grant-node.toml")
	if code != 1 || !strings.Contains(errs, `modules[0].grants.read: "/etc/ssl" is not asked for by module "demo", `+
		`whose [sandbox].read asks for nothing: grant only what the manifest asks`) {
		t.Errorf("code %d, stderr:\n%s", code, errs)
	}
}

// TestValidateConfigBundles: a bundle that cannot be read is reported at
// its bundle key in the config, with every other mistake of the config and
// of the manifests that load.
func TestValidateConfigBundles(t *testing.T) {
	dir := t.TempDir()
	demo, err := filepath.Abs("../../examples/modules/demo")
	if err != nil {
		t.Fatal(err)
	}
	bad, err := filepath.Abs("testdata/bad-bundle")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	const head = "node_id = \"n\"\nmemory_budget_gb = 1\n"
	relHint := func(rel string) string {
		return fmt.Sprintf("check the path; %q is relative to the config file's directory, %s", rel, dir)
	}
	for _, tc := range []struct {
		name, toml string
		want       []string // the whole of stderr, line by line
	}{
		{"missing bundle alone", head + "[[modules]]\nbundle = \"modules/nope\"\n", []string{
			"CONFIG:4:1: modules[0].bundle: the bundle directory " + dir + "/modules/nope does not exist: " +
				relHint("modules/nope"),
			"invalid: 1 error"}},
		{"missing bundle with other mistakes",
			head + "sandbox = \"off\"\ndata_dri = \"x\"\n[[modules]]\nbundle = \"modules/nope\"\n[[modules]]\nbundle = \"" +
				demo + "\"\nenabeld = true\n[[modules]]\nbundle = \"" + bad + "\"\n", []string{
				`CONFIG:3:1: sandbox: "off" is not a sandbox mode: use "require" or "best_effort"`,
				`CONFIG:4:1: data_dri: unknown key (did you mean "data_dir"?)`,
				"CONFIG:6:1: modules[0].bundle: the bundle directory " + dir + "/modules/nope does not exist: " +
					relHint("modules/nope"),
				`CONFIG:9:1: modules[1].enabeld: unknown key (did you mean "enabled"?)`,
				bad + `/module.toml:2:1: module.name: "Bad" is not a valid module name: use 1-63 of a-z, 0-9 and '-', ` +
					`starting with a letter or digit`,
				bad + `/module.toml:7:9: services[0].exec[0]: "/bin/sh" must be relative to the bundle root (no PATH lookup, ` +
					`no absolute paths)`,
				bad + `/module.toml:8:1: services[0].lifecycle: "sometimes" is not a lifecycle: use "on_demand", ` +
					`"always" or "manual"`,
				"invalid: 7 errors"}},
		{"bundle is a file", head + "[[modules]]\nbundle = \"" + demo + "\"\n[[modules]]\nbundle = \"file\"\n", []string{
			"CONFIG:6:1: modules[1].bundle: " + dir +
				"/file is not a directory: bundle names the module's bundle directory, the one holding module.toml; " +
				relHint("file"),
			"invalid: 1 error"}},
		{"bundle without module.toml", head + "[[modules]]\nbundle = \"" + dir + "/empty\"\n", []string{
			"CONFIG:4:1: modules[0].bundle: the bundle directory " + dir + "/empty has no module.toml: " +
				"bundle names the directory that holds the module's manifest, module.toml; check the path",
			"invalid: 1 error"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".toml")
			if err := os.WriteFile(file, []byte(tc.toml), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, errs := run(t, "validate", "--config", file)
			if code != 1 || out != "" {
				t.Errorf("exit code %d, stdout:\n%s", code, out)
			}
			// The count first, then each error under it: every line of a
			// failure is the framework's (cli.Failure), none bypasses it.
			count, errors := tc.want[len(tc.want)-1], tc.want[:len(tc.want)-1]
			want := "svcrun validate: " + count + "\n  " + strings.ReplaceAll(strings.Join(errors, "\n  "), "CONFIG", file) +
				"\n"
			if diff := cmp.Diff(want, errs); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
		})
	}
}

// TestErrorLines: validate counts and lists mistakes, not lines of text: an
// ErrorList (wrapped or not) is one entry per mistake, and any other error
// is one entry even when its text spans lines.
func TestErrorLines(t *testing.T) {
	list := tomldoc.ErrorList{{File: "m.toml", Field: "a", Reason: "bad"}, {File: "m.toml", Field: "b", Reason: "worse"}}
	for _, tc := range []struct {
		name string
		err  error
		want []string
	}{
		{"list", list, []string{"m.toml: a: bad", "m.toml: b: worse"}},
		{"wrapped list", fmt.Errorf("load: %w", list), []string{"m.toml: a: bad", "m.toml: b: worse"}},
		{"multi-line error", errors.New("cannot read\nthe second line"), []string{"cannot read\nthe second line"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := errorLines(tc.err); !slices.Equal(got, tc.want) {
				t.Errorf("errorLines = %q, want %q", got, tc.want)
			}
		})
	}
}
