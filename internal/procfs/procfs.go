// Package procfs reads what /proc tells of a process: from
// /proc/<pid>/stat its state, parent, process group and start time, which
// with the pid names one process for good (a pid is reused, a pid and its
// start time are not), and from /proc/<pid>/cgroup its cgroup v2. Linux
// only; elsewhere every read says no.
package procfs
