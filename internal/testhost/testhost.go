// Package testhost gives tests host state of their own, so that no test
// leans on the machine it runs on: a node id that no other test, test
// process, checkout or user's svcrun has (svcrun names and locks its base
// cgroup after the node id), the removal of exactly the cgroups a test's
// svcrun left, and an unprivileged user for run_as that the tests create
// rather than borrow from the image. Only tests import it.
package testhost

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
)

var seq atomic.Int64

// NodeID is a node id for one svcrun of a test: prefix, the test
// process's pid, a sequence number within the process, and random bits,
// since a pid is reused (a base cgroup a killed test process left under
// the same pid would otherwise be adopted) and pid namespaces may share a
// cgroup tree.
func NodeID(prefix string) string {
	b := make([]byte, 3)
	rand.Read(b)
	return fmt.Sprintf("%s-%d-%d-%s", prefix, os.Getpid(), seq.Add(1), hex.EncodeToString(b))
}

// Reachable returns a copy of the directory src (a bundle of the
// checkout) that run_as can read and run: in a fresh temporary directory
// whose parents up to the temporary root are searchable by everyone, its
// files readable and its directories and executables searchable. The
// checkout itself may lie where run_as cannot search (a clone in a
// `mktemp -d` directory or in root's home, both 0700), and an op that
// cannot reach its bundle fails to spawn.
func Reachable(t testing.TB, src string) string {
	t.Helper()
	abs, err := filepath.Abs(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(SearchableDir(t), filepath.Base(abs))
	CopyReadable(t, abs, dst)
	return dst
}

// CopyReadable copies the directory src to dst (its parents made as
// needed), every file of it readable by everyone and every directory and
// executable searchable.
func CopyReadable(t testing.TB, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range [][]string{{"cp", "-r", src, dst}, {"chmod", "-R", "a+rX", dst}} {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("testhost: %v: %v\n%s", c, err, out)
		}
	}
}

// SearchableDir is t.TempDir, symbolic links resolved, made searchable
// by every user with its parents up to the temporary root (t.TempDir's
// directories are 0700): for what an op of run_as must reach.
func SearchableDir(t testing.TB) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tmp, err := filepath.EvalSymlinks(os.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for d := root; d != tmp && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root
}
