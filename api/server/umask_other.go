//go:build !unix

package server

// withUmask runs fn: there is no umask here (Windows); the socket file
// inherits its directory's ACL.
func withUmask(_ int, fn func() error) error { return fn() }
