//go:build unix

package svcenv

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestWriteFilesMode0600(t *testing.T) {
	l := hostLayout(t, true)
	if err := os.WriteFile(l.ToolsFile, []byte("{}"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := WriteFiles(l, nil, Files{}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{l.SettingsFile, l.ToolsFile, l.LimitsFile} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode(); got != 0o600 {
			t.Errorf("%s mode %v, want -rw-------", f, got)
		}
	}
}

func TestPrepareRunDir0700(t *testing.T) {
	l := hostLayout(t, false)
	if l.Run == "" {
		t.Skip("no XDG_RUNTIME_DIR on this platform")
	}
	// A run dir left with a looser mode is tightened.
	if err := os.Mkdir(l.ModuleData, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(l.Run, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(l.Run, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := Prepare(l, nil); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{l.Run, l.ModuleData} {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode(); got != os.ModeDir|0o700 {
			t.Errorf("%s mode %v, want drwx------", d, got)
		}
	}
}

// TestPrepareRefusesSymlink checks that a link a service left in place of its
// home is not followed: the link's target keeps its mode.
func TestPrepareRefusesSymlink(t *testing.T) {
	l := hostLayout(t, false)
	if err := os.Mkdir(l.ModuleData, 0o700); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, l.Home); err != nil {
		t.Fatal(err)
	}
	want := "svcenv: " + l.Home + " is a symbolic link, not a directory; remove it"
	if err := Prepare(l, &Owner{UID: os.Getuid(), GID: os.Getgid()}); err == nil || err.Error() != want {
		t.Errorf("error = %v, want %s", err, want)
	}
	if fi, err := os.Stat(target); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("link target changed: %v, %v", fi.Mode(), err)
	}
}

// TestOwner gives the directories and files to another account when the test
// runs as root, and to the current one otherwise.
func TestOwner(t *testing.T) {
	owner := &Owner{UID: os.Getuid(), GID: os.Getgid()}
	if os.Getuid() == 0 {
		owner = &Owner{UID: 12345, GID: 23456}
	}
	l := hostLayout(t, false)
	if err := Prepare(l, owner); err != nil {
		t.Fatal(err)
	}
	if err := WriteFiles(l, owner, Files{Settings: map[string]int{"a": 1}}); err != nil {
		t.Fatal(err)
	}
	for _, p := range append(l.Dirs(), l.SettingsFile, l.ToolsFile, l.LimitsFile) {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if int(st.Uid) != owner.UID || int(st.Gid) != owner.GID {
			t.Errorf("%s owned by %d:%d, want %d:%d", p, st.Uid, st.Gid, owner.UID, owner.GID)
		}
	}
}
