//go:build !linux

package main

import (
	"net"
	"time"
)

// svcrunAt says whether a svcrun answers on socket; its pid is not known
// here (0).
func svcrunAt(socket string) (pid int, running bool) {
	conn, err := net.DialTimeout("unix", socket, 5*time.Second)
	if err != nil {
		return 0, false
	}
	conn.Close()
	return 0, true
}
