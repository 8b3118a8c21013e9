package main

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oarbank/svcrun/internal/cli"
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

// TestDeadAnnouncementSkipped: a bare command takes the announced socket
// only when a svcrun of this user answers on it; an announcement left by a
// svcrun that died (its socket gone, or there and refusing connections) or
// naming another user's socket is skipped, with the reason on stderr.
func TestDeadAnnouncementSkipped(t *testing.T) {
	if _, err := os.Stat(DefaultSocket); err == nil {
		t.Skip(DefaultSocket + " exists: a bare command takes it before any announcement")
	}
	dir, err := os.MkdirTemp("", "ann")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvRuntimeDir, dir)
	t.Setenv(EnvSocket, "")
	listen := func(name string) (string, *net.UnixListener) {
		p := filepath.Join(dir, name)
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: p, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return p, l
	}
	live, _ := listen("live.sock")
	dead, deadL := listen("dead.sock")
	deadL.SetUnlinkOnClose(false) // as a svcrun killed with SIGKILL leaves it
	deadL.Close()
	other, _ := listen("other.sock")
	otherOwned := os.Geteuid() == 0 && os.Chown(other, 4242, 4242) == nil
	for _, tc := range []struct {
		name, announced, want, says string
		skip                        bool
	}{
		{"live", live, live, "using " + live, false},
		{"socket gone", filepath.Join(dir, "gone.sock"), DefaultSocket, "it is gone", false},
		{"nothing answers", dead, DefaultSocket, "nothing answers on it", false},
		{"another user's", other, DefaultSocket, "belongs to uid 4242", !otherOwned},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.skip {
				t.Skip("giving a socket to another user needs root")
			}
			if _, err := announce(tc.announced); err != nil {
				t.Fatal(err)
			}
			var stderr strings.Builder
			env := &cli.Env{Stdout: io.Discard, Stderr: &stderr}
			f := addSocketFlags(env, env.FlagSet("x", ""))
			got, err := f.path()
			if err != nil || got != tc.want || !strings.Contains(stderr.String(), tc.says) {
				t.Errorf("announced %s: took %q (%v), want %q, saying %q; stderr: %s",
					tc.announced, got, err, tc.want, tc.says, stderr.String())
			}
		})
	}
}
