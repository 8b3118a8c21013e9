//go:build !linux

package store

import "os"

// datasync makes f's data durable (F_FULLFSYNC on macOS, FlushFileBuffers
// on Windows).
func datasync(f *os.File) error { return f.Sync() }
