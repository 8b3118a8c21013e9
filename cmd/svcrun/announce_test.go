package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain keeps every svcrun serve of the tests (in-process or built)
// from announcing its socket where a user's commands would find it, and
// every svcrun run from writing its services file in the user's
// <temp dir>/svcrun-services-<uid>: both go to a directory of the test
// process's own. Its tmp is traversable (0755), as the temporary
// directory is, for the run_as tests.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "svcrun-runtime-")
	if err != nil {
		panic(err)
	}
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		panic(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		panic(err)
	}
	os.Setenv(EnvRuntimeDir, dir)
	os.Setenv("TMPDIR", tmp)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
