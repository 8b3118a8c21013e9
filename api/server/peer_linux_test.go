package server

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestAuthorizePeer(t *testing.T) {
	const self = 1000
	for _, tc := range []struct {
		name string
		p    peer
		ok   bool
		msg  string
	}{
		{"root", peerFromUcred(&unix.Ucred{Pid: 10, Uid: 0, Gid: 0}), true, ""},
		{"svcrun's own user", peerFromUcred(&unix.Ucred{Pid: 11, Uid: self, Gid: 50}), true, ""},
		{"another user", peerFromUcred(&unix.Ucred{Pid: 12, Uid: 1001, Gid: 1001}), false,
			"uid 1001 (pid 12) may not use svcrun's API: only root and svcrun's own user (uid 1000) may"},
		{"nobody", peerFromUcred(&unix.Ucred{Pid: 13, Uid: 65534, Gid: 65534}), false, "uid 65534"},
		{"unreadable credentials", peer{err: errors.New("bad file descriptor")}, false, "cannot read the credentials"},
		{"platform without credentials", peer{}, true, ""},
		{"no socket_group: a group is no pass", peer{known: true, uid: 1001, gids: []int{1001,
			1500}}, false, "or set socket_group"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := authorize(tc.p, self, -1)
			if (err == nil) != tc.ok {
				t.Fatalf("authorize: %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("message %q lacks %q", err, tc.msg)
			}
		})
	}
}

func TestAuthorizeSocketGroup(t *testing.T) {
	const self, group = 1000, 1500
	for _, tc := range []struct {
		name string
		p    peer
		ok   bool
	}{
		{"primary group", peerFromUcred(&unix.Ucred{Pid: 10, Uid: 1001, Gid: group}), true},
		{"supplementary group", peer{known: true, uid: 1001, gids: []int{1001, 27, group}}, true},
		{"other groups", peer{known: true, uid: 1001, gids: []int{1001, 27}}, false},
		{"no groups", peer{known: true, uid: 1001}, false},
		{"root still", peer{known: true, uid: 0}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := authorize(tc.p, self, group)
			if (err == nil) != tc.ok {
				t.Fatalf("authorize: %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "members of its socket_group (gid 1500)") {
				t.Errorf("message %q does not name the group", err)
			}
		})
	}
}
