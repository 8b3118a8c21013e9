package main

import (
	"os"
	"testing"
)

// TestMain keeps every svcrun serve of the tests (in-process or built)
// from announcing its socket where a user's commands would find it.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "svcrun-runtime-")
	if err != nil {
		panic(err)
	}
	os.Setenv(EnvRuntimeDir, dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
