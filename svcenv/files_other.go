//go:build !unix

package svcenv

import (
	"bytes"
	"fmt"
	"os"
)

// secureDir refuses a symbolic link (or junction) or a non-directory at d.
// Windows has no unix modes; the directory inherits the ACL of its parent.
// checkHost has refused an owner already.
func secureDir(d string, _ *Owner) error {
	fi, err := os.Lstat(d)
	if err != nil {
		return fmt.Errorf("svcenv: stat %s: %w", d, unwrapPath(err))
	}
	switch {
	case fi.Mode()&(os.ModeSymlink|os.ModeIrregular) != 0:
		return fmt.Errorf("svcenv: %s is a symbolic link, not a directory; remove it", d)
	case !fi.IsDir():
		return fmt.Errorf("svcenv: %s is not a directory; remove it", d)
	}
	return nil
}

// unchanged says whether path is a regular file that holds data (windows
// has no unix modes, and checkHost refused an owner).
func unchanged(path string, data []byte, _ *Owner) bool {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != int64(len(data)) {
		return false
	}
	got, err := os.ReadFile(path)
	return err == nil && bytes.Equal(got, data)
}

// syncDir does nothing: windows cannot open a directory for syncing, and its
// rename (MoveFileEx) replaces the file in one step.
func syncDir(string) error { return nil }
