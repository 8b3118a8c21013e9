//go:build unix

package svcenv

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// secureDir sets mode 0700 and the owner of the directory d through a
// descriptor opened without following a final symbolic link.
func secureDir(d string, owner *Owner) error {
	f, err := os.OpenFile(d, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_DIRECTORY, 0)
	if err != nil {
		// A final symlink gives ELOOP or (linux checks O_DIRECTORY first)
		// ENOTDIR; Lstat tells which it was, for the message only.
		if errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.ENOTDIR) {
			if fi, lerr := os.Lstat(d); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
				return fmt.Errorf("svcenv: %s is a symbolic link, not a directory; remove it", d)
			}
			return fmt.Errorf("svcenv: %s is not a directory; remove it", d)
		}
		return fmt.Errorf("svcenv: open %s: %w", d, unwrapPath(err))
	}
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return fmt.Errorf("svcenv: stat %s: %w", d, err)
	}
	if st.Mode&0o7777 == 0o700 && ownedBy(&st, owner) {
		return nil
	}
	if err := f.Chmod(0o700); err != nil {
		return fmt.Errorf("svcenv: chmod %s: %w", d, unwrapPath(err))
	}
	if owner != nil {
		if err := f.Chown(owner.UID, owner.GID); err != nil {
			return fmt.Errorf("svcenv: chown %s: %w", d, unwrapPath(err))
		}
	}
	return nil
}

// unchanged says whether path is a regular file (not a symbolic link) that
// holds data with mode 0600 and the owner WriteFiles would give it.
func unchanged(path string, data []byte, owner *Owner) bool {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return false
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Mode&0o7777 != 0o600 || st.Size != int64(len(data)) ||
		!ownedBy(&st, owner) {
		return false
	}
	got := make([]byte, len(data)+1) // one byte more sees a file that grew since
	n, _ := io.ReadFull(f, got)
	return n == len(data) && bytes.Equal(got[:n], data)
}

// ownedBy says whether st belongs to owner, or with no owner to svcrun's
// account (the group of a file svcrun creates is not svcrun's to decide).
func ownedBy(st *syscall.Stat_t, owner *Owner) bool {
	if owner == nil {
		return int(st.Uid) == os.Geteuid()
	}
	return int(st.Uid) == owner.UID && int(st.Gid) == owner.GID
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	if dir == "" {
		dir = "."
	}
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
