package api

import (
	"errors"
	"net"

	"golang.org/x/sys/unix"
)

// peerOf reads SO_PEERCRED: the credentials of the process that connected,
// as they were at connect(2).
func peerOf(c net.Conn) peer {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return peer{err: errors.New("not a unix socket connection")}
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return peer{err: err}
	}
	var cred *unix.Ucred
	var gerr error
	if err := raw.Control(func(fd uintptr) {
		cred, gerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return peer{err: err}
	}
	if gerr != nil {
		return peer{err: gerr}
	}
	return peerFromUcred(cred)
}

func peerFromUcred(c *unix.Ucred) peer {
	return peer{known: true, uid: int(c.Uid), pid: int(c.Pid)}
}
