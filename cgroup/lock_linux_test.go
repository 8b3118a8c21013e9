package cgroup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// testNodeID is a node id of its own for one test, so a base of its own.
func testNodeID() string { return fmt.Sprintf("locktest-%d-%d", os.Getpid(), time.Now().UnixNano()) }

// inUseMessage is the refusal of a second Manager on the base of node id,
// held by pid with dataDir; the data dir is named where cgroupfs keeps
// user xattrs (Linux 5.7 and later).
func inUseMessage(node, base string, pid int, dataDir string) string {
	holder := fmt.Sprintf("pid %d", pid)
	if _, err := unix.Getxattr(base, xattrOwner, nil); err == nil {
		holder += ", data dir " + dataDir
	}
	return fmt.Sprintf("the process containers of node_id %s (%s) are in use by another svcrun (%s): "+
		"give this svcrun its own node_id", node, base, holder)
}

// TestSecondManagerOfANodeRefused: a second Manager with the same node id
// (another svcrun with another data dir) is refused with a message naming
// the holder, touches nothing of the first one's containers, and gets the
// base once the first one is closed.
func TestSecondManagerOfANodeRefused(t *testing.T) {
	node := testNodeID()
	first := newManagerWith(t, Options{NodeID: node, DataDir: "/var/lib/svcrun-one"})
	spawn(t, first, "mod/svc", "true") // an empty container, which a second Manager would replace
	dir, _ := first.Path("mod/svc")
	var before unix.Stat_t
	if err := unix.Stat(dir, &before); err != nil {
		t.Fatal(err)
	}

	second := New(Options{NodeID: node, DataDir: "/var/lib/svcrun-two"})
	defer second.Close()
	err := second.Err()
	if !errors.Is(err, ErrInUse) {
		t.Fatalf("second Manager: Err() = %v, want ErrInUse", err)
	}
	if want := inUseMessage(node, first.Base(), os.Getpid(), "/var/lib/svcrun-one"); err.Error() != want {
		t.Errorf("refusal\n%q, want\n%q", err, want)
	}
	t.Log(err)
	if second.Support().Available() {
		t.Errorf("the refused Manager reports containers available: %+v", second.Support())
	}
	if _, err := second.OpStart("mod/svc"); !errors.Is(err, ErrInUse) {
		t.Errorf("OpStart of the refused Manager: %v", err)
	}
	var after unix.Stat_t
	if err := unix.Stat(dir, &after); err != nil || after.Ino != before.Ino {
		t.Errorf("the first Manager's container %s was replaced (%v)", dir, err)
	}
	if out := spawn(t, first, "mod/svc", "echo ok"); out != "ok\n" {
		t.Errorf("an op of the first Manager after the refusal: %q", out)
	}

	first.Close()
	third := New(Options{NodeID: node})
	defer third.Close()
	if err := third.Err(); err != nil {
		t.Fatalf("after the holder closed: %v", err)
	}
}

// TestBaseLockGoesWithAKilledHolder: the holder, another process, is
// named by its pid and data dir; killed with SIGKILL, it leaves no lock
// behind, not even through the daemon its op left in a container.
func TestBaseLockGoesWithAKilledHolder(t *testing.T) {
	node := testNodeID()
	probe := newManagerWith(t, Options{NodeID: node}) // skips without cgroups, removes the base at the end
	probe.Close()
	daemonDir, _ := probe.Path("mod/daemon")
	t.Cleanup(func() { // before the base goes, should the test fail early
		os.WriteFile(filepath.Join(daemonDir, fileKill), []byte("1"), 0)
		eventually(t, "the helper's container empties", func() bool {
			data, err := os.ReadFile(filepath.Join(daemonDir, fileProcs))
			return err != nil || len(data) == 0
		})
		unix.Rmdir(daemonDir)
		unix.Rmdir(filepath.Dir(daemonDir))
	})

	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "CGROUP_HELPER_NODE="+node, "CGROUP_HELPER_DATA=/var/lib/svcrun-holder")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	var daemon int
	if _, serr := fmt.Sscanf(line, "locked %d\n", &daemon); err != nil || serr != nil {
		t.Fatalf("helper said %q (%v)", line, err)
	}
	t.Cleanup(func() { syscall.Kill(daemon, syscall.SIGKILL) })

	refused := New(Options{NodeID: node})
	err = refused.Err()
	refused.Close()
	want := inUseMessage(node, probe.Base(), cmd.Process.Pid, "/var/lib/svcrun-holder")
	if !errors.Is(err, ErrInUse) || err.Error() != want {
		t.Fatalf("while the helper holds the base: %v, want %q", err, want)
	}

	cmd.Process.Kill()
	cmd.Wait()
	m := New(Options{NodeID: node})
	defer m.Close()
	if err := m.Err(); err != nil {
		t.Fatalf("after kill -9 of the holder (its daemon %d lives): %v", daemon, err)
	}
	// The daemon is adopted, and ended.
	if err := m.Kill("mod/daemon", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := m.Remove("mod/daemon"); err != nil {
		t.Fatal(err)
	}
}

// TestHelperProcess is the holder of TestBaseLockGoesWithAKilledHolder, not
// a test: it takes the base, leaves a daemon in a container, and waits.
func TestHelperProcess(t *testing.T) {
	node := os.Getenv("CGROUP_HELPER_NODE")
	if node == "" {
		return
	}
	m := New(Options{NodeID: node, DataDir: os.Getenv("CGROUP_HELPER_DATA")})
	if err := m.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(2)
	}
	fd, err := m.OpStart("mod/daemon")
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(2)
	}
	cmd := exec.Command("/bin/sh", "-c", "sleep 1000 </dev/null >/dev/null 2>&1 & echo $!")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd, Setpgid: true}
	out, err := cmd.Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(2)
	}
	m.OpEnd("mod/daemon")
	fmt.Printf("locked %s", out)
	bufio.NewReader(os.Stdin).ReadString('\n') // until the test ends or kills it
	os.Exit(0)
}

// TestRecoverRemovedContainer: a container removed under a service, before
// its op's OpStart (which says ErrRemoved) or after it (the clone fails
// with ENOENT, as if the executable were missing), is recovered: Recover
// re-creates the container with a WARN naming it, and the op runs in the
// new one. An intact container is left alone, and so is one re-created
// already (by another op's Recover).
func TestRecoverRemovedContainer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		remove func(t *testing.T, dir string)
	}{
		{"container removed", func(t *testing.T, dir string) { rmdir(t, dir) }},
		{"module removed too", func(t *testing.T, dir string) { rmdir(t, dir); rmdir(t, filepath.Dir(dir)) }},
		{"replaced by another", func(t *testing.T, dir string) {
			rmdir(t, dir)
			if err := unix.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		for _, after := range []bool{false, true} {
			name := tc.name + ", before OpStart"
			if after {
				name = tc.name + ", after OpStart"
			}
			t.Run(name, func(t *testing.T) {
				var logged bytes.Buffer
				name := fmt.Sprintf("svcrun-test-%d-%d", os.Getpid(), time.Now().UnixNano())
				m := newManagerWith(t, Options{Name: name, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
				const svc = "mod/lost"
				if _, err := m.Limits(svc, 0, 64); err != nil {
					t.Fatal(err)
				}
				spawn(t, m, svc, "true")
				held, _ := m.Create(svc)
				defer unix.Close(held)
				if fd, err := m.Recover(svc); !sameFile(t, fd, held) || err != nil || logged.Len() != 0 {
					t.Fatalf("Recover of an intact container: %d, %v, want the directory of %d; logged %q", fd, err, held, &logged)
				} else {
					unix.Close(fd)
				}
				dir, _ := m.Path(svc)
				if !after {
					tc.remove(t, dir)
				}
				fd, err := m.OpStart(svc)
				if after && err != nil || !after && !errors.Is(err, ErrRemoved) {
					t.Fatalf("OpStart: %d, %v", fd, err)
				}
				defer m.OpEnd(svc)
				if after {
					tc.remove(t, dir)
					if _, err := clone(fd, "true"); !errors.Is(err, syscall.ENOENT) {
						t.Fatalf("clone into the removed container: %v, want ENOENT", err)
					}
					unix.Close(fd)
				}
				fd, err = m.Recover(svc)
				if err != nil || fd < 0 {
					t.Fatalf("Recover: %d, %v", fd, err)
				}
				defer unix.Close(fd)
				out, err := clone(fd, "cat /proc/self/cgroup")
				if err != nil {
					t.Fatal(err)
				}
				if want := "0::" + strings.TrimPrefix(dir, m.Support().Mount) + "\n"; !strings.Contains(out, want) {
					t.Errorf("the op ran in %q, want %q", out, want)
				}
				if st, _ := m.Status(svc); st.Ops != 1 {
					t.Errorf("the op is not counted in the new container: %+v", st)
				}
				if m.Support().Pids.OK {
					if data, _ := os.ReadFile(filepath.Join(dir, filePidsMax)); strings.TrimSpace(string(data)) != "64" {
						t.Errorf("pids.max of the new container %q, want 64", data)
					}
				}
				want := fmt.Sprintf(
					"the process container %s of %s was removed (by another svcrun with the same node_id?): re-created", dir, svc)
				if n := strings.Count(logged.String(), "level=WARN"); n != 1 || !strings.Contains(logged.String(), want) {
					t.Errorf("%d WARN, want one with %q:\n%s", n, want, &logged)
				}
				if again, err := m.Recover(svc); !sameFile(t, again, fd) || err != nil {
					t.Errorf("Recover of the re-created container: %d, %v, want the directory of %d", again, err, fd)
				} else {
					unix.Close(again)
				}
				if n := strings.Count(logged.String(), "level=WARN"); n != 1 {
					t.Errorf("%d WARN after a second Recover", n)
				}
			})
		}
	}
}

// sameFile says whether descriptors a and b are of the same file.
func sameFile(t *testing.T, a, b int) bool {
	t.Helper()
	var sa, sb unix.Stat_t
	if a < 0 || b < 0 || unix.Fstat(a, &sa) != nil || unix.Fstat(b, &sb) != nil {
		return false
	}
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino
}

func rmdir(t *testing.T, dir string) {
	t.Helper()
	if err := unix.Rmdir(dir); err != nil {
		t.Fatal(err)
	}
}

// clone runs sh -c script cloned into the cgroup fd.
func clone(fd int, script string) (string, error) {
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	out, err := cmd.Output()
	return string(out), err
}
