package conformance

import (
	"bytes"
	"os"
	"strconv"
)

// procInfo reads the parent and the command name of pid from /proc.
func procInfo(pid int) (ppid int, name string, ok bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, "", false
	}
	// "pid (comm) S ppid ...": comm may hold spaces and parentheses.
	open, end := bytes.IndexByte(data, '('), bytes.LastIndexByte(data, ')')
	if open < 0 || end < open {
		return 0, "", false
	}
	f := bytes.Fields(data[end+1:])
	if len(f) < 2 {
		return 0, "", false
	}
	ppid, err = strconv.Atoi(string(f[1]))
	return ppid, string(data[open+1 : end]), err == nil
}
