//go:build unix

package svcenv

import (
	"errors"
	"fmt"
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
