package svcenv

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// Owner is the account that must own the module data dir, its directories
// and its files: the run_as user when the agent runs as root. A nil *Owner
// leaves ownership to the agent's own account. Owner is supported on unix
// hosts only.
type Owner struct {
	UID, GID int
}

// Files holds the documents WriteFiles writes. Each must encode as a JSON
// object; a nil value (or nil map) is written as {} so that a service can
// always parse an object.
type Files struct {
	Settings any // the module's settings for this node: settings.json
	Tools    any // its granted host tools, name to absolute path: tools.json
	Limits   any // the owner's caps: limits.json
}

// Prepare creates the directories of l (see Layout.Dirs) with mode 0700,
// sets that mode on the ones that exist already (XDG_RUNTIME_DIR must be
// 0700) and, when owner is not nil, gives them to owner. A directory that
// has that mode and owner already is not changed. The parent of the
// module data dir must exist: it is the agent's <data_dir>/modules, whose
// modes are the agent's business (a service account must be able to
// traverse it).
//
// The directories inside the module data dir are writable by the module's
// services, which may have replaced one with a symbolic link; Prepare refuses
// to follow it (on unix the mode and owner are set through a descriptor
// opened with O_NOFOLLOW), so a service cannot make the agent chmod or chown
// a file elsewhere.
//
// Unlike the rest of the package Prepare touches the host, so l.Platform
// must be the host's platform.
func Prepare(l Layout, owner *Owner) error {
	if err := checkHost(l, owner); err != nil {
		return err
	}
	for _, d := range l.Dirs() {
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("svcenv: create %s: %w", d, unwrapPath(err))
		}
		if err := secureDir(d, owner); err != nil {
			return err
		}
	}
	return nil
}

// WriteFiles writes f into l.SettingsFile, l.ToolsFile and l.LimitsFile as
// UTF-8 JSON (map keys sorted, two-space indent, no HTML escaping, final
// newline), so the same values give the same bytes. All three are encoded
// before any is written. A file that already holds those bytes, with mode
// 0600 and owner, is left alone: an op on a full or read-only data dir
// needs no write that changes nothing. Any other file is replaced
// atomically: a temporary file
// in the same directory is written with mode 0600 (and owner), synced and
// renamed over the target, then the directory is synced; a reader sees the
// old or the new content, never a mix. The three files are not replaced as
// one: a failure may leave some new and some old.
//
// The module data dir must exist (see Prepare), and l.Platform must be the
// host's platform.
func WriteFiles(l Layout, owner *Owner, f Files) error {
	if err := checkHost(l, owner); err != nil {
		return err
	}
	type file struct {
		path string
		data []byte
	}
	var files []file
	for _, x := range []struct {
		path string
		v    any
	}{{l.SettingsFile, f.Settings}, {l.ToolsFile, f.Tools}, {l.LimitsFile, f.Limits}} {
		data, err := encodeObject(x.v)
		if err != nil {
			return fmt.Errorf("svcenv: %s: %w", x.path, err)
		}
		files = append(files, file{x.path, data})
	}
	for _, x := range files {
		if unchanged(x.path, x.data, owner) {
			continue
		}
		if err := writeAtomic(x.path, x.data, owner); err != nil {
			return err
		}
	}
	return nil
}

// encodeObject encodes v as a JSON object followed by a newline.
func encodeObject(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	switch {
	case bytes.Equal(data, []byte("null\n")):
		return []byte("{}\n"), nil
	case data[0] != '{':
		return nil, fmt.Errorf("want a JSON object, got %s", jsonKind(data[0]))
	}
	return data, nil
}

func jsonKind(c byte) string {
	switch c {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	default:
		return "a number"
	}
}

func writeAtomic(path string, data []byte, owner *Owner) (err error) {
	dir, base := filepath.Split(path)
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("svcenv: write %s: %w", path, unwrapPath(err))
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(0o600); err != nil {
		return fmt.Errorf("svcenv: write %s: %w", path, unwrapPath(err))
	}
	if owner != nil {
		if err := tmp.Chown(owner.UID, owner.GID); err != nil {
			return fmt.Errorf("svcenv: write %s: chown: %w", path, unwrapPath(err))
		}
	}
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("svcenv: write %s: %w", path, unwrapPath(err))
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("svcenv: write %s: sync: %w", path, unwrapPath(err))
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("svcenv: write %s: %w", path, unwrapPath(err))
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("svcenv: write %s: rename: %w", path, unwrapPath(err))
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("svcenv: write %s: sync directory: %w", path, unwrapPath(err))
	}
	return nil
}

// unwrapPath drops the path of a *fs.PathError (a temporary name, or one the
// message already gives) and keeps the cause, so messages are deterministic.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

func checkHost(l Layout, owner *Owner) error {
	if err := l.Platform.check(); err != nil {
		return err
	}
	if host := HostPlatform(); l.Platform != host {
		return fmt.Errorf("svcenv: layout is for %s but this host is %s", l.Platform, host)
	}
	if l.ModuleData == "" {
		return errors.New("svcenv: layout has no module data dir (use Paths)")
	}
	if owner != nil && runtime.GOOS == "windows" {
		return errors.New("svcenv: an owner is not supported on windows (the data dir's ACL decides access)")
	}
	return nil
}
