//go:build !unix

package svcenv

import (
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

// syncDir does nothing: windows cannot open a directory for syncing, and its
// rename (MoveFileEx) replaces the file in one step.
func syncDir(string) error { return nil }
