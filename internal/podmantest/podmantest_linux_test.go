package podmantest

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oarbank/svcrun/internal/podman"
)

// TestContainersRemovedAtCleanup checks that a test's containers (its
// labels) are gone when it ends, and only they.
func TestContainersRemovedAtCleanup(t *testing.T) {
	rt := Start(t)
	image := TestImage(t, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	other, err := rt.Client.Create(ctx, rt.Spec(podman.Spec{Image: image, Command: []string{ImageBinary, "exit", "0"}}))
	if err != nil {
		t.Fatal(err)
	}
	var inner map[string]string
	t.Run("inner", func(t *testing.T) {
		irt := Start(t)
		inner = irt.Labels
		if irt.Socket != rt.Socket {
			t.Errorf("a second service: %s, the first %s", irt.Socket, rt.Socket)
		}
		for _, args := range [][]string{{"sleep", "3600"}, {"exit", "0"}} {
			id, err := irt.Client.Create(ctx,
				irt.Spec(podman.Spec{Image: image, Command: append([]string{ImageBinary}, args...)}))
			if err != nil {
				t.Fatal(err)
			}
			if err := irt.Client.Start(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
	})
	if cs, err := rt.Client.List(ctx, inner); err != nil || len(cs) != 0 {
		t.Errorf("the inner test's containers after it ended: %+v, %v", cs, err)
	}
	if _, err := rt.Client.Inspect(ctx, other); err != nil {
		t.Errorf("this test's container: %v", err)
	}
}

func TestCycle(t *testing.T) {
	rt := Start(t)
	image := TestImage(t, rt)
	if !strings.HasPrefix(image, ImageName+":") {
		t.Errorf("image %s", image)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := Cycle(ctx, rt.Client, image, rt.Labels); err != nil {
		t.Fatal(err)
	}
	if cs, err := rt.Client.List(ctx, rt.Labels); err != nil || len(cs) != 0 {
		t.Errorf("after a cycle: %+v, %v", cs, err)
	}
}

// TestConfigStaysInItsDir checks that the configuration written names no
// path outside the service's directory: the host's podman state is not
// touched.
func TestConfigStaysInItsDir(t *testing.T) {
	dir := t.TempDir()
	cfg := config{runtime: "runc", driver: "overlay", nofile: 1024, nproc: 512}
	if err := cfg.write(dir, filepath.Join(dir, "runroot")); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"containers.conf", "storage.conf"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if i := strings.Index(line, `"/`); i >= 0 && !strings.Contains(line, `"`+dir+"/") {
				t.Errorf("%s names a path outside %s: %s", f, dir, line)
			}
		}
		if f == "containers.conf" &&
			(!strings.Contains(string(b), `"nofile=1024:1024", "nproc=512:512"`) ||
				!strings.Contains(string(b), `lock_type = "file"`)) {
			t.Errorf("%s:\n%s", f, b)
		}
	}
}

// TestHostBlobCacheHidden checks that the service sees a tmpfs of its own
// where podman keeps root's system blob cache, so that its imports leave
// the host's cache as it was.
func TestHostBlobCacheHidden(t *testing.T) {
	rt := Start(t)
	TestImage(t, rt) // an import: the cache is written
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(rt.svc.cmd.Process.Pid), "mountinfo"))
	if err != nil {
		t.Fatal(err)
	}
	at := cacheMountpoint()
	for _, line := range strings.Split(string(b), "\n") {
		// mount id, parent, dev, root, mount point, options, ... - fs type
		f := strings.Fields(line)
		if len(f) > 4 && f[4] == at {
			if _, rest, ok := strings.Cut(line, " - "); ok && strings.HasPrefix(rest, "tmpfs ") {
				return
			}
		}
	}
	t.Errorf("no tmpfs at %s in the service's mounts:\n%s", at, b)
}

// TestRunRootShort checks that the run root stays within podman 4.3's 50
// characters whatever the temporary directory's length, in dir where dir
// is short.
func TestRunRootShort(t *testing.T) {
	short, err := os.MkdirTemp("/tmp", "rr")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(short)
	for _, tc := range []struct {
		name, dir string
		inDir     bool
	}{
		{"short", short, true},
		{"long", filepath.Join(t.TempDir(), strings.Repeat("d", maxRunRoot)), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.MkdirAll(tc.dir, 0o700); err != nil {
				t.Fatal(err)
			}
			r, err := runRoot(tc.dir)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.inDir {
				defer os.RemoveAll(r)
			}
			if fi, err := os.Stat(r); err != nil || !fi.IsDir() {
				t.Errorf("run root %s: %v", r, err)
			}
			if len(r) > maxRunRoot || strings.HasPrefix(r, tc.dir+"/") != tc.inDir {
				t.Errorf("run root %s (%d characters) for %s: want at most %d, under it: %v", r, len(r), tc.dir, maxRunRoot,
					tc.inDir)
			}
		})
	}
}

// TestLongTempDirCleanup runs a service whose directory is long (as under
// svcrun's tests' TMPDIR): its containers' cleanup must still run, so that
// a wait answers once the container has exited, not after podman's 20 s
// allowance for a dead conmon with the container left "stopped".
func TestLongTempDirCleanup(t *testing.T) {
	long := t.TempDir()
	if len(filepath.Join(long, "podmantest-1234567890", "runroot")) <= maxRunRoot {
		t.Fatalf("%s is too short to test a long one", long)
	}
	t.Setenv("TMPDIR", long)
	svc := ownService(t, false)
	rt := newRuntime(t, svc)
	image := TestImage(t, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id, err := rt.Client.Create(ctx, rt.Spec(podman.Spec{Image: image, Command: []string{ImageBinary, "exit", "0"}}))
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Client.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Client.Wait(ctx, id); err != nil {
		t.Fatal(err)
	}
	c, err := rt.Client.Inspect(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if c.State != "exited" {
		t.Errorf("after wait, the container is %q, not exited: its cleanup did not run (run root %s)", c.State, svc.runRoot)
	}
}

// TestStopEndsWhatOutlivesTheService stops a service while a process of
// its mount namespace (as a container's conmon and exit command are)
// writes its storage: stop must end that process before it removes the
// directory, or the removal fails with "directory not empty".
func TestStopEndsWhatOutlivesTheService(t *testing.T) {
	if _, err := exec.LookPath("nsenter"); err != nil {
		t.Skip("nsenter is not installed (apt-get install util-linux)")
	}
	svc := startOrSkip(t, false)
	storage := filepath.Join(svc.dir, "root", "overlay", "leftover")
	w := exec.Command("nsenter", "-t", strconv.Itoa(svc.cmd.Process.Pid), "-m", "--",
		"/bin/sh", "-c", `echo in; while :; do mkdir -p "$1" && rmdir "$1"; done`, "sh", storage)
	out, err := w.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	w.Stderr = os.Stderr
	if err := w.Start(); err != nil {
		svc.stop()
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- w.Wait() }()
	// Its first line says it runs in the namespace.
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "in\n" {
		svc.stop()
		t.Fatalf("the writer in the service's namespace did not start: %q, %v, %v", line, err, <-waited)
	}
	if err := svc.stop(); err != nil {
		t.Error(err)
	}
	if left := svc.inNamespace(); len(left) != 0 {
		t.Errorf("processes %v still run in the service's namespace after stop", left)
		w.Process.Kill()
	}
	<-waited
	if _, err := os.Stat(svc.dir); !os.IsNotExist(err) {
		t.Errorf("the service's directory after stop: %v", err)
	}
}
