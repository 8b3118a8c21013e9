package main

import "golang.org/x/sys/unix"

// monotonicUsec is CLOCK_MONOTONIC in microseconds, systemd's clock for
// MONOTONIC_USEC.
func monotonicUsec() (int64, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, false
	}
	return ts.Nano() / 1000, true
}
