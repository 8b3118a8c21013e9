// Package svcenv owns the environment a service or probe op runs in
// (docs/decisions.md, Environment): exactly which variables it gets on
// each platform, where its home, temporary and runtime directories are, and
// the settings, tools and limits files it reads.
//
// # Pure by design
//
// Environ, Paths and ToolDirs are pure functions: every fact they use is a
// field of their input, none is read from the host (no os.Getenv, no
// filepath, whose separator is the host's, no user lookup). The same Input
// gives the same environment on every machine, so the linux, macos and
// windows environments are all tested on any OS, the simulator can show the
// environment of a service it never spawns, and a review of what reaches a
// service is a review of one function.
//
// Prepare and WriteFiles are the only functions that touch the host. They
// are kept apart and take a Layout, which Paths computes.
//
// # What a service gets
//
// Only the variables listed here; nothing of the agent's own environment
// leaks (it may hold secrets), and there is no way to pass one through. On
// every platform:
//
//	OARBANK_MODULE_DATA    the module data dir, <data_dir>/modules/<module>
//	OARBANK_MODULE         the module name
//	OARBANK_SERVICE        the service's own name (not <module>/<service>), or the probe's name
//	OARBANK_NODE_ID        the node id
//	OARBANK_PLATFORM       linux, macos or windows
//	OARBANK_SETTINGS_FILE  <data>/settings.json
//	OARBANK_TOOLS_FILE     <data>/tools.json
//	OARBANK_LIMITS_FILE    <data>/limits.json
//	PATH                   the system directories, then the granted tools' directories
//	LANG                   C.UTF-8
//
// On linux: HOME=<data>/home, TMPDIR=<data>/tmp, XDG_CONFIG_HOME,
// XDG_CACHE_HOME, XDG_DATA_HOME and XDG_STATE_HOME under that home (.config,
// .cache, .local/share, .local/state), XDG_RUNTIME_DIR=<data>/run, USER and
// LOGNAME. PATH starts /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin.
//
// On macos: HOME=<data>/home, TMPDIR=<data>/tmp/ (with the trailing slash
// macOS gives it), USER and LOGNAME. PATH starts
// /usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin; nothing else, not even
// /opt/homebrew/bin, unless a granted tool lives there.
//
// On windows: USERPROFILE=<data>\home, HOMEDRIVE and HOMEPATH split from it
// (C: and \...\home), APPDATA=<home>\AppData\Roaming,
// LOCALAPPDATA=<home>\AppData\Local, TEMP and TMP=<data>\tmp, SystemRoot and
// windir (an input, such as C:\Windows), PATHEXT=.COM;.EXE;.BAT;.CMD and
// ComSpec=<SystemRoot>\system32\cmd.exe. PATH, separated by ';', starts
// <SystemRoot>\system32;<SystemRoot>;<SystemRoot>\System32\Wbem. The module
// data dir must have a drive letter.
//
// Tool directories are cleaned and appended in the given order (ToolDirs
// orders them by tool name); one already on PATH is dropped.
//
// # Files
//
// settings.json, tools.json and limits.json lie directly in the module data
// dir, next to home and tmp. They are UTF-8 JSON objects, encoded
// deterministically (sorted map keys), because environment sizes differ per
// OS. WriteFiles replaces each atomically with mode 0600; the agent calls it
// before the module's first op and again when the node configuration
// changes. A file (or directory, for Prepare) that is already as it would
// be written is not touched, so that a data dir that is full or read-only
// does not stop the ops of a module whose configuration did not change. The files and directories
// belong to a module, not to a service:
// its services and probes share them.
//
// # Ownership
//
// When the agent runs as root and its services as run_as, the directories and
// files must belong to that account, or a 0600 file is unreadable to the
// service: pass an Owner to Prepare and WriteFiles. The module data dir is
// writable by the module's services, so Prepare never follows a symbolic
// link a service may have left where a directory should be.
package svcenv
