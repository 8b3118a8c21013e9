//go:build !linux && !darwin

package server

import "net"

// peerOf knows nothing here: Windows has no peer credentials on AF_UNIX
// sockets, and the other unix systems are not supported targets. The
// socket file's mode (0600) or, on Windows, its ACL and its directory's,
// decide who may connect; see authorize.
func peerOf(net.Conn) peer { return peer{} }
