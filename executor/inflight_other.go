//go:build !linux

package executor

import (
	"context"
	"errors"
	"time"
)

// Without /proc start times and pidfds a recorded pid could be another
// process's by the next start: ops are not recorded here.

var errNoIdentity = errors.New("process identity (start times, pidfds) needs Linux")

func bootID() (string, error)          { return "", errNoIdentity }
func bootNanos() int64                 { return time.Now().UnixNano() }
func findSpawned(opRecord) []proc      { return nil }
func openProc(proc) (*procWait, error) { return nil, errNoIdentity }

type procWait struct{}

func (*procWait) close() {}

type waitResult int

const (
	waitExited waitResult = iota
	waitTimedOut
	waitCanceled
)

func (*procWait) wait(context.Context, time.Duration) waitResult { return waitExited }
