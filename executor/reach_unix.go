//go:build unix

package executor

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
)

// whyDenied explains an op's spawn that failed with EACCES while the op
// runs as another user (run_as): the first directory on the way to dir
// (the op's working directory) or to path (its executable) that the user
// may not search, or an executable it may not run. The mode bits only:
// an ACL or a security module can deny what they allow, and then it says
// nothing. "" when it finds nothing.
func whyDenied(sys *syscall.SysProcAttr, dir, path string) string {
	if sys == nil || sys.Credential == nil {
		return ""
	}
	if !filepath.IsAbs(path) && dir != "" {
		path = filepath.Join(dir, path)
	}
	if dir != "" {
		if why := firstDenied(sys.Credential, filepath.Clean(dir), "search"); why != "" {
			return why
		}
	}
	return firstDenied(sys.Credential, filepath.Clean(path), "execute")
}

// firstDenied walks p from the root: every directory on the way must be
// searchable, and p itself allow last (search or execute: the same bit).
func firstDenied(c *syscall.Credential, p, last string) string {
	var walk []string
	for d := p; ; d = filepath.Dir(d) {
		walk = append(walk, d)
		if d == filepath.Dir(d) {
			break
		}
	}
	slices.Reverse(walk)
	for _, d := range walk {
		fi, err := os.Stat(d)
		if err != nil {
			return ""
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || may(c, st) {
			continue
		}
		what := "search"
		if d == p {
			what = last
		}
		return fmt.Sprintf("uid %d may not %s %s: mode %04o, owner %d:%d", c.Uid, what, d, fi.Mode().Perm(), st.Uid, st.Gid)
	}
	return ""
}

// may says whether the x bit that applies to c is set: the owner's, else
// the group's (its gid or one of its groups), else the others'.
func may(c *syscall.Credential, st *syscall.Stat_t) bool {
	switch {
	case c.Uid == 0:
		return true // run_as is never root
	case st.Uid == c.Uid:
		return st.Mode&0o100 != 0
	case st.Gid == c.Gid || slices.Contains(c.Groups, st.Gid):
		return st.Mode&0o010 != 0
	}
	return st.Mode&0o001 != 0
}
