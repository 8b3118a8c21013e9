package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// EnvRuntimeDir overrides where svcrun serve announces its socket.
const EnvRuntimeDir = "SVCRUN_RUNTIME_DIR"

// announceFile is where svcrun serve writes the path of its socket, so
// that a command given neither --socket, --config nor $SVCRUN_SOCKET finds
// the svcrun started last when none runs at the default path: a new user
// runs `svcrun serve --config examples/node.toml` in one terminal and
// `svcrun run ... -- echo hi` in another. It is /run/svcrun/socket for
// root (/var/run on macOS), and in a directory of the user's own
// otherwise (the temporary directory's svcrun on Windows).
func announceFile() string {
	if d := os.Getenv(EnvRuntimeDir); d != "" {
		return filepath.Join(d, "socket")
	}
	switch {
	case runtime.GOOS == "windows":
		return filepath.Join(os.TempDir(), "svcrun", "socket")
	case os.Geteuid() == 0 && runtime.GOOS == "darwin":
		return "/var/run/svcrun/socket"
	case os.Geteuid() == 0:
		return "/run/svcrun/socket"
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "svcrun", "socket")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("svcrun-%d", os.Geteuid()), "socket")
}

// announce writes socket to announceFile; the returned func removes the
// file if it still names socket (a later svcrun may have replaced it; the
// check and the removal are not atomic, so a serve starting in that
// instant may find its announcement gone, and commands then need
// --socket or --config).
func announce(socket string) (func(), error) {
	file := announceFile()
	dir := filepath.Dir(file)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := ownDir(dir); err != nil {
		return nil, err
	}
	tmp := fmt.Sprintf("%s.%d", file, os.Getpid())
	if err := os.WriteFile(tmp, []byte(socket+"\n"), 0o644); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, file); err != nil {
		os.Remove(tmp)
		return nil, err
	}
	return func() {
		if announced() == socket {
			os.Remove(file)
		}
	}, nil
}

// announced is the socket svcrun serve announced last, or "" (none, or
// in a directory that is not the user's own).
func announced() string {
	file := announceFile()
	if ownDir(filepath.Dir(file)) != nil {
		return ""
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// ownDir refuses a directory another user could have put there for us.
func ownDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if uid, ok := ownerOf(fi); ok && uid != os.Geteuid() {
		return fmt.Errorf("%s belongs to uid %d, not to this user: %w", dir, uid, fs.ErrPermission)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o022 != 0 { // Windows reports 0777
		return fmt.Errorf("%s is writable by others: %w", dir, errors.ErrUnsupported)
	}
	return nil
}
