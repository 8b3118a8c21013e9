package store

import (
	"os"

	"golang.org/x/sys/unix"
)

// datasync makes f's data durable: fdatasync, which skips the metadata a
// record overwriting allocated blocks does not change.
func datasync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }
