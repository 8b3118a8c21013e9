//go:build unix

package svcenv

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
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

// TestWriteFilesLeavesUnchanged checks that a file already as WriteFiles
// would write it is left in place (same inode: no temporary file, no
// rename), and that one that differs in content, mode or kind is replaced.
func TestWriteFilesLeavesUnchanged(t *testing.T) {
	settings := map[string]any{"v": 1.0}
	for _, tc := range []struct {
		name     string
		alter    func(t *testing.T, l Layout) // after a first WriteFiles
		settings map[string]any
		replaced bool
	}{
		{"same", func(*testing.T, Layout) {}, settings, false},
		{"changed content", func(*testing.T, Layout) {}, map[string]any{"v": 2.0}, true},
		{"loose mode", func(t *testing.T, l Layout) { chmod(t, l.SettingsFile, 0o644) }, settings, true},
		{"symbolic link", func(t *testing.T, l Layout) {
			data, err := os.ReadFile(l.SettingsFile)
			if err != nil {
				t.Fatal(err)
			}
			other := filepath.Join(t.TempDir(), "elsewhere.json")
			if err := os.WriteFile(other, data, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(l.SettingsFile); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(other, l.SettingsFile); err != nil {
				t.Fatal(err)
			}
		}, settings, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := hostLayout(t, true)
			if err := WriteFiles(l, nil, Files{Settings: settings}); err != nil {
				t.Fatal(err)
			}
			tc.alter(t, l)
			before := inode(t, l.SettingsFile)
			if err := WriteFiles(l, nil, Files{Settings: tc.settings}); err != nil {
				t.Fatal(err)
			}
			if got := inode(t, l.SettingsFile) != before; got != tc.replaced {
				t.Errorf("settings.json replaced: %v, want %v", got, tc.replaced)
			}
			fi, err := os.Lstat(l.SettingsFile)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode() != 0o600 {
				t.Errorf("settings.json mode %v, want -rw-------", fi.Mode())
			}
			if diff := cmp.Diff(any(tc.settings), readJSON(t, l.SettingsFile)); diff != "" {
				t.Errorf("settings (-want +got):\n%s", diff)
			}
		})
	}
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	return uint64(st.Ino)
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}
