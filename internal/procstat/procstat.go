// Package procstat reads a process's /proc/<pid>/stat: its state, parent,
// process group and start time, which with the pid names one process for
// good (a pid is reused, a pid and its start time are not). Linux only;
// elsewhere every read says no.
package procstat
