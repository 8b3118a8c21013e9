package main

import (
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// svcrunAt says whether a svcrun answers on socket, with its pid (from
// SO_PEERCRED; 0 when unknown).
func svcrunAt(socket string) (pid int, running bool) {
	conn, err := net.DialTimeout("unix", socket, 5*time.Second)
	if err != nil {
		return 0, false
	}
	defer conn.Close()
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return 0, true
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0, true
	}
	raw.Control(func(fd uintptr) {
		if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
			pid = int(cred.Pid)
		}
	})
	return pid, true
}
