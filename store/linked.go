package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/oarbank/svcrun/errdefs"
)

// ErrUnlinked is the state file or its log no longer linked where svcrun
// opened it: it is errdefs.ErrUnlinked, which the API answers with 507
// store_unlinked.
var ErrUnlinked = errdefs.ErrUnlinked

// opened is a file of the store as it was opened: its path and identity.
type opened struct {
	what string // "state file", "write-ahead log"
	path string
	fi   fs.FileInfo
}

// unlinkedError says which file is gone and what to do.
type unlinkedError struct {
	what, path, how string
}

func (e *unlinkedError) Error() string {
	return fmt.Sprintf("the %s %s was %s under svcrun (its open file is no longer linked at that path): "+
		"leases can no longer be kept, so every request that needs a write is refused; "+
		"restart svcrun to start from an empty state (its running services are adopted)", e.what, e.path, e.how)
}

func (e *unlinkedError) Unwrap() error { return ErrUnlinked }

// remember records the identity of the state file and its log, once both
// are open, for CheckLinked.
func (db *DB) remember() error {
	for _, f := range []struct{ what, path string }{{"state file", db.path}, {"write-ahead log", db.logPath()}} {
		fi, err := os.Stat(f.path)
		if err != nil {
			return fmt.Errorf("state file %s: %w", db.path, err)
		}
		db.opened = append(db.opened, opened{f.what, f.path, fi})
	}
	return nil
}

// CheckLinked stats the paths of the state file and its log and compares
// them with the files svcrun has open: a data dir deleted (rm -rf) or a
// file replaced under svcrun leaves it writing into files nobody will read
// again. It returns the error wrapping ErrUnlinked that says so, from then
// on without looking again: an unlinked file cannot come back (a file
// restored at the path is another file), so the state stays until
// svcrun restarts. A stat that fails otherwise (EACCES, EIO) proves
// nothing and is not an answer. Two stat calls; safe for concurrent use.
func (db *DB) CheckLinked() error {
	if err := db.Unlinked(); err != nil {
		return err
	}
	for _, o := range db.opened {
		fi, err := os.Stat(o.path)
		how := ""
		switch {
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
			how = "deleted"
		case err != nil:
			continue
		case !os.SameFile(fi, o.fi):
			how = "replaced"
		default:
			continue
		}
		e := &unlinkedError{o.what, o.path, how}
		db.unlinked.CompareAndSwap(nil, e)
		return db.Unlinked()
	}
	return nil
}

// Unlinked is the error wrapping ErrUnlinked once CheckLinked has found
// the state file or its log unlinked, else nil. It does no I/O.
func (db *DB) Unlinked() error {
	if e := db.unlinked.Load(); e != nil {
		return e
	}
	return nil
}
