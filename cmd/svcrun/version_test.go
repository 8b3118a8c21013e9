package main

import (
	"runtime/debug"
	"testing"
)

// TestReadVersion: the version comes from the module (go install @VERSION)
// and the commit from the VCS stamp (a build in a checkout).
func TestReadVersion(t *testing.T) {
	for _, tc := range []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want buildVersion
	}{
		{"go install", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.2.3"}}, true,
			buildVersion{Version: "v1.2.3", Go: "go1.26.0"}},
		{"checkout",
			&debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
				{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}}, true,
			buildVersion{Version: "(devel)", Commit: "abc123", Modified: true, Go: "go1.26.0"}},
		{"no main version", &debug.BuildInfo{GoVersion: "go1.26.0"}, true, buildVersion{Version: "(devel)", Go: "go1.26.0"}},
		{"no build info", nil, false, buildVersion{Version: "unknown", Go: "unknown"}},
	} {
		if got := readVersion(tc.info, tc.ok); got != tc.want {
			t.Errorf("%s: readVersion = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestVersionCommand: text and --json both go to stdout.
func TestVersionCommand(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"version", "--json"}} {
		code, out, errs := run(t, args...)
		if code != 0 || out == "" || errs != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
}
