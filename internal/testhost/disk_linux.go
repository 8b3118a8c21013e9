package testhost

import (
	"errors"
	"os"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// SkipOrFail skips the test for why, or fails it where the CI asks for
// every kernel feature (REQUIRE_KERNEL_FEATURES=1).
func SkipOrFail(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("REQUIRE_KERNEL_FEATURES") == "1" {
		t.Fatal("REQUIRE_KERNEL_FEATURES=1: " + why)
	}
	t.Skip(why)
}

// Tmpfs mounts a tmpfs of size (as mount's size=, "1m") on dir, making dir
// if it is missing, and unmounts it when the test ends: a data dir that
// fills up. Cleanups run last first, so one registered before Tmpfs (that
// reads a file in dir) still finds the mount.
func Tmpfs(t testing.TB, dir, size string) {
	t.Helper()
	if os.Geteuid() != 0 {
		SkipOrFail(t, "mounting a tmpfs needs root")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		SkipOrFail(t, "mount a tmpfs: "+err.Error())
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
}

// FillDisk writes file until its file system has no space left.
func FillDisk(t testing.TB, file string) {
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
