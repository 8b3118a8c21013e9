package conformance

import (
	"bytes"
	"os"
	"strconv"
)

// procInfo reads the parent, the process group and the command name of
// pid from /proc.
func procInfo(pid int) (ppid, pgid int, name string, ok bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, "", false
	}
	// "pid (comm) S ppid ...": comm may hold spaces and parentheses.
	open, end := bytes.IndexByte(data, '('), bytes.LastIndexByte(data, ')')
	if open < 0 || end < open {
		return 0, 0, "", false
	}
	// After the comm: state, ppid, pgrp.
	f := bytes.Fields(data[end+1:])
	if len(f) < 3 {
		return 0, 0, "", false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgid, err2 := strconv.Atoi(string(f[2]))
	return ppid, pgid, string(data[open+1 : end]), err1 == nil && err2 == nil
}
