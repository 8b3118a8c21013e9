//go:build !unix

package module

import (
	"errors"
	"fmt"
	"syscall"
)

// Daemons are unix processes here: sessions, signals and pids as svcrun's
// Linux and macOS nodes know them.
var errUnsupported = fmt.Errorf("module: daemons: %w on this platform", errors.ErrUnsupported)

func detached(*Credential) (*syscall.SysProcAttr, error) { return nil, errUnsupported }
func alive(int) bool                                     { return false }
func terminate(int) error                                { return errUnsupported }
func kill(int) error                                     { return errUnsupported }
