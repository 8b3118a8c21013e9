package svcenv

import (
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// hostLayout returns the layout of a fresh module data dir on this host,
// prepared when prepare is set.
func hostLayout(t testing.TB, prepare bool) Layout {
	t.Helper()
	l, err := Paths(HostPlatform(), filepath.Join(t.TempDir(), "modules", "mod"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Dir(l.ModuleData), 0o755); err != nil {
		t.Fatal(err)
	}
	if prepare {
		if err := Prepare(l, nil); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

func readJSON(t *testing.T, file string) any {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s is not valid JSON: %v\n%s", file, err, data)
	}
	return v
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

func TestWriteFiles(t *testing.T) {
	l := hostLayout(t, true)
	settings := map[string]any{"cpus": 4.0, "name": "<vm> & co", "nested": map[string]any{"z": []any{1.0, "é"}, "a": true}}
	tools := map[string]string{"docker": "/usr/local/bin/docker", "colima": "/opt/homebrew/bin/colima"}
	limits := struct {
		MemGB float64 `json:"mem_gb"`
		Pids  int     `json:"pids"`
	}{8, 1024}
	if err := WriteFiles(l, nil, Files{Settings: settings, Tools: tools, Limits: limits}); err != nil {
		t.Fatal(err)
	}

	if diff := cmp.Diff(any(settings), readJSON(t, l.SettingsFile)); diff != "" {
		t.Errorf("settings (-want +got):\n%s", diff)
	}
	wantTools := map[string]any{"docker": "/usr/local/bin/docker", "colima": "/opt/homebrew/bin/colima"}
	if diff := cmp.Diff(any(wantTools), readJSON(t, l.ToolsFile)); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(any(map[string]any{"mem_gb": 8.0, "pids": 1024.0}), readJSON(t, l.LimitsFile)); diff != "" {
		t.Errorf("limits (-want +got):\n%s", diff)
	}

	// Deterministic bytes: sorted keys, indent, no HTML escaping, final newline.
	got, _ := os.ReadFile(l.SettingsFile)
	want := "{\n  \"cpus\": 4,\n  \"name\": \"<vm> & co\",\n  \"nested\": {\n    \"a\": true,\n    \"z\": [\n " +
		"     1,\n      \"é\"\n    ]\n  }\n}\n"
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("settings.json bytes (-want +got):\n%s", diff)
	}

	// No temporary file is left behind.
	wantNames := []string{"home", "limits.json", "settings.json", "tmp", "tools.json"}
	if l.Run != "" {
		wantNames = append(wantNames, "run")
		sort.Strings(wantNames)
	}
	if diff := cmp.Diff(wantNames, dirNames(t, l.ModuleData)); diff != "" {
		t.Errorf("module data dir (-want +got):\n%s", diff)
	}
}

func TestWriteFilesReplaces(t *testing.T) {
	l := hostLayout(t, true)
	if err := os.WriteFile(l.SettingsFile, []byte("old, not even JSON"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A reader that opened the old file keeps the old content: the file is
	// replaced by rename, not truncated and rewritten in place. (Windows
	// refuses to replace a file that is open, so it is not checked there.)
	var old *os.File
	if runtime.GOOS != "windows" {
		var err error
		if old, err = os.Open(l.SettingsFile); err != nil {
			t.Fatal(err)
		}
		defer old.Close()
	}

	for i, v := range []map[string]any{{"v": 1.0}, {"v": 2.0}, {"v": 2.0}} { // the same content twice is fine
		if err := WriteFiles(l, nil, Files{Settings: v}); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		if diff := cmp.Diff(any(v), readJSON(t, l.SettingsFile)); diff != "" {
			t.Errorf("write %d (-want +got):\n%s", i, diff)
		}
	}
	if old != nil {
		buf := make([]byte, 64)
		n, _ := old.Read(buf)
		if got := string(buf[:n]); got != "old, not even JSON" {
			t.Errorf("old reader sees %q", got)
		}
	}
	for _, name := range dirNames(t, l.ModuleData) {
		if strings.Contains(name, ".tmp-") {
			t.Errorf("temporary file left behind: %s", name)
		}
	}
}

func TestWriteFilesNilIsEmptyObject(t *testing.T) {
	l := hostLayout(t, true)
	var nilMap map[string]string
	if err := WriteFiles(l, nil, Files{Tools: nilMap}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{l.SettingsFile, l.ToolsFile, l.LimitsFile} {
		if data, _ := os.ReadFile(f); string(data) != "{}\n" {
			t.Errorf("%s = %q, want {}", f, data)
		}
	}
}

func TestWriteFilesErrors(t *testing.T) {
	t.Run("missing dir", func(t *testing.T) {
		l := hostLayout(t, false) // module data dir not created
		err := WriteFiles(l, nil, Files{})
		prefix := "svcenv: write " + l.SettingsFile + ": "
		if err == nil || !strings.HasPrefix(err.Error(), prefix) || !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("error = %v, want %s... (not exist)", err, prefix)
		}
		if runtime.GOOS == "linux" || runtime.GOOS == "darwin" {
			if want := prefix + "no such file or directory"; err.Error() != want {
				t.Errorf("error:\n got %s\nwant %s", err, want)
			}
		}
	})
	t.Run("not an object", func(t *testing.T) {
		l := hostLayout(t, true)
		for _, tt := range []struct {
			files Files
			want  string
		}{
			{Files{Settings: []int{1}}, "svcenv: " + l.SettingsFile + ": want a JSON object, got an array"},
			{Files{Tools: "docker"}, "svcenv: " + l.ToolsFile + ": want a JSON object, got a string"},
			{Files{Limits: 8}, "svcenv: " + l.LimitsFile + ": want a JSON object, got a number"},
			{Files{Limits: false}, "svcenv: " + l.LimitsFile + ": want a JSON object, got a boolean"},
			{Files{Limits: map[string]float64{"mem_gb": math.NaN()}},
				"svcenv: " + l.LimitsFile + ": json: unsupported value: NaN"},
		} {
			err := WriteFiles(l, nil, tt.files)
			if err == nil || err.Error() != tt.want {
				t.Errorf("error = %v, want %s", err, tt.want)
			}
		}
		// Nothing was written: every document is encoded before any file.
		for _, name := range dirNames(t, l.ModuleData) {
			if strings.Contains(name, ".json") {
				t.Errorf("file written despite the errors: %s", name)
			}
		}
	})
	t.Run("layout of another platform", func(t *testing.T) {
		other := Windows
		if HostPlatform() == Windows {
			other = Linux
		}
		l, err := Paths(other, map[Platform]string{Windows: `C:\m`, Linux: "/m"}[other])
		if err != nil {
			t.Fatal(err)
		}
		want := "svcenv: layout is for " + string(other) + " but this host is " + string(HostPlatform())
		if err := WriteFiles(l, nil, Files{}); err == nil || err.Error() != want {
			t.Errorf("WriteFiles error = %v, want %s", err, want)
		}
		if err := Prepare(l, nil); err == nil || err.Error() != want {
			t.Errorf("Prepare error = %v, want %s", err, want)
		}
	})
	t.Run("empty layout", func(t *testing.T) {
		want := "svcenv: layout has no module data dir (use Paths)"
		if err := WriteFiles(Layout{Platform: HostPlatform()}, nil, Files{}); err == nil || err.Error() != want {
			t.Errorf("error = %v, want %s", err, want)
		}
	})
}

func TestPrepare(t *testing.T) {
	l := hostLayout(t, false)
	for i := 0; i < 2; i++ { // idempotent
		if err := Prepare(l, nil); err != nil {
			t.Fatalf("Prepare %d: %v", i, err)
		}
	}
	for _, d := range l.Dirs() {
		fi, err := os.Lstat(d)
		if err != nil {
			t.Fatal(err)
		}
		if !fi.IsDir() {
			t.Errorf("%s is not a directory", d)
		}
		if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o700 {
			t.Errorf("%s has mode %v, want 0700", d, fi.Mode().Perm())
		}
	}
}

func TestPrepareMissingParent(t *testing.T) {
	l, err := Paths(HostPlatform(), filepath.Join(t.TempDir(), "modules", "mod"))
	if err != nil {
		t.Fatal(err)
	}
	err = Prepare(l, nil)
	prefix := "svcenv: create " + l.ModuleData + ": "
	if err == nil || !strings.HasPrefix(err.Error(), prefix) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error = %v, want %s... (not exist)", err, prefix)
	}
}

func TestPrepareRefusesNonDirectory(t *testing.T) {
	l := hostLayout(t, false)
	if err := os.Mkdir(l.ModuleData, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.Tmp, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	want := "svcenv: " + l.Tmp + " is not a directory; remove it"
	if err := Prepare(l, nil); err == nil || err.Error() != want {
		t.Errorf("error = %v, want %s", err, want)
	}
}
