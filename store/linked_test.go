package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oarbank/svcrun/engine"
)

// TestCheckLinked: a state file or log deleted (the whole data dir, or one
// file) or replaced under an open DB is found by CheckLinked, which names
// the file and what to do; the finding stays, also once a file is back at
// the path; an untouched DB is linked.
func TestCheckLinked(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault func(t *testing.T, dir, path string)
		want  string // "" linked, else a part of the error
	}{
		{"untouched", func(*testing.T, string, string) {}, ""},
		{"data dir removed", func(t *testing.T, dir, _ string) { must(t, os.RemoveAll(dir)) }, "state file %s was deleted"},
		{"state file removed", func(t *testing.T, _, path string) { must(t, os.Remove(path)) }, "state file %s was deleted"},
		{"log removed", func(t *testing.T, _, path string) { must(t, os.Remove(path+".wal")) },
			"write-ahead log %s.wal was deleted"},
		{"state file replaced", func(t *testing.T, _, path string) {
			must(t, os.Rename(path, path+".old"))
			must(t, os.WriteFile(path, []byte("x"), 0o600))
		}, "state file %s was replaced"},
		{"removed and restored", func(t *testing.T, dir, path string) {
			must(t, os.Rename(dir, dir+".bak"))
			must(t, os.MkdirAll(dir, 0o700))
			for _, f := range []string{path, path + ".wal"} {
				b, err := os.ReadFile(filepath.Join(dir+".bak", filepath.Base(f)))
				must(t, err)
				must(t, os.WriteFile(f, b, 0o600))
			}
		}, "state file %s was replaced"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			path := filepath.Join(dir, "state.db")
			db, err := Open(path, Options{})
			must(t, err)
			defer db.Close()
			must(t, db.CheckLinked())
			tc.fault(t, dir, path)
			err = db.CheckLinked()
			if tc.want == "" {
				if err != nil || db.Unlinked() != nil {
					t.Fatalf("untouched: %v, %v", err, db.Unlinked())
				}
				return
			}
			want := strings.ReplaceAll(tc.want, "%s", path)
			if !errors.Is(err, ErrUnlinked) || !strings.Contains(err.Error(), want) ||
				!strings.Contains(err.Error(), "restart svcrun") {
				t.Fatalf("CheckLinked = %v, want ErrUnlinked with %q and what to do", err, want)
			}
			if !errors.Is(db.Unlinked(), ErrUnlinked) {
				t.Fatalf("Unlinked after the check = %v", db.Unlinked())
			}
			// A file brought back at the path is not the open one (a new
			// file renamed into place: the open one must not be truncated,
			// bbolt maps it).
			must(t, os.MkdirAll(dir, 0o700))
			must(t, os.WriteFile(path+".back", nil, 0o600))
			must(t, os.Rename(path+".back", path))
			if err := db.CheckLinked(); !errors.Is(err, ErrUnlinked) {
				t.Fatalf("after a file is back at the path: %v", err)
			}
			// The loop's own writes go on into the open files.
			must(t, db.Apply([]engine.Effect{engine.PutLease{Lease: lease("l1")}}))
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkCheckLinked is the cost of one look at the data dir, which the
// agent makes every 2 s whatever the number of services or leases.
func BenchmarkCheckLinked(b *testing.B) {
	db, err := Open(filepath.Join(b.TempDir(), "state.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for b.Loop() {
		if err := db.CheckLinked(); err != nil {
			b.Fatal(err)
		}
	}
}
