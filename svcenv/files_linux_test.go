package svcenv

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/oarbank/svcrun/internal/testhost"
	"golang.org/x/sys/unix"
)

// TestUnchangedFilesNeedNoWrite prepares a module data dir on a tmpfs that
// then fails every write (full, or read-only): Prepare and WriteFiles with
// what is already there succeed, since an op needs no write that changes
// nothing; a changed settings file fails with the file system's errno.
func TestUnchangedFilesNeedNoWrite(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fail  func(t *testing.T, mnt string) // makes every write fail
		errno syscall.Errno
	}{
		{"full", func(t *testing.T, mnt string) { testhost.FillDisk(t, filepath.Join(mnt, "filler")) }, syscall.ENOSPC},
		{"read-only", func(t *testing.T, mnt string) {
			if err := unix.Mount("", mnt, "", unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
				t.Fatalf("remount %s read-only: %v", mnt, err)
			}
		}, syscall.EROFS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mnt := t.TempDir()
			testhost.Tmpfs(t, mnt, "1m")
			l, err := Paths(HostPlatform(), filepath.Join(mnt, "modules", "mod"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(filepath.Dir(l.ModuleData), 0o711); err != nil {
				t.Fatal(err)
			}
			files := Files{Settings: map[string]any{"port": 8080.0}, Tools: map[string]string{"sh": "/bin/sh"}}
			if err := Prepare(l, nil); err != nil {
				t.Fatal(err)
			}
			if err := WriteFiles(l, nil, files); err != nil {
				t.Fatal(err)
			}
			tc.fail(t, mnt)

			if err := Prepare(l, nil); err != nil {
				t.Errorf("Prepare of an unchanged data dir: %v", err)
			}
			if err := WriteFiles(l, nil, files); err != nil {
				t.Errorf("WriteFiles of unchanged files: %v", err)
			}
			files.Settings = map[string]any{"port": 8081.0}
			if err := WriteFiles(l, nil, files); !errors.Is(err, tc.errno) {
				t.Errorf("WriteFiles of a changed settings file: %v, want %v", err, tc.errno)
			}
		})
	}
}
