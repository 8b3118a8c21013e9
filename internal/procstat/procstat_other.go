//go:build !linux

package procstat

// Fields says no: there is no /proc/<pid>/stat here.
func Fields(int) ([][]byte, bool) { return nil, false }

// StartTicks says no: there is no /proc/<pid>/stat here.
func StartTicks(int) (uint64, bool) { return 0, false }
