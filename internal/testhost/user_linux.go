package testhost

import (
	"errors"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"testing"
)

// UserName is the unprivileged system user the tests give run_as.
const UserName = "svcrun-test"

// User is an unprivileged user for run_as and for running a client as
// another user: its name, uid and gid.
type User struct {
	Name     string
	UID, GID int
}

// RunAs returns the tests' unprivileged user, svcrun-test, creating it
// (with a group of its own, no home, no login) when it is missing; it
// needs root, as run_as does, and skips the test otherwise (fails it
// under REQUIRE_KERNEL_FEATURES=1).
//
// Why a user of the project's rather than nobody: an image may lack
// nobody, or map it to another uid, or give it groups; svcrun-test is
// whatever this helper made it. Why one fixed name, created once and left
// in place like a package's system user, rather than one per test process
// removed at the end: test processes of other checkouts may be running
// ops as it at the same moment, and a userdel under them would break
// them, while a process killed before its cleanup would leave a user
// behind at every run. It owns nothing outside the tests' temporary
// directories; `userdel svcrun-test` removes it.
func RunAs(t testing.TB) User {
	t.Helper()
	if u, ok := lookup(t); ok {
		return u
	}
	if os.Geteuid() != 0 {
		SkipOrFail(t, "no user "+UserName+", and only root can create it")
	}
	if _, err := exec.LookPath("useradd"); err != nil {
		SkipOrFail(t, "no user "+UserName+", and no useradd to create it: "+err.Error())
	}
	out, err := exec.Command("useradd", "--system", "--user-group", "--no-create-home",
		"--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", UserName).CombinedOutput()
	// Another test process may have created it meanwhile (useradd exits
	// 9): the lookup decides.
	if u, ok := lookup(t); ok {
		return u
	}
	t.Fatalf("useradd %s: %v\n%s", UserName, err, out)
	return User{}
}

// lookup finds the user; it fails the test if the user is not an
// unprivileged one with a group of its own (it was not made here).
func lookup(t testing.TB) (User, bool) {
	t.Helper()
	u, err := user.Lookup(UserName)
	var unknown user.UnknownUserError
	if errors.As(err, &unknown) {
		return User{}, false
	}
	if err != nil {
		t.Fatalf("look up %s: %v", UserName, err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil || uid == 0 || gid == 0 {
		t.Fatalf("user %s has uid %q, gid %q: the tests need an unprivileged user with a group of its own "+
			"(userdel %s, and they create it again)", UserName, u.Uid, u.Gid, UserName)
	}
	return User{Name: UserName, UID: uid, GID: gid}, true
}
