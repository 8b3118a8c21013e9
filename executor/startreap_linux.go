package executor

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// reapBeforeStart reaps the dead orphans of svcrun where it is the child
// subreaper, before a start op is spawned. A daemon that died is svcrun's
// zombie until reaped, and its container empties (ContainerEmptied, then
// the retry's start) before that: a start that asks whether the daemon of
// its pid file still runs (kill -0) would take the zombie for it, answer
// "already running" and leave the service down until start_timeout_s.
// Without a subreaper the orphans are init's, and nothing of svcrun's holds
// them.
func reapBeforeStart() {
	var on int32
	if unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&on)), 0, 0, 0) != nil || on == 0 {
		return
	}
	ReapOrphans()
}
