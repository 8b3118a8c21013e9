//go:build unix

package clockwork

import (
	"syscall"
	"time"
)

// cpuTime returns the user+system CPU time of the process, so benchmarks
// can report a cost that does not grow when the machine is shared.
func cpuTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
