package conformance

import (
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// entry is what is compared of one path under the module data dir.
// Directories' modification times are left out: a shell's temporary file
// for a here-document, created and removed again, changes nothing kept.
type entry struct {
	mode  fs.FileMode
	size  int64
	mtime int64
	sum   [sha256.Size]byte // regular files
	link  string            // symbolic links
}

// snapshot records every path under dir (dir itself excluded).
func snapshot(dir string) (map[string]entry, error) {
	out := map[string]entry{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == dir {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		e := entry{mode: fi.Mode()}
		switch {
		case fi.Mode().IsRegular():
			e.size, e.mtime = fi.Size(), fi.ModTime().UnixNano()
			if e.sum, err = hashFile(path); err != nil {
				return err
			}
		case fi.Mode()&fs.ModeSymlink != 0:
			if e.link, err = os.Readlink(path); err != nil {
				return err
			}
		}
		rel, _ := filepath.Rel(dir, path)
		out[filepath.ToSlash(rel)] = e
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the module data dir: %w", err)
	}
	return out, nil
}

func hashFile(path string) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	f, err := os.Open(path)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return sum, err
	}
	copy(sum[:], h.Sum(nil))
	return sum, nil
}

// diff says what changed from a to b: created, removed and modified
// paths, at most a few of each; "" when nothing did.
func diff(a, b map[string]entry) string {
	var created, removed, modified []string
	for _, p := range slices.Sorted(maps.Keys(b)) {
		old, ok := a[p]
		switch {
		case !ok:
			created = append(created, p)
		case old != b[p]:
			modified = append(modified, p)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(a)) {
		if _, ok := b[p]; !ok {
			removed = append(removed, p)
		}
	}
	var parts []string
	for _, g := range []struct {
		what  string
		paths []string
	}{{"created", created}, {"removed", removed}, {"modified", modified}} {
		if len(g.paths) > 0 {
			parts = append(parts, g.what+" "+few(g.paths))
		}
	}
	return strings.Join(parts, "; ")
}

// few lists up to 5 paths and counts the rest.
func few(paths []string) string {
	const shown = 5
	if len(paths) <= shown {
		return strings.Join(paths, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(paths[:shown], ", "), len(paths)-shown)
}
