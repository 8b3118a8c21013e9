package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oarbank/svcrun/engine"
)

// skipUnless skips the test for a missing kernel feature or privilege, or
// fails it when REQUIRE_KERNEL_FEATURES=1.
func skipUnless(t *testing.T, ok bool, why string) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("REQUIRE_KERNEL_FEATURES") == "1" {
		t.Fatalf("REQUIRE_KERNEL_FEATURES=1: %s", why)
	}
	t.Skip(why)
}

// TestFullFilesystem: on a real file system that fills up (a 1 MiB tmpfs),
// the checkpoint finds no space: the store becomes full, not failed, says
// so with the data dir and the reason, keeps what it stored and takes
// batches into the log's reserve, and works again once space is freed.
func TestFullFilesystem(t *testing.T) {
	skipUnless(t, os.Geteuid() == 0, "mounting a tmpfs needs root")
	dir := t.TempDir()
	err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m")
	skipUnless(t, err == nil, "mount a tmpfs: "+errString(err))
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })

	path := filepath.Join(dir, "state.db")
	var notes []error
	db, err := Open(path, Options{LogBytes: 16 * logBlock, OnFull: func(err error) { notes = append(notes, err) }})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	filler := filepath.Join(dir, "filler")
	fill(t, filler)

	big := func(i int) engine.Effect {
		l := lease(string(leaseN(i)))
		l.Job = strings.Repeat("j", 1500)
		return engine.PutLease{Lease: l}
	}
	n := 0
	for ; db.Writable() == nil; n++ {
		if n == 2000 {
			t.Fatal("2000 batches stored on a full file system and the store never said it was full")
		}
		apply(t, db, big(n))
	}
	t.Logf("full after %d batches", n)
	werr := db.Writable()
	if !errors.Is(werr, ErrFull) || !errors.Is(werr, syscall.ENOSPC) ||
		werr.Error() != "the data dir is full: "+dir+": no space left on device" {
		t.Fatalf("Writable = %v", werr)
	}
	if len(notes) != 1 || !errors.Is(notes[0], ErrFull) {
		t.Fatalf("OnFull got %v", notes)
	}
	// What can't wait (a release, an expiry) still goes into the reserve.
	apply(t, db, engine.DeleteLease{Lease: leaseN(0)})
	if st := state(t, db); len(st.Leases) != n-1 {
		t.Fatalf("while full: %d leases, want %d", len(st.Leases), n-1)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	db.mu.Lock()
	db.retryAt = time.Time{} // the backoff has passed
	db.mu.Unlock()
	if err := db.Writable(); err != nil {
		t.Fatalf("Writable once space is freed: %v", err)
	}
	if len(notes) != 2 || notes[1] != nil {
		t.Fatalf("OnFull got %v, want a recovery", notes)
	}
	for i := n; i < n+20; i++ {
		apply(t, db, big(i))
	}
	crash(t, db)
	db = openT(t, path)
	if st := state(t, db); len(st.Leases) != n+19 {
		t.Fatalf("after a crash: %d leases, want %d", len(st.Leases), n+19)
	}
}

// fill writes path until the file system has no space left.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
