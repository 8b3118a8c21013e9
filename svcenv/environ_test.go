package svcenv

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEnvironLinux(t *testing.T) {
	tests := []struct {
		name string
		in   Input
		want []string
	}{
		{
			name: "service without tools",
			in: Input{
				Platform:   Linux,
				NodeID:     "node-1",
				Module:     "colima",
				Service:    "colima",
				ModuleData: "/var/lib/svcrun/modules/colima",
				User:       "svcrun",
				SystemRoot: `C:\Windows`, // ignored off windows
			},
			want: []string{
				"HOME=/var/lib/svcrun/modules/colima/home",
				"LANG=C.UTF-8",
				"LOGNAME=svcrun",
				"OARBANK_LIMITS_FILE=/var/lib/svcrun/modules/colima/limits.json",
				"OARBANK_MODULE=colima",
				"OARBANK_MODULE_DATA=/var/lib/svcrun/modules/colima",
				"OARBANK_NODE_ID=node-1",
				"OARBANK_PLATFORM=linux",
				"OARBANK_SERVICE=colima",
				"OARBANK_SETTINGS_FILE=/var/lib/svcrun/modules/colima/settings.json",
				"OARBANK_TOOLS_FILE=/var/lib/svcrun/modules/colima/tools.json",
				"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
				"TMPDIR=/var/lib/svcrun/modules/colima/tmp",
				"USER=svcrun",
				"XDG_CACHE_HOME=/var/lib/svcrun/modules/colima/home/.cache",
				"XDG_CONFIG_HOME=/var/lib/svcrun/modules/colima/home/.config",
				"XDG_DATA_HOME=/var/lib/svcrun/modules/colima/home/.local/share",
				"XDG_RUNTIME_DIR=/var/lib/svcrun/modules/colima/run",
				"XDG_STATE_HOME=/var/lib/svcrun/modules/colima/home/.local/state",
			},
		},
		{
			name: "probe with tools, unclean data dir, values with = and spaces",
			in: Input{
				Platform:   Linux,
				NodeID:     "rack 7=a",
				Module:     "java",
				Service:    "jdk17",
				ModuleData: "/data//modules/java/",
				User:       "root",
				ToolDirs:   []string{"/opt/jdk/bin/", "/usr/bin", "/opt/jdk/bin", "/opt/maven/../maven/bin", "/usr/local/sbin/"},
			},
			want: []string{
				"HOME=/data/modules/java/home",
				"LANG=C.UTF-8",
				"LOGNAME=root",
				"OARBANK_LIMITS_FILE=/data/modules/java/limits.json",
				"OARBANK_MODULE=java",
				"OARBANK_MODULE_DATA=/data/modules/java",
				"OARBANK_NODE_ID=rack 7=a",
				"OARBANK_PLATFORM=linux",
				"OARBANK_SERVICE=jdk17",
				"OARBANK_SETTINGS_FILE=/data/modules/java/settings.json",
				"OARBANK_TOOLS_FILE=/data/modules/java/tools.json",
				"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/opt/jdk/bin:/opt/maven/bin",
				"TMPDIR=/data/modules/java/tmp",
				"USER=root",
				"XDG_CACHE_HOME=/data/modules/java/home/.cache",
				"XDG_CONFIG_HOME=/data/modules/java/home/.config",
				"XDG_DATA_HOME=/data/modules/java/home/.local/share",
				"XDG_RUNTIME_DIR=/data/modules/java/run",
				"XDG_STATE_HOME=/data/modules/java/home/.local/state",
			},
		},
	}
	runEnvironTests(t, tests)
}

func TestEnvironMacOS(t *testing.T) {
	tests := []struct {
		name string
		in   Input
		want []string
	}{
		{
			name: "service with homebrew tool",
			in: Input{
				Platform:   MacOS,
				NodeID:     "mbp",
				Module:     "colima",
				Service:    "colima",
				ModuleData: "/Users/ci/Library/Application Support/svcrun/modules/colima",
				User:       "ci",
				ToolDirs:   []string{"/opt/homebrew/bin", "/usr/local/bin", "/opt/homebrew/bin/"},
			},
			want: []string{
				"HOME=/Users/ci/Library/Application Support/svcrun/modules/colima/home",
				"LANG=C.UTF-8",
				"LOGNAME=ci",
				"OARBANK_LIMITS_FILE=/Users/ci/Library/Application Support/svcrun/modules/colima/limits.json",
				"OARBANK_MODULE=colima",
				"OARBANK_MODULE_DATA=/Users/ci/Library/Application Support/svcrun/modules/colima",
				"OARBANK_NODE_ID=mbp",
				"OARBANK_PLATFORM=macos",
				"OARBANK_SERVICE=colima",
				"OARBANK_SETTINGS_FILE=/Users/ci/Library/Application Support/svcrun/modules/colima/settings.json",
				"OARBANK_TOOLS_FILE=/Users/ci/Library/Application Support/svcrun/modules/colima/tools.json",
				"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin:/opt/homebrew/bin",
				"TMPDIR=/Users/ci/Library/Application Support/svcrun/modules/colima/tmp/",
				"USER=ci",
			},
		},
		{
			name: "no tools",
			in: Input{
				Platform:   MacOS,
				NodeID:     "n",
				Module:     "m",
				Service:    "s",
				ModuleData: "/d/modules/m",
				User:       "u",
			},
			want: []string{
				"HOME=/d/modules/m/home",
				"LANG=C.UTF-8",
				"LOGNAME=u",
				"OARBANK_LIMITS_FILE=/d/modules/m/limits.json",
				"OARBANK_MODULE=m",
				"OARBANK_MODULE_DATA=/d/modules/m",
				"OARBANK_NODE_ID=n",
				"OARBANK_PLATFORM=macos",
				"OARBANK_SERVICE=s",
				"OARBANK_SETTINGS_FILE=/d/modules/m/settings.json",
				"OARBANK_TOOLS_FILE=/d/modules/m/tools.json",
				"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
				"TMPDIR=/d/modules/m/tmp/",
				"USER=u",
			},
		},
	}
	runEnvironTests(t, tests)
}

func TestEnvironWindows(t *testing.T) {
	tests := []struct {
		name string
		in   Input
		want []string
	}{
		{
			name: "service with tools",
			in: Input{
				Platform:   Windows,
				NodeID:     "win-1",
				Module:     "docker",
				Service:    "engine",
				ModuleData: `C:\ProgramData\svcrun\modules\docker`,
				User:       "ignored",
				SystemRoot: `C:\Windows`,
				ToolDirs: []string{
					`C:\Program Files\Docker\Docker\resources\bin`,
					`c:/windows/SYSTEM32`, // already on PATH: case-insensitive
					`C:\Program Files\Docker\Docker\resources\bin\`,
					`D:\tools\..\bin`,
				},
			},
			want: []string{
				`APPDATA=C:\ProgramData\svcrun\modules\docker\home\AppData\Roaming`,
				`ComSpec=C:\Windows\system32\cmd.exe`,
				`HOMEDRIVE=C:`,
				`HOMEPATH=\ProgramData\svcrun\modules\docker\home`,
				`LANG=C.UTF-8`,
				`LOCALAPPDATA=C:\ProgramData\svcrun\modules\docker\home\AppData\Local`,
				`OARBANK_LIMITS_FILE=C:\ProgramData\svcrun\modules\docker\limits.json`,
				`OARBANK_MODULE=docker`,
				`OARBANK_MODULE_DATA=C:\ProgramData\svcrun\modules\docker`,
				`OARBANK_NODE_ID=win-1`,
				`OARBANK_PLATFORM=windows`,
				`OARBANK_SERVICE=engine`,
				`OARBANK_SETTINGS_FILE=C:\ProgramData\svcrun\modules\docker\settings.json`,
				`OARBANK_TOOLS_FILE=C:\ProgramData\svcrun\modules\docker\tools.json`,
				`PATH=C:\Windows\system32;C:\Windows;C:\Windows\System32\Wbem;C:\Program Files\Docker\Docker\resources\bin;D:\bin`,
				`PATHEXT=.COM;.EXE;.BAT;.CMD`,
				`SystemRoot=C:\Windows`,
				`TEMP=C:\ProgramData\svcrun\modules\docker\tmp`,
				`TMP=C:\ProgramData\svcrun\modules\docker\tmp`,
				`USERPROFILE=C:\ProgramData\svcrun\modules\docker\home`,
				`windir=C:\Windows`,
			},
		},
		{
			name: "slashes and lower-case drive are normalised",
			in: Input{
				Platform:   Windows,
				NodeID:     "n",
				Module:     "m",
				Service:    "p",
				ModuleData: `d:/svc/./data//modules/m/`,
				SystemRoot: `c:\WINDOWS\`,
			},
			want: []string{
				`APPDATA=D:\svc\data\modules\m\home\AppData\Roaming`,
				`ComSpec=C:\WINDOWS\system32\cmd.exe`,
				`HOMEDRIVE=D:`,
				`HOMEPATH=\svc\data\modules\m\home`,
				`LANG=C.UTF-8`,
				`LOCALAPPDATA=D:\svc\data\modules\m\home\AppData\Local`,
				`OARBANK_LIMITS_FILE=D:\svc\data\modules\m\limits.json`,
				`OARBANK_MODULE=m`,
				`OARBANK_MODULE_DATA=D:\svc\data\modules\m`,
				`OARBANK_NODE_ID=n`,
				`OARBANK_PLATFORM=windows`,
				`OARBANK_SERVICE=p`,
				`OARBANK_SETTINGS_FILE=D:\svc\data\modules\m\settings.json`,
				`OARBANK_TOOLS_FILE=D:\svc\data\modules\m\tools.json`,
				`PATH=C:\WINDOWS\system32;C:\WINDOWS;C:\WINDOWS\System32\Wbem`,
				`PATHEXT=.COM;.EXE;.BAT;.CMD`,
				`SystemRoot=C:\WINDOWS`,
				`TEMP=D:\svc\data\modules\m\tmp`,
				`TMP=D:\svc\data\modules\m\tmp`,
				`USERPROFILE=D:\svc\data\modules\m\home`,
				`windir=C:\WINDOWS`,
			},
		},
	}
	runEnvironTests(t, tests)
}

func runEnvironTests(t *testing.T, tests []struct {
	name string
	in   Input
	want []string
}) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Environ(tt.in)
			if err != nil {
				t.Fatalf("Environ: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Environ (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEnvironNoLeak checks that the agent's own environment never reaches a
// service: a secret set in the test process does not appear.
func TestEnvironNoLeak(t *testing.T) {
	t.Setenv("SVCENV_TEST_SECRET", "hunter2")
	for _, p := range []Platform{Linux, MacOS, Windows} {
		got, err := Environ(validInput(p))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, kv := range got {
			if strings.Contains(kv, "SVCENV_TEST_SECRET") || strings.Contains(kv, "hunter2") {
				t.Errorf("%s: agent variable leaked: %q", p, kv)
			}
		}
	}
}

// TestEnvironDeterministic checks that the same input gives the same bytes and
// that Environ does not alias the caller's slice.
func TestEnvironDeterministic(t *testing.T) {
	for _, p := range []Platform{Linux, MacOS, Windows} {
		in := validInput(p)
		dirs := in.ToolDirs
		first, err := Environ(in)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 20; i++ {
			again, _ := Environ(in)
			if diff := cmp.Diff(first, again); diff != "" {
				t.Fatalf("%s: run %d differs:\n%s", p, i, diff)
			}
		}
		if diff := cmp.Diff(validInput(p).ToolDirs, dirs); diff != "" {
			t.Errorf("%s: ToolDirs modified:\n%s", p, diff)
		}
	}
}

func validInput(p Platform) Input {
	in := Input{Platform: p, NodeID: "node-1", Module: "mod", Service: "svc", User: "svcrun"}
	if p == Windows {
		in.ModuleData = `C:\svcrun\modules\mod`
		in.SystemRoot = `C:\Windows`
		in.ToolDirs = []string{`C:\tools\bin`}
	} else {
		in.ModuleData = "/var/lib/svcrun/modules/mod"
		in.ToolDirs = []string{"/opt/tools/bin"}
	}
	return in
}

func TestEnvironErrors(t *testing.T) {
	tests := []struct {
		name     string
		platform Platform
		edit     func(*Input)
		want     string
	}{
		{"unknown platform", Linux, func(in *Input) { in.Platform = "plan9" },
			`svcenv: unknown platform "plan9" (want linux, macos or windows)`},
		{"darwin is not a platform name", Linux, func(in *Input) { in.Platform = "darwin" },
			`svcenv: unknown platform "darwin" (macOS is spelled "macos")`},
		{"empty platform", Linux, func(in *Input) { in.Platform = "" },
			`svcenv: unknown platform "" (want linux, macos or windows)`},
		{"empty node id", Linux, func(in *Input) { in.NodeID = "" },
			`svcenv: node id is empty`},
		{"empty module", MacOS, func(in *Input) { in.Module = "" },
			`svcenv: module name is empty`},
		{"empty service", Windows, func(in *Input) { in.Service = "" },
			`svcenv: service name is empty`},
		{"full service name", Linux, func(in *Input) { in.Service = "mod/svc" },
			`svcenv: service name "mod/svc" contains a path separator (want the plain name, not <module>/<service>)`},
		{"module with backslash", Windows, func(in *Input) { in.Module = `a\b` },
			`svcenv: module name "a\\b" contains a path separator (want the plain name, not <module>/<service>)`},
		{"empty user on linux", Linux, func(in *Input) { in.User = "" },
			`svcenv: user is empty`},
		{"empty user on macos", MacOS, func(in *Input) { in.User = "" },
			`svcenv: user is empty`},
		{"NUL in node id", Linux, func(in *Input) { in.NodeID = "node\x00x" },
			`svcenv: node id "node\x00x" contains a NUL byte`},
		{"NUL in user", MacOS, func(in *Input) { in.User = "u\x00" },
			`svcenv: user "u\x00" contains a NUL byte`},
		{"NUL in service", Windows, func(in *Input) { in.Service = "s\x00" },
			`svcenv: service name "s\x00" contains a NUL byte`},
		{"NUL in module data", Linux, func(in *Input) { in.ModuleData = "/data\x00/m" },
			`svcenv: module data dir "/data\x00/m" contains a NUL byte`},
		{"NUL in tool dir", Windows, func(in *Input) { in.ToolDirs = []string{"C:\\t\x00"} },
			`svcenv: tool dir "C:\\t\x00" contains a NUL byte`},
		{"relative data dir on linux", Linux, func(in *Input) { in.ModuleData = "data/modules/mod" },
			`svcenv: module data dir "data/modules/mod" is not absolute (linux)`},
		{"empty data dir on macos", MacOS, func(in *Input) { in.ModuleData = "" },
			`svcenv: module data dir "" is not absolute (macos)`},
		{"windows path on linux", Linux, func(in *Input) { in.ModuleData = `C:\data` },
			`svcenv: module data dir "C:\\data" is not absolute (linux)`},
		{"root data dir", Linux, func(in *Input) { in.ModuleData = "/./" },
			`svcenv: module data dir "/./" is a root directory`},
		{"windows data dir without drive", Windows, func(in *Input) { in.ModuleData = `\svcrun\modules\mod` },
			`svcenv: module data dir "\\svcrun\\modules\\mod" is not an absolute windows path with a drive letter ` +
				`(like C:\dir)`},
		{"windows drive-relative data dir", Windows, func(in *Input) { in.ModuleData = `C:svcrun` },
			`svcenv: module data dir "C:svcrun" is not an absolute windows path with a drive letter (like C:\dir)`},
		{"windows UNC data dir", Windows, func(in *Input) { in.ModuleData = `\\host\share\mod` },
			`svcenv: module data dir "\\\\host\\share\\mod" is not an absolute windows path with a drive letter (like C:\dir)`},
		{"unix data dir on windows", Windows, func(in *Input) { in.ModuleData = "/var/lib/svcrun" },
			`svcenv: module data dir "/var/lib/svcrun" is not an absolute windows path with a drive letter (like C:\dir)`},
		{"windows root data dir", Windows, func(in *Input) { in.ModuleData = `D:\..` },
			`svcenv: module data dir "D:\\.." is a root directory`},
		{"empty system root", Windows, func(in *Input) { in.SystemRoot = "" },
			`svcenv: system root is empty (windows needs it, such as C:\Windows)`},
		{"relative system root", Windows, func(in *Input) { in.SystemRoot = "Windows" },
			`svcenv: system root "Windows" is not an absolute windows path with a drive letter (like C:\dir)`},
		{"system root with ;", Windows, func(in *Input) { in.SystemRoot = `C:\a;b` },
			`svcenv: system root "C:\\a;b" contains ";", the PATH separator of windows`},
		{"relative tool dir", Linux, func(in *Input) { in.ToolDirs = []string{"/ok", "bin"} },
			`svcenv: tool dir "bin" is not absolute (linux)`},
		{"empty tool dir", MacOS, func(in *Input) { in.ToolDirs = []string{""} },
			`svcenv: tool dir "" is not absolute (macos)`},
		{"windows tool dir without drive", Windows, func(in *Input) { in.ToolDirs = []string{`\tools`} },
			`svcenv: tool dir "\\tools" is not an absolute windows path with a drive letter (like C:\dir)`},
		{"tool dir with : on linux", Linux, func(in *Input) { in.ToolDirs = []string{"/opt/a:b"} },
			`svcenv: tool dir "/opt/a:b" contains ":", the PATH separator of linux`},
		{"tool dir with ; on windows", Windows, func(in *Input) { in.ToolDirs = []string{`C:\a;b`} },
			`svcenv: tool dir "C:\\a;b" contains ";", the PATH separator of windows`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := validInput(tt.platform)
			tt.edit(&in)
			got, err := Environ(in)
			if err == nil {
				t.Fatalf("Environ succeeded with %v, want error %q", got, tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("error:\n got %s\nwant %s", err, tt.want)
			}
		})
	}
}

// TestEnvironIgnoresOtherPlatformFields checks that User is not needed on
// windows and SystemRoot is not needed elsewhere.
func TestEnvironIgnoresOtherPlatformFields(t *testing.T) {
	in := validInput(Windows)
	in.User = ""
	if _, err := Environ(in); err != nil {
		t.Errorf("windows without user: %v", err)
	}
	for _, p := range []Platform{Linux, MacOS} {
		in := validInput(p)
		in.SystemRoot = ""
		if _, err := Environ(in); err != nil {
			t.Errorf("%s without system root: %v", p, err)
		}
	}
}
