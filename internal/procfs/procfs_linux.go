package procfs

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// Fields returns the fields of /proc/<pid>/stat after the command name:
// [0] is field 3 (state), [1] the parent, [2] the process group, [19]
// field 22 (the start time). The command name may hold spaces and
// parentheses: the fields begin after its last ")".
func Fields(pid int) ([][]byte, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return nil, false
	}
	f := bytes.Fields(data[i+1:])
	return f, len(f) >= 20 && len(f[0]) == 1
}

// StartTicks is pid's start time since boot in USER_HZ ticks (field 22).
func StartTicks(pid int) (uint64, bool) {
	f, ok := Fields(pid)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseUint(string(f[19]), 10, 64)
	return v, err == nil
}

// Cgroup is pid's cgroup v2 path ("/a/b", relative to the cgroup2 mount),
// or "" when it has none or is gone.
func Cgroup(pid int) string {
	data, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	for line := range strings.SplitSeq(string(data), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p
		}
	}
	return ""
}
