package server

import (
	"net"

	"golang.org/x/sys/unix"
)

// peerOf reads SO_PEERCRED: the credentials of the process that connected,
// as they were at connect(2).
func peerOf(c net.Conn) peer {
	var cred *unix.Ucred
	err := sockopt(c, func(fd int) (err error) {
		cred, err = unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
		return err
	})
	if err != nil {
		return peer{err: err}
	}
	return peerFromUcred(cred)
}

func peerFromUcred(c *unix.Ucred) peer {
	return peer{known: true, uid: int(c.Uid), pid: int(c.Pid)}
}
