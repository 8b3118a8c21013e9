package executor

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestSubreaperWhenAsked: an executor given Config.Subreaper makes its
// process the child subreaper, with cgroup containers as in process
// groups; without it, it does not. Each case runs in a process of its own
// (this test binary without its reaper), as the prctl holds for the whole
// process.
func TestSubreaperWhenAsked(t *testing.T) {
	if mode := os.Getenv("EXECUTOR_SUBREAPER_CASE"); mode != "" {
		subreaperCase(t, mode)
		return
	}
	tests := []struct {
		mode string
		want string // PR_GET_CHILD_SUBREAPER
	}{
		{"process-group", "1"},
		{"process-group-not-serve", "0"},
		{"cgroup", "1"},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			if tt.mode == "cgroup" {
				newContainers(t) // skips (or fails) where containers do not work
			}
			out := filepath.Join(t.TempDir(), "subreaper")
			cmd := exec.Command(os.Args[0], "-test.run=^TestSubreaperWhenAsked$", "-test.v")
			cmd.Env = append(
				os.Environ(), "EXECUTOR_NO_REAPER=1", "EXECUTOR_SUBREAPER_CASE="+tt.mode, "EXECUTOR_SUBREAPER_OUT="+out)
			// Started as every child of a subreaper must be, or a start
			// op's reaping of dead orphans could take its exit status.
			var b bytes.Buffer
			cmd.Stdout, cmd.Stderr = &b, &b
			err := RunCmd(cmd)
			if err != nil {
				t.Fatalf("%v\n%s", err, b.String())
			}
			got, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("child subreaper %s, want %s", got, tt.want)
			}
		})
	}
}

// subreaperCase builds the executor of mode, runs a start op (whose daemon
// it then kills) and records whether the process is the child subreaper.
func subreaperCase(t *testing.T, mode string) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var a *adapterFixture
	switch mode {
	case "process-group":
		a = newAdapterIn(t, root, nil, nil, func(c *Config) { c.Subreaper = true })
	case "process-group-not-serve":
		a = newAdapterIn(t, root, nil, nil)
	case "cgroup":
		a = newAdapterIn(t, root, newContainers(t), nil, func(c *Config) { c.Subreaper = true })
	}
	if o := a.run(t, 1, "daemon", false, "start"); o.Failure != "" {
		t.Fatalf("start: %+v", o)
	}
	unix.Kill(a.pid(t, "daemon.pid"), unix.SIGKILL)
	var is int32
	if err := unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&is)), 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(os.Getenv("EXECUTOR_SUBREAPER_OUT"), []byte{byte('0' + is)}, 0o644); err != nil {
		t.Fatal(err)
	}
}
