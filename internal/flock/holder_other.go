//go:build !linux

package flock

// Holder is not known on this OS.
func Holder(string) (int, bool) { return 0, false }
