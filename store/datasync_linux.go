package store

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// datasync makes f's data durable: fdatasync, which skips the metadata a
// record overwriting allocated blocks does not change. EINTR (possible on
// network and FUSE file systems) is retried, as os.File.Sync does.
func datasync(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
