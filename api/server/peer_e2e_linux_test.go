package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oarbank/svcrun/api"
	"github.com/oarbank/svcrun/internal/testhost"
)

// TestPeerDeniedEndToEnd connects as another user (the tests' own
// unprivileged one, testhost.RunAs, rather than the image's nobody) through
// a socket opened to everyone: SO_PEERCRED is what refuses, with a 403.
func TestPeerDeniedEndToEnd(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a client as another user")
	}
	u := testhost.RunAs(t)
	dir := shortTempDir(t)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s.sock")
	srv, err := New(nil, sock, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if err := os.Chmod(sock, 0o666); err != nil { // the file mode no longer guards
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "server.test")
	if err := copyFile(os.Args[0], bin); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestPeerHelper$", "-test.v")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SVCRUN_PEER_HELPER="+sock)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.UID), Gid: uint32(u.GID)}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), fmt.Sprintf("RESULT 403 forbidden: uid %d (pid ", u.UID)) ||
		!strings.Contains(string(out), "may not use svcrun's API") {
		t.Errorf("helper output:\n%s", out)
	}
}

// TestSocketGroupEndToEnd gives the socket a group (socket_group): a user
// of that group, through its supplementary groups, gets answers; the same
// user without the group cannot even connect (the socket is 0660).
func TestSocketGroupEndToEnd(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a client as another user")
	}
	u := testhost.RunAs(t)
	const gid = 54321 // a group the client user is not in: its groups are given below
	n := startNode(t, "", WithSocketGroup(gid))
	dir := filepath.Dir(n.socket)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(n.socket)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); fi.Mode().Perm() != 0o660 || st.Gid != gid {
		t.Errorf("socket mode %v gid %d, want 0660 and gid %d", fi.Mode().Perm(), st.Gid, gid)
	}
	bin := filepath.Join(dir, "server.test")
	if err := copyFile(os.Args[0], bin); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		groups []uint32
		want   string
	}{
		{"member", []uint32{100, gid}, "RESULT ok"},
		{"not a member", []uint32{100}, "permission denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, "-test.run=^TestPeerHelper$", "-test.v")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "SVCRUN_PEER_HELPER="+n.socket)
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.UID), Gid: uint32(u.GID),
				Groups: tc.groups}}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("helper: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("helper output lacks %q:\n%s", tc.want, out)
			}
		})
	}
}

// TestPeerHelper is the client side of TestPeerDeniedEndToEnd and
// TestSocketGroupEndToEnd.
func TestPeerHelper(t *testing.T) {
	sock := os.Getenv("SVCRUN_PEER_HELPER")
	if sock == "" {
		t.Skip("helper of TestPeerDeniedEndToEnd")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := api.NewClient(sock).Status(ctx)
	if err == nil {
		fmt.Println("RESULT ok")
		return
	}
	var ae *api.Error
	if errors.As(err, &ae) {
		fmt.Printf("RESULT %d %s: %s\n", ae.Status, ae.Code, ae.Message)
		return
	}
	fmt.Printf("RESULT %v\n", err)
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
