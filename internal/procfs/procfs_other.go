//go:build !linux

package procfs

// Fields says no: there is no /proc/<pid>/stat here.
func Fields(int) ([][]byte, bool) { return nil, false }

// StartTicks says no: there is no /proc/<pid>/stat here.
func StartTicks(int) (uint64, bool) { return 0, false }

// Cgroup says none: there is no /proc/<pid>/cgroup here.
func Cgroup(int) string { return "" }
