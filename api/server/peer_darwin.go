package server

import (
	"net"

	"golang.org/x/sys/unix"
)

// peerOf reads LOCAL_PEERCRED: the effective uid of the process that
// connected (macOS reports no pid there; the uid is what is checked).
func peerOf(c net.Conn) peer {
	var cred *unix.Xucred
	err := sockopt(c, func(fd int) (err error) {
		cred, err = unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
		return err
	})
	if err != nil {
		return peer{err: err}
	}
	p := peer{known: true, uid: int(cred.Uid)}
	for _, g := range cred.Groups[:min(int(cred.Ngroups), len(cred.Groups))] {
		p.gids = append(p.gids, int(g))
	}
	return p
}
