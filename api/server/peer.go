package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
)

// peer is who is at the other end of a connection, as far as the platform
// tells.
type peer struct {
	known bool  // the platform reported the peer's credentials
	uid   int   // effective uid of the peer when it connected
	gids  []int // its groups then, primary and supplementary
	pid   int   // 0 when unknown
	err   error // reading the credentials failed
}

// authorize decides whether p may use the API: root, the user svcrun runs
// as (self, its effective uid) and, when group is 0 or more (socket_group),
// the members of that group may; everyone else may not. A failure
// to read the credentials refuses (fail closed). Where the platform has no
// peer credentials (known false: Windows, and unix systems other than Linux
// and macOS) the socket's file mode (0600, owned by svcrun's user) or, on
// Windows, the ACL of the socket file and its directory, is the guard.
func authorize(p peer, self, group int) error {
	switch {
	case p.err != nil:
		return fmt.Errorf("svcrun cannot read the credentials of the connecting process (%v), so it refuses the request",
			p.err)
	case !p.known:
		return nil
	case p.uid == 0 || p.uid == self:
		return nil
	case group >= 0 && slices.Contains(p.gids, group):
		return nil
	}
	who := fmt.Sprintf("uid %d", p.uid)
	if p.pid > 0 {
		who = fmt.Sprintf("uid %d (pid %d)", p.uid, p.pid)
	}
	if group >= 0 {
		return fmt.Errorf("%s may not use svcrun's API: only root, svcrun's own user (uid %d) "+
			"and the members of its socket_group (gid %d) may; add the user to that group (a "+
			"new login session picks it up) or run the command as root", who, self, group)
	}
	return fmt.Errorf("%s may not use svcrun's API: only root and svcrun's own user (uid %d) "+
		"may; run the command as one of them, e.g. with sudo, or set socket_group in the node configuration", who, self)
}

type peerKey struct{}

// withPeer is the server's ConnContext hook: it reads the credentials once
// per connection and keeps them in the connection's context.
func withPeer(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, peerKey{}, peerOf(c))
}

func peerFrom(ctx context.Context) (peer, bool) {
	p, ok := ctx.Value(peerKey{}).(peer)
	return p, ok
}

// sockopt runs get on the descriptor of a Unix socket connection: the
// platforms' peer-credential readers share everything but the getsockopt.
func sockopt(c net.Conn, get func(fd int) error) error {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return errors.New("not a unix socket connection")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return err
	}
	var gerr error
	if err := raw.Control(func(fd uintptr) { gerr = get(int(fd)) }); err != nil {
		return err
	}
	return gerr
}
