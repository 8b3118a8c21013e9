//go:build !unix

package desloop

import "time"

// CPU is not read on this platform: ok is false.
func CPU() (d time.Duration, ok bool) { return 0, false }
