package api

import (
	"errors"
	"net"

	"golang.org/x/sys/unix"
)

// peerOf reads LOCAL_PEERCRED: the effective uid of the process that
// connected (macOS reports no pid there; the uid is what is checked).
func peerOf(c net.Conn) peer {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return peer{err: errors.New("not a unix socket connection")}
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return peer{err: err}
	}
	var cred *unix.Xucred
	var gerr error
	if err := raw.Control(func(fd uintptr) {
		cred, gerr = unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	}); err != nil {
		return peer{err: err}
	}
	if gerr != nil {
		return peer{err: gerr}
	}
	return peer{known: true, uid: int(cred.Uid)}
}
