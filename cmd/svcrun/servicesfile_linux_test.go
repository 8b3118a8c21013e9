package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/oarbank/svcrun/api"
	"github.com/oarbank/svcrun/internal/procfs"
)

// TestServicesFilesOfKilledRunsAreSwept: a run's services file is named
// for its process, and a later run removes those whose process is gone
// (a run killed with SIGKILL removes nothing) or is another one now,
// never a live run's.
func TestServicesFilesOfKilledRunsAreSwept(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	dir, err := servicesDir()
	if err != nil {
		t.Fatal(err)
	}
	ours, err := writeServicesFile(testGrant())
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(ours) != dir {
		t.Fatalf("services file %s, not in %s", ours, dir)
	}
	live, liveStart, end := sleeper(t)
	defer end()
	dead, deadStart, end := sleeper(t)
	end()
	files := map[string]bool{ // name -> kept
		fmt.Sprintf("%d.%d.1.json", live, liveStart):   true,
		fmt.Sprintf("%d.%d.2.json", dead, deadStart):   false,
		fmt.Sprintf("%d.%d.3.json", live, liveStart-1): false, // its pid reused since
		fmt.Sprintf("%d.0.4.json", dead):               true,  // start time unknown
		"notes.txt":                                    true,
	}
	for name := range files {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	files[filepath.Base(ours)] = true
	sweepServicesFiles(dir)
	for name, kept := range files {
		if _, err := os.Stat(filepath.Join(dir, name)); (err == nil) != kept {
			t.Errorf("%s: kept %v, want %v", name, err == nil, kept)
		}
	}
}

// TestServicesDirRefusesAForeignOne: a directory another user could read
// or write is not where the services files go.
func TestServicesDirRefusesAForeignOne(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir := filepath.Join(tmp, fmt.Sprintf("svcrun-services-%d", os.Getuid()))
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o777)
	if _, err := servicesDir(); err == nil {
		t.Fatalf("%s, mode 0777, taken", dir)
	}
	if _, err := writeServicesFile(testGrant()); err == nil {
		t.Fatalf("a services file written in %s", dir)
	}
}

// TestRunSweepsTheFilesOfKilledRuns: svcrun run removes, while a CMD
// that takes a while runs, the services file a run killed before it could
// left.
func TestRunSweepsTheFilesOfKilledRuns(t *testing.T) {
	_, sock := served(t)
	t.Setenv("TMPDIR", t.TempDir())
	dir, err := servicesDir()
	if err != nil {
		t.Fatal(err)
	}
	dead, start, end := sleeper(t)
	end()
	left := filepath.Join(dir, fmt.Sprintf("%d.%d.1.json", dead, start))
	if err := os.WriteFile(left, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// CMD waits until the file is gone (60 s at most: then it exits 9).
	script := `i=0; while [ -e "$1" ]; do i=$((i+1)); [ $i -lt 600 ] || exit 9; sleep 0.1; done`
	if code, out, errs := run(t, "run", "--socket", sock, "--capability", "kv", "--", "sh", "-c", script, "sh",
		left); code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
}

// sleeper starts a sleep and returns its pid and start time, and end,
// which kills and reaps it.
func sleeper(t *testing.T) (pid int, start uint64, end func()) {
	t.Helper()
	cmd := exec.Command("sleep", "1000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	start, ok := procfs.StartTicks(cmd.Process.Pid)
	if !ok {
		t.Fatal("no start time for a child")
	}
	return cmd.Process.Pid, start, func() { cmd.Process.Kill(); cmd.Wait() }
}

func testGrant() api.Grant {
	return api.Grant{Lease: "lease-1", Attempt: "attempt-1", NodeID: "node-1", Services: []string{},
		Uses: api.Uses{Services: []api.UsedService{}, Probes: []api.UsedProbe{}}}
}
