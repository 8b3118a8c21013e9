package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = (&Main{Stdout: &out, Stderr: &errb}).Run(context.Background(), args)
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
			`testdata/bad-bundle/module.toml:2:1: module.name: "Bad" is not a valid module name: use 1-63 of a-z, 0-9 and '-', starting with a letter or digit`,
			`testdata/bad-bundle/module.toml:7:9: services[0].exec[0]: "/bin/sh" must be relative to the bundle root (no PATH lookup, no absolute paths)`,
			`testdata/bad-bundle/module.toml:8:1: services[0].lifecycle: "sometimes" is not a lifecycle: use "on_demand", "always" or "manual"`,
			"invalid: 3 errors",
		}},
		{name: "same bundle twice", args: []string{"validate", "--bundle", "../../examples/modules/demo", "--bundle", "../../examples/modules/demo"}, code: 1, errs: []string{
			`module "demo" is also the name of the bundle`,
		}},
		{name: "invalid config", args: []string{"validate", "--config", "testdata/bad-node.toml"}, code: 1, errs: []string{
			`testdata/bad-node.toml:3:1: sandbox: "off" is not a sandbox mode: use "require" or "best_effort"`,
			"invalid: 1 error",
		}},
		{name: "missing config", args: []string{"validate", "--config", "testdata/nope.toml"}, code: 1, errs: []string{
			"testdata/nope.toml: cannot read the node configuration: no such file or directory",
		}},
		{name: "no flags", args: []string{"validate"}, code: 2, errs: []string{"svcrun validate: give --bundle DIR or --config FILE"}},
		{name: "both flags", args: []string{"validate", "--bundle", "x", "--config", "y"}, code: 2, errs: []string{"give either --bundle or --config, not both"}},
		{name: "stray argument", args: []string{"validate", "--bundle", "x", "extra"}, code: 2, errs: []string{`unexpected argument "extra"`}},
		{name: "bad flag", args: []string{"validate", "--bundel", "x"}, code: 2, errs: []string{"flag provided but not defined: -bundel"}},
		{name: "unknown command", args: []string{"frobnicate"}, code: 2, errs: []string{`svcrun: unknown command "frobnicate"`}},
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
	if code != 1 || !strings.Contains(errs, `modules[0].grants.read: "/etc/ssl" is not asked for by module "demo", whose [sandbox].read asks for nothing: grant only what the manifest asks`) {
		t.Errorf("code %d, stderr:\n%s", code, errs)
	}
}
