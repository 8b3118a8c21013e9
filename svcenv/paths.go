package svcenv

import (
	"fmt"
	"path"
	"sort"
	"strings"
)

// Names of the files WriteFiles writes, directly inside the module data dir.
const (
	SettingsFileName = "settings.json"
	ToolsFileName    = "tools.json"
	LimitsFileName   = "limits.json"
)

// Layout is where a module's environment lives on disk, for one platform.
// Every path is absolute, clean and inside ModuleData, written the way the
// platform writes paths ('/' on linux and macos, '\' and a drive letter on
// windows). A Layout belongs to a module, not to a service: the services and
// probes of one module share it.
type Layout struct {
	Platform   Platform
	ModuleData string // the module data dir (node config: <data_dir>/modules/<name>)

	SettingsFile string // <data>/settings.json: OARBANK_SETTINGS_FILE
	ToolsFile    string // <data>/tools.json: OARBANK_TOOLS_FILE
	LimitsFile   string // <data>/limits.json: OARBANK_LIMITS_FILE

	Home string // <data>/home: HOME, or USERPROFILE on windows
	Tmp  string // <data>/tmp: TMPDIR, or TEMP and TMP on windows

	Run string // linux only: <data>/run, XDG_RUNTIME_DIR (mode 0700); "" elsewhere

	AppData      string // windows only: <home>\AppData\Roaming; "" elsewhere
	LocalAppData string // windows only: <home>\AppData\Local; "" elsewhere
}

// Paths returns the layout of the module data dir moduleData for platform p.
// moduleData must be absolute for p (on windows: a drive letter, as in
// C:\ProgramData\svcrun\modules\colima; '/' is accepted and turned into '\')
// and is cleaned. It must not be a root directory.
func Paths(p Platform, moduleData string) (Layout, error) {
	if err := p.check(); err != nil {
		return Layout{}, err
	}
	data, err := cleanAbs(p, "module data dir", moduleData)
	if err != nil {
		return Layout{}, err
	}
	if isRoot(p, data) {
		return Layout{}, fmt.Errorf("svcenv: module data dir %q is a root directory", moduleData)
	}
	l := Layout{
		Platform:     p,
		ModuleData:   data,
		SettingsFile: join(p, data, SettingsFileName),
		ToolsFile:    join(p, data, ToolsFileName),
		LimitsFile:   join(p, data, LimitsFileName),
		Home:         join(p, data, "home"),
		Tmp:          join(p, data, "tmp"),
	}
	switch p {
	case Linux:
		l.Run = join(p, data, "run")
	case Windows:
		l.AppData = join(p, l.Home, "AppData", "Roaming")
		l.LocalAppData = join(p, l.Home, "AppData", "Local")
	}
	return l, nil
}

// Dirs returns the directories Prepare creates, parents before children:
// the module data dir, home, tmp, run on linux, and the AppData directories on
// windows (whose programs expect APPDATA and LOCALAPPDATA to exist).
func (l Layout) Dirs() []string {
	dirs := []string{l.ModuleData, l.Home, l.Tmp}
	if l.Run != "" {
		dirs = append(dirs, l.Run)
	}
	if l.AppData != "" {
		dirs = append(dirs, join(l.Platform, l.Home, "AppData"), l.AppData, l.LocalAppData)
	}
	return dirs
}

// ToolDirs returns the directory of each granted tool, in the order of the
// tool names, so that the PATH built from it is the same on every run. Tool
// paths must be absolute for p. Duplicates are kept; Environ removes them.
func ToolDirs(p Platform, tools map[string]string) ([]string, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(tools))
	for name := range tools {
		names = append(names, name)
	}
	sort.Strings(names)
	dirs := make([]string, 0, len(names))
	for _, name := range names {
		tool, err := cleanAbs(p, fmt.Sprintf("tool %q path", name), tools[name])
		if err != nil {
			return nil, err
		}
		dirs = append(dirs, dir(p, tool))
	}
	return dirs, nil
}

// cleanAbs checks that s is an absolute path for p and returns it cleaned.
// what names the value in the error.
func cleanAbs(p Platform, what, s string) (string, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return "", fmt.Errorf("svcenv: %s %q contains a NUL byte", what, s)
	}
	if p == Windows {
		c, ok := cleanWindows(s)
		if !ok {
			return "", fmt.Errorf(`svcenv: %s %q is not an absolute windows path with a drive letter (like C:\dir)`, what, s)
		}
		return c, nil
	}
	if !strings.HasPrefix(s, "/") {
		return "", fmt.Errorf("svcenv: %s %q is not absolute (%s)", what, s, p)
	}
	return path.Clean(s), nil
}

func isRoot(p Platform, clean string) bool {
	if p == Windows {
		return len(clean) == 3 // "C:\"
	}
	return clean == "/"
}

// join joins clean path elements with the separator of p. It does not use
// path/filepath, which follows the host, not the target platform.
func join(p Platform, base string, elem ...string) string {
	if p != Windows {
		return path.Join(append([]string{base}, elem...)...)
	}
	s := strings.TrimSuffix(base, `\`)
	for _, e := range elem {
		s += `\` + e
	}
	return s
}

// dir returns all but the last element of the clean absolute path s.
func dir(p Platform, s string) string {
	if p != Windows {
		return path.Dir(s)
	}
	i := strings.LastIndexByte(s, '\\')
	if i <= 2 { // "C:\x" -> "C:\"
		return s[:3]
	}
	return s[:i]
}

// cleanWindows turns '/' into '\', upper-cases the drive letter, drops empty
// and "." elements and resolves ".." (never above the drive's root). It
// reports false unless s starts with a drive letter, a colon and a separator:
// drive-relative (C:dir), rooted without drive (\dir) and UNC (\\host\share)
// paths are refused, because HOMEDRIVE needs a drive.
func cleanWindows(s string) (string, bool) {
	s = strings.ReplaceAll(s, "/", `\`)
	if len(s) < 3 || !isASCIILetter(s[0]) || s[1] != ':' || s[2] != '\\' {
		return "", false
	}
	var parts []string
	for _, e := range strings.Split(s[3:], `\`) {
		switch e {
		case "", ".":
		case "..":
			if len(parts) > 0 {
				parts = parts[:len(parts)-1]
			}
		default:
			parts = append(parts, e)
		}
	}
	return strings.ToUpper(s[:1]) + `:\` + strings.Join(parts, `\`), true
}

func isASCIILetter(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}
