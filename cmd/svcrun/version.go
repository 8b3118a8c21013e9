package main

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/oarbank/svcrun/internal/cli"
)

// buildVersion is what `svcrun version` reports.
type buildVersion struct {
	Version  string `json:"version"`
	Commit   string `json:"commit,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
}

// readVersion takes the version from the build info: the module version for
// `go install ...@VERSION`, "(devel)" for a build in a checkout, where the
// commit comes from the VCS stamp instead.
func readVersion(info *debug.BuildInfo, ok bool) buildVersion {
	if !ok {
		return buildVersion{Version: "unknown", Go: "unknown"}
	}
	v := buildVersion{Version: info.Main.Version, Go: info.GoVersion}
	if v.Version == "" {
		v.Version = "(devel)"
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// runVersion is `svcrun version [--json]`.
func runVersion(_ context.Context, m *cli.Env, args []string) error {
	fs := m.FlagSet("version", "[--json]")
	asJSON := fs.Bool("json", false, "print a JSON object")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if err := cli.NoArgs(fs); err != nil {
		return err
	}
	v := readVersion(debug.ReadBuildInfo())
	if *asJSON {
		return cli.PrintJSON(m.Stdout, v)
	}
	commit := v.Commit
	if commit == "" {
		commit = "unknown"
	} else if v.Modified {
		commit += " (modified)"
	}
	_, err := fmt.Fprintf(m.Stdout, "svcrun %s\ncommit %s\n%s\n", v.Version, commit, v.Go)
	return err
}
