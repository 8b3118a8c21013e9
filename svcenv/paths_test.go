package svcenv

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPaths(t *testing.T) {
	tests := []struct {
		platform Platform
		data     string
		want     Layout
		dirs     []string
	}{
		{
			Linux, "/srv/svcrun/modules/db/",
			Layout{
				Platform:     Linux,
				ModuleData:   "/srv/svcrun/modules/db",
				SettingsFile: "/srv/svcrun/modules/db/settings.json",
				ToolsFile:    "/srv/svcrun/modules/db/tools.json",
				LimitsFile:   "/srv/svcrun/modules/db/limits.json",
				Home:         "/srv/svcrun/modules/db/home",
				Tmp:          "/srv/svcrun/modules/db/tmp",
				Run:          "/srv/svcrun/modules/db/run",
			},
			[]string{"/srv/svcrun/modules/db", "/srv/svcrun/modules/db/home", "/srv/svcrun/modules/db/tmp",
				"/srv/svcrun/modules/db/run"},
		},
		{
			MacOS, "/Library/svcrun/modules/db",
			Layout{
				Platform:     MacOS,
				ModuleData:   "/Library/svcrun/modules/db",
				SettingsFile: "/Library/svcrun/modules/db/settings.json",
				ToolsFile:    "/Library/svcrun/modules/db/tools.json",
				LimitsFile:   "/Library/svcrun/modules/db/limits.json",
				Home:         "/Library/svcrun/modules/db/home",
				Tmp:          "/Library/svcrun/modules/db/tmp",
			},
			[]string{"/Library/svcrun/modules/db", "/Library/svcrun/modules/db/home", "/Library/svcrun/modules/db/tmp"},
		},
		{
			Windows, `E:/svcrun/modules/db`,
			Layout{
				Platform:     Windows,
				ModuleData:   `E:\svcrun\modules\db`,
				SettingsFile: `E:\svcrun\modules\db\settings.json`,
				ToolsFile:    `E:\svcrun\modules\db\tools.json`,
				LimitsFile:   `E:\svcrun\modules\db\limits.json`,
				Home:         `E:\svcrun\modules\db\home`,
				Tmp:          `E:\svcrun\modules\db\tmp`,
				AppData:      `E:\svcrun\modules\db\home\AppData\Roaming`,
				LocalAppData: `E:\svcrun\modules\db\home\AppData\Local`,
			},
			[]string{
				`E:\svcrun\modules\db`, `E:\svcrun\modules\db\home`, `E:\svcrun\modules\db\tmp`,
				`E:\svcrun\modules\db\home\AppData`, `E:\svcrun\modules\db\home\AppData\Roaming`,
				`E:\svcrun\modules\db\home\AppData\Local`,
			},
		},
		{
			Windows, `c:\m`,
			Layout{
				Platform:     Windows,
				ModuleData:   `C:\m`,
				SettingsFile: `C:\m\settings.json`,
				ToolsFile:    `C:\m\tools.json`,
				LimitsFile:   `C:\m\limits.json`,
				Home:         `C:\m\home`,
				Tmp:          `C:\m\tmp`,
				AppData:      `C:\m\home\AppData\Roaming`,
				LocalAppData: `C:\m\home\AppData\Local`,
			},
			[]string{`C:\m`, `C:\m\home`, `C:\m\tmp`, `C:\m\home\AppData`, `C:\m\home\AppData\Roaming`,
				`C:\m\home\AppData\Local`},
		},
	}
	for _, tt := range tests {
		got, err := Paths(tt.platform, tt.data)
		if err != nil {
			t.Errorf("Paths(%s, %q): %v", tt.platform, tt.data, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Paths(%s, %q) (-want +got):\n%s", tt.platform, tt.data, diff)
		}
		if diff := cmp.Diff(tt.dirs, got.Dirs()); diff != "" {
			t.Errorf("Dirs(%s, %q) (-want +got):\n%s", tt.platform, tt.data, diff)
		}
	}
}

func TestPathsErrors(t *testing.T) {
	tests := []struct {
		platform Platform
		data     string
		want     string
	}{
		{"", "/x", `svcenv: unknown platform "" (want linux, macos or windows)`},
		{Linux, "x", `svcenv: module data dir "x" is not absolute (linux)`},
		{Linux, "/", `svcenv: module data dir "/" is a root directory`},
		{Windows, `C:\`, `svcenv: module data dir "C:\\" is a root directory`},
		{Windows, `1:\x`, `svcenv: module data dir "1:\\x" is not an absolute windows path with a drive letter ` +
			`(like C:\dir)`},
	}
	for _, tt := range tests {
		_, err := Paths(tt.platform, tt.data)
		if err == nil || err.Error() != tt.want {
			t.Errorf("Paths(%q, %q) error = %v, want %s", tt.platform, tt.data, err, tt.want)
		}
	}
}

func TestCleanWindows(t *testing.T) {
	tests := []struct{ in, want string }{
		{`C:\`, `C:\`},
		{`c:/`, `C:\`},
		{`C:\a\..\..\b`, `C:\b`},
		{`C:\a\.\b\\c\`, `C:\a\b\c`},
		{`z:/Program Files/x`, `Z:\Program Files\x`},
	}
	for _, tt := range tests {
		got, ok := cleanWindows(tt.in)
		if !ok || got != tt.want {
			t.Errorf("cleanWindows(%q) = %q, %v; want %q", tt.in, got, ok, tt.want)
		}
	}
	for _, bad := range []string{"", "C:", `C:x`, `\x`, `\\h\s`, `:\x`, `CC:\x`, "/x"} {
		if got, ok := cleanWindows(bad); ok {
			t.Errorf("cleanWindows(%q) = %q, want refusal", bad, got)
		}
	}
}

func TestToolDirs(t *testing.T) {
	got, err := ToolDirs(Linux, map[string]string{
		"java":   "/opt/jdk/bin/java",
		"docker": "/usr/local/bin/docker",
		"colima": "/opt/homebrew/bin/colima",
		"javac":  "/opt/jdk/bin/javac",
		"sh":     "/sh",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/opt/homebrew/bin", "/usr/local/bin", "/opt/jdk/bin", "/opt/jdk/bin", "/"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ToolDirs linux (-want +got):\n%s", diff)
	}

	got, err = ToolDirs(Windows, map[string]string{
		"docker": `C:\Program Files\Docker\docker.exe`,
		"git":    `d:/git/cmd/git.exe`,
		"root":   `E:\x.exe`,
	})
	if err != nil {
		t.Fatal(err)
	}
	want = []string{`C:\Program Files\Docker`, `D:\git\cmd`, `E:\`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ToolDirs windows (-want +got):\n%s", diff)
	}

	if got, err := ToolDirs(MacOS, nil); err != nil || len(got) != 0 {
		t.Errorf("ToolDirs(nil) = %q, %v", got, err)
	}

	_, err = ToolDirs(Linux, map[string]string{"docker": "docker"})
	if want := `svcenv: tool "docker" path "docker" is not absolute (linux)`; err == nil || err.Error() != want {
		t.Errorf("relative tool: error %v, want %s", err, want)
	}
	_, err = ToolDirs("bsd", nil)
	if want := `svcenv: unknown platform "bsd" (want linux, macos or windows)`; err == nil || err.Error() != want {
		t.Errorf("bad platform: error %v, want %s", err, want)
	}
}
