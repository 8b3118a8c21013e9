package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oarbank/svcrun/internal/cli"
)

func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := program.Run(context.Background(), &cli.Env{Stdout: &out, Stderr: &errb}, args)
	return code, out.String(), errb.String()
}

const tinyScenario = `# a tiny scenario
module
[module]
name = "db"
version = "1"
[[services]]
name = "kv"
exec = ["bin/kv"]
capabilities = ["kv"]
idle_timeout_s = 5
end
at 1s acquire l1 attempt=a1 cap=kv wait=10s
at 2s release l1
run 10s
`

func TestTestRewriteThenPass(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tiny.txt")
	if err := os.WriteFile(file, []byte(tinyScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := run(t, "test", dir); code != 1 || !strings.Contains(errs, "no expected trace") {
		t.Fatalf("before rewrite: exit %d, stderr:\n%s", code, errs)
	}
	if code, out, errs := run(t, "test", dir, "-rewrite"); code != 0 || !strings.Contains(out, "rewrote") {
		t.Fatalf("rewrite: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := run(t, "test", dir); code != 0 || !strings.Contains(out, "ok: 1 scenario(s)") {
		t.Fatalf("after rewrite: exit %d\n%s%s", code, out, errs)
	}
	data, _ := os.ReadFile(file)
	if !strings.HasPrefix(string(data), tinyScenario+"----\n") ||
		!strings.Contains(string(data), "db/kv: stopped (idle for 5s)") {
		t.Fatalf("rewritten file:\n%s", data)
	}
	// A changed expectation fails with a diff naming the file.
	bad := strings.Replace(string(data), "released l1", "released l2", 1)
	if err := os.WriteFile(file, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := run(t, "test", dir)
	if code != 1 || !strings.Contains(errs, "--- "+file+" (expected)") ||
		!strings.Contains(errs, "-    2.000s    released l2") || !strings.Contains(errs, "+    2.000s    released l1") {
		t.Fatalf("mismatch: exit %d, stderr:\n%s", code, errs)
	}
}

func TestRunPrintsTraceAndSVG(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tiny.txt")
	os.WriteFile(file, []byte(tinyScenario), 0o644)
	svg := filepath.Join(dir, "tiny.svg")
	code, out, errs := run(t, "run", "--svg", svg, file)
	if code != 0 || !strings.Contains(out, "> acquire l1") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	data, err := os.ReadFile(svg)
	if err != nil || !bytes.HasPrefix(data, []byte("<svg")) {
		t.Fatalf("svg: %v %.40q", err, data)
	}
	// Several files: --svg is a directory.
	code, out, errs = run(t, "run", "--svg", filepath.Join(dir, "out"), file, file)
	if code != 0 || strings.Count(out, "== "+file) != 2 {
		t.Fatalf("two files: exit %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "out", "tiny.svg")); err != nil {
		t.Fatal(err)
	}
}

func TestErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "bad.txt")
	os.WriteFile(file, []byte(strings.Replace(tinyScenario, "at 2s release l1", "at 2s relase l1", 1)), 0o644)
	if code, _, errs := run(t, "run", file); code != 1 || !strings.Contains(errs, file+":13: unknown input \"relase\"") {
		t.Errorf("bad scenario: exit %d, stderr:\n%s", code, errs)
	}
	if code, out, errs := run(t); code != 2 || out != "" || !strings.HasPrefix(errs, "Usage: svcsim <command>") {
		t.Errorf("no command: exit %d\nstdout: %q\nstderr: %q", code, out, errs)
	}
	if code, _, _ := run(t, "frob"); code != 2 {
		t.Errorf("unknown command: exit %d", code)
	}
	if code, _, _ := run(t, "run"); code != 2 {
		t.Errorf("run without files: exit %d", code)
	}
	// A bad flag is one line and a pointer to -h, as in svcrun.
	if code, out, errs := run(t, "test", "-nope"); code != 2 || out != "" ||
		errs != "svcsim test: unknown flag --nope\nRun 'svcsim test -h' for usage.\n" {
		t.Errorf("unknown flag: exit %d\nstdout: %q\nstderr: %q", code, out, errs)
	}
	if code, out, errs := run(t, "bench", "--days", "x"); code != 2 || out != "" ||
		!strings.HasPrefix(errs, "svcsim bench: --days \"x\": ") || strings.Contains(errs, "Usage:") {
		t.Errorf("bad flag value: exit %d\nstdout: %q\nstderr: %q", code, out, errs)
	}
	if code, _, _ := run(t, "test", "a", "b"); code != 2 {
		t.Errorf("two dirs: exit %d", code)
	}
	if code, _, errs := run(t, "test", dir); code != 1 || !strings.Contains(errs, "FAIL "+file) {
		t.Errorf("test dir with a bad scenario: exit %d\n%s", code, errs)
	}
	if code, out, errs := run(t, "help"); code != 0 || !strings.HasPrefix(out, "Usage: svcsim <command>") || errs != "" {
		t.Errorf("help: exit %d\nstdout: %q\nstderr: %q", code, out, errs)
	}
	if code, out, errs := run(t, "run", "-h"); code != 0 ||
		!strings.HasPrefix(out, "Usage: svcsim run [--svg OUT] FILE|DIR...") || errs != "" {
		t.Errorf("run -h: exit %d\nstdout: %q\nstderr: %q", code, out, errs)
	}
}

// TestRepoScenarios runs the project's scenarios through the command.
func TestRepoScenarios(t *testing.T) {
	if code, out, errs := run(t, "test", filepath.Join("..", "..", "scenarios")); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
}

// TestFileAndDirArguments: test takes one file as well as a directory, run
// a directory as well as files.
func TestFileAndDirArguments(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	for _, f := range []string{a, b} {
		if err := os.WriteFile(f, []byte(tinyScenario), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if code, out, errs := run(t, "test", "-rewrite", a); code != 0 ||
		out != "rewrote "+a+"\n1 scenario(s), 1 rewritten\n" {
		t.Fatalf("test -rewrite FILE: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := run(t, "test", a); code != 0 || out != "ok: 1 scenario(s)\n" {
		t.Fatalf("test FILE: exit %d\n%s%s", code, out, errs)
	}
	// b has no expected trace yet: the directory fails on it, a alone passes.
	if code, _, errs := run(t, "test", dir); code != 1 || !strings.Contains(errs, "FAIL "+b) ||
		strings.Contains(errs, "FAIL "+a) {
		t.Fatalf("test DIR: exit %d\n%s", code, errs)
	}
	if code, _, errs := run(t, "test", filepath.Join(dir, "none.txt")); code != 1 || !strings.Contains(errs, "none.txt") {
		t.Fatalf("test of a missing file: exit %d\n%s", code, errs)
	}
	svg := filepath.Join(dir, "svg")
	code, out, errs := run(t, "run", "--svg", svg, dir)
	if code != 0 || !strings.Contains(out, "== "+a+"\n") || !strings.Contains(out, "== "+b+"\n") ||
		strings.Index(out, "== "+a) > strings.Index(out, "== "+b) {
		t.Fatalf("run DIR: exit %d\n%s%s", code, out, errs)
	}
	for _, name := range []string{"a.svg", "b.svg"} {
		if _, err := os.Stat(filepath.Join(svg, name)); err != nil {
			t.Errorf("run --svg DIR of a directory: %v", err)
		}
	}
	empty := t.TempDir()
	if code, _, errs := run(t, "run", empty); code != 1 || !strings.Contains(errs, "no scenario (*.txt) in "+empty) {
		t.Errorf("run of an empty directory: exit %d\n%s", code, errs)
	}
}
