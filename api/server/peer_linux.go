package server

import (
	"net"
	"unsafe"

	"golang.org/x/sys/unix"
)

// peerOf reads SO_PEERCRED and SO_PEERGROUPS: the credentials and groups of
// the process that connected, as they were at connect(2).
func peerOf(c net.Conn) peer {
	var cred *unix.Ucred
	var groups []int
	err := sockopt(c, func(fd int) (err error) {
		if cred, err = unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED); err != nil {
			return err
		}
		// Before Linux 4.13 (or in a sandbox without it) there is no
		// SO_PEERGROUPS: the primary group is then all that counts for
		// socket_group, and root and svcrun's own user are not refused.
		groups, _ = peerGroups(fd)
		return nil
	})
	if err != nil {
		return peer{err: err}
	}
	p := peerFromUcred(cred)
	p.gids = append(p.gids, groups...)
	return p
}

func peerFromUcred(c *unix.Ucred) peer {
	return peer{known: true, uid: int(c.Uid), gids: []int{int(c.Gid)}, pid: int(c.Pid)}
}

// peerGroups reads SO_PEERGROUPS, the supplementary groups (Linux 4.13);
// x/sys has no typed getter for it.
func peerGroups(fd int) ([]int, error) {
	buf := make([]uint32, 64)
	for {
		n := uint32(len(buf) * 4)
		_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET,
			unix.SO_PEERGROUPS, uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&n)), 0)
		switch errno {
		case 0:
			out := make([]int, n/4)
			for i := range out {
				out[i] = int(buf[i])
			}
			return out, nil
		case unix.ERANGE: // n is the size needed
			buf = make([]uint32, n/4+1)
		default:
			return nil, errno
		}
	}
}
