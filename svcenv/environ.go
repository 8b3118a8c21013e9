package svcenv

import (
	"fmt"
	"sort"
	"strings"
)

// System directories that start PATH, per platform. Granted tools' directories
// follow them; nothing else is ever on PATH.
var (
	linuxSystemPath = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}
	macosSystemPath = []string{"/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"}
)

// windowsPathExt is PATHEXT: the extensions cmd.exe and CreateProcess callers
// try, in order.
const windowsPathExt = ".COM;.EXE;.BAT;.CMD"

// Input is everything the environment of one service or probe op depends on.
// Nothing is read from the host: the same Input gives the same environment on
// every machine.
type Input struct {
	Platform Platform // the node's platform

	NodeID string // OARBANK_NODE_ID
	Module string // OARBANK_MODULE: the module name

	// Service is OARBANK_SERVICE: the service's own name (services[].name,
	// not the full name <module>/<service>), or for a probe the probe's name
	// (probes[].name, the capability it establishes). It may not contain '/'
	// or '\', which catches a full name passed by mistake.
	Service string

	// ModuleData is the module data dir, absolute for Platform (see Paths).
	ModuleData string

	// User is USER and LOGNAME on linux and macos: the account the op runs as
	// (run_as when the agent is root). Required there; ignored on windows,
	// whose environment of §3 names no user (its profile is the home inside
	// the module data dir).
	User string

	// ToolDirs are the directories of the granted tools (see ToolDirs), put on
	// PATH after the system directories. Each must be absolute for Platform.
	// They are cleaned; a directory already on PATH is dropped (compared
	// case-insensitively on windows), otherwise the order is kept.
	ToolDirs []string

	// SystemRoot is the windows directory, such as C:\Windows: SystemRoot,
	// windir, ComSpec and the system part of PATH derive from it. Required on
	// windows, ignored elsewhere.
	SystemRoot string
}

// Environ returns the complete environment of an op described by in, as
// "KEY=value" strings sorted by key (case-insensitively, the order windows
// keeps its environment block in; ties bytewise), ready for exec.Cmd.Env.
// It holds exactly the variables of docs/decisions.md, Environment, for in.Platform and nothing
// else: there is no way to pass a variable through from the agent.
//
// It fails, naming the field, when the platform is unknown, NodeID, Module,
// Service or (linux, macos) User is empty, Module or Service contains a path
// separator, a path is not absolute for the platform, a tool directory
// contains the PATH list separator (':' on linux and macos, ';' on windows),
// or any value contains a NUL byte.
func Environ(in Input) ([]string, error) {
	if err := in.Platform.check(); err != nil {
		return nil, err
	}
	if err := checkName("node id", in.NodeID, false); err != nil {
		return nil, err
	}
	if err := checkName("module name", in.Module, true); err != nil {
		return nil, err
	}
	if err := checkName("service name", in.Service, true); err != nil {
		return nil, err
	}
	if in.Platform != Windows {
		if err := checkName("user", in.User, false); err != nil {
			return nil, err
		}
	}
	l, err := Paths(in.Platform, in.ModuleData)
	if err != nil {
		return nil, err
	}
	var systemRoot string
	if in.Platform == Windows {
		if in.SystemRoot == "" {
			return nil, fmt.Errorf(`svcenv: system root is empty (windows needs it, such as C:\Windows)`)
		}
		if systemRoot, err = cleanAbs(Windows, "system root", in.SystemRoot); err != nil {
			return nil, err
		}
		if strings.Contains(systemRoot, ";") {
			return nil, fmt.Errorf("svcenv: system root %q contains \";\", the PATH separator of windows", in.SystemRoot)
		}
	}
	pathList, err := searchPath(in.Platform, systemRoot, in.ToolDirs)
	if err != nil {
		return nil, err
	}

	env := map[string]string{
		VarModuleData:   l.ModuleData,
		VarModule:       in.Module,
		VarService:      in.Service,
		VarNodeID:       in.NodeID,
		VarPlatform:     string(in.Platform),
		VarSettingsFile: l.SettingsFile,
		VarToolsFile:    l.ToolsFile,
		VarLimitsFile:   l.LimitsFile,
		"PATH":          pathList,
		"LANG":          "C.UTF-8",
	}
	switch in.Platform {
	case Linux:
		env["HOME"] = l.Home
		env["TMPDIR"] = l.Tmp
		env["XDG_CONFIG_HOME"] = join(Linux, l.Home, ".config")
		env["XDG_CACHE_HOME"] = join(Linux, l.Home, ".cache")
		env["XDG_DATA_HOME"] = join(Linux, l.Home, ".local", "share")
		env["XDG_STATE_HOME"] = join(Linux, l.Home, ".local", "state")
		env["XDG_RUNTIME_DIR"] = l.Run
		env["USER"] = in.User
		env["LOGNAME"] = in.User
	case MacOS:
		env["HOME"] = l.Home
		env["TMPDIR"] = l.Tmp + "/" // macOS convention: confstr(_CS_DARWIN_USER_TEMP_DIR) ends in '/'
		env["USER"] = in.User
		env["LOGNAME"] = in.User
	case Windows:
		env["USERPROFILE"] = l.Home
		env["HOMEDRIVE"] = l.Home[:2] // "C:"
		env["HOMEPATH"] = l.Home[2:]  // "\...\home"
		env["APPDATA"] = l.AppData
		env["LOCALAPPDATA"] = l.LocalAppData
		env["TEMP"] = l.Tmp
		env["TMP"] = l.Tmp
		env["SystemRoot"] = systemRoot
		env["windir"] = systemRoot
		env["PATHEXT"] = windowsPathExt
		env["ComSpec"] = join(Windows, systemRoot, "system32", "cmd.exe")
	}

	keys := make([]string, 0, len(env))
	for k, v := range env {
		if strings.IndexByte(v, 0) >= 0 { // unreachable after the checks above; kept as the last guard
			return nil, fmt.Errorf("svcenv: %s contains a NUL byte", k)
		}
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return envKeyLess(keys[i], keys[j]) })
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k + "=" + env[k]
	}
	return out, nil
}

// envKeyLess orders keys case-insensitively, then bytewise.
func envKeyLess(a, b string) bool {
	ua, ub := strings.ToUpper(a), strings.ToUpper(b)
	if ua != ub {
		return ua < ub
	}
	return a < b
}

func checkName(what, v string, name bool) error {
	switch {
	case v == "":
		return fmt.Errorf("svcenv: %s is empty", what)
	case strings.IndexByte(v, 0) >= 0:
		return fmt.Errorf("svcenv: %s %q contains a NUL byte", what, v)
	case name && strings.ContainsAny(v, `/\`):
		return fmt.Errorf("svcenv: %s %q contains a path separator (want the plain name, not <module>/<service>)", what, v)
	}
	return nil
}

// searchPath builds PATH: the system directories of p, then toolDirs cleaned
// and without the ones already present.
func searchPath(p Platform, systemRoot string, toolDirs []string) (string, error) {
	var dirs []string
	sep := ":"
	switch p {
	case Linux:
		dirs = append(dirs, linuxSystemPath...)
	case MacOS:
		dirs = append(dirs, macosSystemPath...)
	case Windows:
		sep = ";"
		dirs = append(dirs,
			join(Windows, systemRoot, "system32"),
			systemRoot,
			join(Windows, systemRoot, "System32", "Wbem"))
	}
	seen := make(map[string]bool, len(dirs)+len(toolDirs))
	key := func(d string) string {
		if p == Windows {
			return strings.ToUpper(d) // windows paths are case-insensitive
		}
		return d
	}
	for _, d := range dirs {
		seen[key(d)] = true
	}
	for _, raw := range toolDirs {
		d, err := cleanAbs(p, "tool dir", raw)
		if err != nil {
			return "", err
		}
		if strings.Contains(d, sep) {
			return "", fmt.Errorf("svcenv: tool dir %q contains %q, the PATH separator of %s", raw, sep, p)
		}
		if seen[key(d)] {
			continue
		}
		seen[key(d)] = true
		dirs = append(dirs, d)
	}
	return strings.Join(dirs, sep), nil
}
