package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReplayArguments: the journal is a directory or one file of it; the
// window's bounds are offsets or times; bad ones are usage errors.
func TestReplayArguments(t *testing.T) {
	dir := filepath.Join("testdata", "journal") // a real svcrun's, see incident-demo-crash.txt
	out := filepath.Join(t.TempDir(), "out.txt")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string // in stdout+stderr
	}{
		{"check dir", []string{"replay", dir}, 0, "ok: 23 steps replayed"},
		{"check file", []string{"replay", filepath.Join(dir, "journal.jsonl")}, 0, "ok: 23 steps replayed"},
		{"scenario", []string{"replay", dir, "--scenario", out}, 0, "wrote " + out},
		{"window offsets",
			[]string{"replay", dir, "--scenario", out, "--from", "500ms", "--to", "1s", "--service", "demo/kv"}, 0, "wrote"},
		{"window time", []string{"replay", dir, "--scenario", out, "--from", "2026-12-06T20:23:56Z"}, 0, "wrote"},
		{"from before boot", []string{"replay", dir, "--scenario", out, "--from", "2026-12-01T17:00:00Z"}, 2,
			"before the journal's first boot"},
		{"bad from", []string{"replay", dir, "--scenario", out, "--from", "soon"}, 2, "neither an offset"},
		{"to before from", []string{"replay", dir, "--scenario", out, "--from", "3s", "--to", "2s"}, 2, "is before --from"},
		{"window without scenario", []string{"replay", dir, "--from", "2s"}, 2, "choose the window of a --scenario"},
		{"unknown service", []string{"replay", dir, "--scenario", out, "--service", "demo/nope"}, 1,
			"--service demo/nope: no such service in the journal's modules; they have: demo/kv"},
		{"no journal", []string{"replay", t.TempDir()}, 1, "no journal.jsonl nor journal-*.jsonl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, tc.args...)
			if code != tc.code || !strings.Contains(stdout+stderr, tc.want) {
				t.Fatalf("exit %d, want %d with %q\n%s%s", code, tc.code, tc.want, stdout, stderr)
			}
		})
	}
	if code, stdout, stderr := run(t, "test", out); code != 0 {
		t.Fatalf("test of the replayed scenario: exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestCommittedIncident: scenarios/incident-demo-crash.txt is what svcsim
// replay makes of the journal kept in testdata (its header aside).
func TestCommittedIncident(t *testing.T) {
	out := filepath.Join(t.TempDir(), "incident.txt")
	if code, stdout, stderr := run(t, "replay", filepath.Join("testdata", "journal"), "--scenario", out); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	got, _ := os.ReadFile(out)
	want, err := os.ReadFile(filepath.Join("..", "..", "scenarios", "incident-demo-crash.txt"))
	if err != nil {
		t.Fatal(err)
	}
	body := func(b []byte) string { _, after, _ := strings.Cut(string(b), "\nnode "); return after }
	if body(got) == "" || body(got) != body(want) {
		t.Fatalf("the committed incident is not the replay of testdata/journal; replay it again:\n%s", got)
	}
}

// TestReplayTornLine: a line svcrun tore (a write that failed on a full
// disk) is an error naming the file and the line, not a replay without it.
func TestReplayTornLine(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "journal", "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	lines[3] = lines[3][:len(lines[3])/2] + "\n"
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "journal.jsonl"), []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(dir, "journal.jsonl") + ":4: "
	for _, args := range [][]string{{"replay", dir}, {"replay", dir, "--scenario", filepath.Join(dir, "out.txt")}} {
		if code, _, stderr := run(t, args...); code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("%v: exit %d, want 1 naming %s\n%s", args, code, want, stderr)
		}
	}
}

// TestReplayRotatedInOrder: the rotated files of a journal directory come
// before the live one, oldest first.
func TestReplayRotatedInOrder(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "journal", "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n")
	dir := t.TempDir()
	parts := map[string][]string{
		"journal-20261201T172220.000000000Z.jsonl": lines[:5],
		"journal-20261201T172221.000000000Z.jsonl": lines[5:9],
		"journal.jsonl": lines[9:],
	}
	for name, ls := range parts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(ls, "")), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if code, stdout, stderr := run(t, "replay", dir); code != 0 || !strings.Contains(stdout, "ok: 23 steps") {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	// Out of order, the same lines diverge (or fail): the order matters.
	os.Rename(filepath.Join(dir, "journal-20261201T172220.000000000Z.jsonl"),
		filepath.Join(dir, "journal-20261201T172222.000000000Z.jsonl"))
	if code, _, _ := run(t, "replay", dir); code == 0 {
		t.Fatal("a journal read out of order replayed cleanly")
	}
}
