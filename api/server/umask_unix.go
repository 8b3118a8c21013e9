//go:build unix

package server

import "syscall"

// withUmask runs fn with the process's umask set to mask. The umask is
// process-wide: keep fn to the one system call that creates the file.
func withUmask(mask int, fn func() error) error {
	old := syscall.Umask(mask)
	defer syscall.Umask(old)
	return fn()
}
