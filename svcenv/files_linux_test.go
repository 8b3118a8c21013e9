package svcenv

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

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
		{"full", func(t *testing.T, mnt string) { fillUp(t, filepath.Join(mnt, "filler")) }, syscall.ENOSPC},
		{"read-only", func(t *testing.T, mnt string) {
			if err := unix.Mount("", mnt, "", unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
				t.Fatalf("remount %s read-only: %v", mnt, err)
			}
		}, syscall.EROFS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mnt := tmpfs(t)
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

// tmpfs mounts a small tmpfs for the test.
func tmpfs(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		skipOrRequire(t, "mounting a tmpfs needs root")
	}
	mnt := t.TempDir()
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"); err != nil {
		skipOrRequire(t, "mount a tmpfs: "+err.Error())
	}
	t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
	return mnt
}

// fillUp writes file until the file system has no space left.
func fillUp(t *testing.T, file string) {
	t.Helper()
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill %s: %v", file, err)
			}
			return
		}
	}
}

func skipOrRequire(t *testing.T, reason string) {
	t.Helper()
	if os.Getenv("REQUIRE_KERNEL_FEATURES") == "1" {
		t.Fatalf("REQUIRE_KERNEL_FEATURES=1: %s", reason)
	}
	t.Skip(reason)
}
