//go:build unix

package desloop

import (
	"syscall"
	"time"
)

// CPU is the processor time the process has used so far, user and system,
// as the kernel counts it; ok is false where it cannot be read. On a shared
// machine, rates per CPU second compare two phases of a run that the
// other load slowed unequally.
func CPU() (d time.Duration, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
