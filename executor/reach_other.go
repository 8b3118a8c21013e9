//go:build !unix

package executor

import "syscall"

// whyDenied has no users to tell apart here.
func whyDenied(*syscall.SysProcAttr, string, string) string { return "" }
