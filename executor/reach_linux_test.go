package executor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oarbank/svcrun/internal/testhost"
)

// TestWhyDenied: a spawn denied to run_as names the directory it may not
// search or the executable it may not run, from the mode bits.
func TestWhyDenied(t *testing.T) {
	root := testhost.SearchableDir(t)
	own := uint32(os.Getuid())
	gid := uint32(os.Getgid())
	mk := func(name string, mode os.FileMode) string {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, "/") {
			if err := os.Mkdir(p, mode); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for d := root; d != "/"; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			t.Skipf("%s is not searchable by others: this test's users could not reach its files", d)
		}
	}
	closed := mk("closed/", 0o700)
	inClosed := mk("closed/bundle/run", 0o755)
	openDir := mk("open/", 0o755)
	plain := mk("open/plain", 0o644)
	run := mk("open/run", 0o755)
	groupOnly := mk("group/", 0o710)
	inGroup := mk("group/run", 0o755)
	other := &syscall.Credential{Uid: own + 4242, Gid: gid + 4242}
	if own == 0 {
		other = &syscall.Credential{Uid: 4242, Gid: 4242}
	}
	inGroupCred := &syscall.Credential{Uid: other.Uid, Gid: other.Gid, Groups: []uint32{gid}}
	tests := []struct {
		name      string
		cred      *syscall.Credential
		dir, path string
		want      string // in the answer; "" for none
	}{
		{"a closed directory on the way", other, filepath.Dir(inClosed), inClosed,
			"may not search " + closed + ": mode 0700"},
		{"the working directory itself", other, closed, run, "may not search " + closed},
		{"a relative executable under it", other, filepath.Dir(inClosed), "run", "may not search " + closed},
		{"an executable without x for others", other, openDir, plain, "may not execute " + plain + ": mode 0644"},
		{"all open", other, openDir, run, ""},
		{"a group's directory, not in the group", other, groupOnly, inGroup, "may not search " + groupOnly},
		{"a group's directory, in the group", inGroupCred, groupOnly, inGroup, ""},
		{"no run_as", nil, closed, inClosed, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sys *syscall.SysProcAttr
			if tt.cred != nil {
				sys = &syscall.SysProcAttr{Credential: tt.cred}
			}
			got := whyDenied(sys, tt.dir, tt.path)
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Errorf("whyDenied(%s, %s) = %q, want %q", tt.dir, tt.path, got, tt.want)
			}
		})
	}

	// And in the spawn's error, where the kernel denies it.
	if os.Geteuid() != 0 {
		t.Skip("only root runs an op as another user")
	}
	s := Spec{Path: inClosed, Dir: filepath.Dir(inClosed), Timeout: time.Minute,
		Hooks: Hooks{SysProcAttr: func(a *syscall.SysProcAttr) { a.Credential = other }}}
	res := Spawn(context.Background(), s)
	if res.SpawnErr == nil || !strings.Contains(res.SpawnErr.Error(), "uid 4242 may not search "+closed) {
		t.Errorf("spawn as uid 4242 under %s: %v", closed, res.SpawnErr)
	}
}
