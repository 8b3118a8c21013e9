package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/oarbank/svcrun/runtime"
)

// SchemaVersion is the layout version this package writes and reads.
const SchemaVersion = 1

// DefaultLockTimeout is how long Open waits for the file lock by default.
const DefaultLockTimeout = time.Second

var (
	// ErrLocked: another process (another svcrun) has the state file open.
	ErrLocked = errors.New("state file locked")
	// ErrCorrupt: the file is damaged or is not an svcrun state file.
	ErrCorrupt = errors.New("state file damaged")
	// ErrNewerVersion: the file has a schema version this svcrun does not know.
	ErrNewerVersion = errors.New("state file from a newer svcrun")
)

var (
	metaBucket     = []byte("meta")
	leasesBucket   = []byte("leases")
	servicesBucket = []byte("services")
	versionKey     = []byte("version")
)

// Options tunes Open. The zero value is the default.
type Options struct {
	// LockTimeout is how long Open waits for another process to release the
	// file before failing with ErrLocked. Default DefaultLockTimeout.
	LockTimeout time.Duration
}

// DB is an open state file. It implements runtime.Store.
type DB struct {
	bolt *bolt.DB
	path string
}

var _ runtime.Store = (*DB)(nil)

// kindError is an error for people that still matches its kind with
// errors.Is.
type kindError struct {
	kind error
	msg  string
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

func corruptError(path string, why error) error {
	return &kindError{ErrCorrupt, fmt.Sprintf("state file %s is damaged or is not an svcrun state file (%v). "+
		"svcrun does not write to it, so nothing already stored is lost. "+
		"Restore it from a backup, or move it aside (mv %s %s.damaged) to start with an empty state: "+
		"svcrun then forgets the leases and service failures it held", path, why, path, path)}
}

// Open opens the state file at path, creating it (and its directory) if it
// does not exist, and holds an exclusive lock on it until Close.
func Open(path string, opts Options) (*DB, error) {
	timeout := opts.LockTimeout
	if timeout <= 0 {
		timeout = DefaultLockTimeout
	}
	dir := filepath.Dir(path)
	if err := mkdirAll(dir); err != nil {
		return nil, fmt.Errorf("create the directory of state file %s: %w", path, err)
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		if err := create(path, timeout); err != nil {
			return nil, fmt.Errorf("create state file %s: %w", path, err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("open state file: %w", err)
	}

	// First a read-only pass (shared lock): bbolt panics on some damaged
	// pages while opening read-write, and a panicking bolt.Open leaks its
	// file and lock; read-only, the checks below report damage as errors.
	if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
		bdb, err := openBolt(path, timeout, true)
		if err != nil {
			return nil, err
		}
		err = checkSchema(bdb, path)
		bdb.Close()
		if err != nil {
			return nil, err
		}
	}
	bdb, err := openBolt(path, timeout, false)
	if err != nil {
		return nil, err
	}
	db := &DB{bolt: bdb, path: path}
	var fresh bool
	err = db.bolt.View(func(tx *bolt.Tx) error { fresh = tx.Bucket(metaBucket) == nil; return nil })
	if err == nil && fresh {
		err = db.bolt.Update(db.initIfEmpty)
	}
	if err != nil {
		bdb.Close()
		return nil, err
	}
	removeLeftovers(path)
	return db, nil
}

// openBolt opens path with bbolt and maps its errors to ours.
func openBolt(path string, timeout time.Duration, readOnly bool) (bdb *bolt.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			bdb, err = nil, corruptError(path, fmt.Errorf("%v", r))
		}
	}()
	bdb, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout, ReadOnly: readOnly})
	switch {
	case err == nil:
		return bdb, nil
	case errors.Is(err, bolt.ErrTimeout):
		holder := "another svcrun"
		if pid, ok := lockHolder(path); ok {
			holder = fmt.Sprintf("another svcrun (pid %d)", pid)
		}
		return nil, &kindError{ErrLocked, fmt.Sprintf("state file %s is locked by %s: "+
			"only one svcrun may use a data dir at a time; stop the other one, or give this one another data_dir", path, holder)}
	case errors.Is(err, bolt.ErrInvalid), errors.Is(err, bolt.ErrChecksum), errors.Is(err, bolt.ErrVersionMismatch):
		return nil, corruptError(path, err)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return nil, fmt.Errorf("open state file %s: %w", path, err)
}

// checkSchema checks the version, the buckets and bbolt's own consistency
// (every page reachable or free, well-formed, keys in order). A file
// without any bucket passes: it holds nothing and is initialised.
func checkSchema(bdb *bolt.DB, path string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = corruptError(path, fmt.Errorf("%v", r))
		}
	}()
	return bdb.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(metaBucket)
		if meta == nil {
			if !isEmpty(tx) {
				return corruptError(path, errors.New(`it has no "meta" bucket`))
			}
		} else {
			v := meta.Get(versionKey)
			n, err := strconv.Atoi(string(v))
			switch {
			case v == nil:
				return corruptError(path, errors.New("it has no schema version"))
			case err != nil || n < 1:
				return corruptError(path, fmt.Errorf("its schema version %q is not valid", v))
			case n > SchemaVersion:
				return &kindError{ErrNewerVersion, fmt.Sprintf("state file %s has schema version %d, but this svcrun knows only version %d: "+
					"it was written by a newer svcrun. Run that newer svcrun (or a later one); this one leaves the file untouched",
					path, n, SchemaVersion)}
			}
			for _, b := range [][]byte{leasesBucket, servicesBucket} {
				if tx.Bucket(b) == nil {
					return corruptError(path, fmt.Errorf("it has no %q bucket", b))
				}
			}
		}
		var first error
		for err := range tx.Check() { // drain it all: the checker goroutine uses tx
			if first == nil {
				first = err
			}
		}
		if first != nil {
			return corruptError(path, first)
		}
		return nil
	})
}

func isEmpty(tx *bolt.Tx) bool {
	errNotEmpty := errors.New("not empty")
	return tx.ForEach(func([]byte, *bolt.Bucket) error { return errNotEmpty }) == nil
}

// initIfEmpty writes the version-1 layout into a file without any bucket
// (a zero-length file: create never leaves one, but a person might).
func (db *DB) initIfEmpty(tx *bolt.Tx) error {
	if tx.Bucket(metaBucket) != nil {
		return nil
	}
	if !isEmpty(tx) { // changed since checkSchema
		return corruptError(db.path, errors.New(`it has no "meta" bucket`))
	}
	return initSchema(tx)
}

func initSchema(tx *bolt.Tx) error {
	meta, err := tx.CreateBucket(metaBucket)
	if err != nil {
		return err
	}
	if err := meta.Put(versionKey, []byte(strconv.Itoa(SchemaVersion))); err != nil {
		return err
	}
	for _, b := range [][]byte{leasesBucket, servicesBucket} {
		if _, err := tx.CreateBucket(b); err != nil {
			return err
		}
	}
	return nil
}

// create builds a whole version-1 store in a temporary file and links it
// to path, so path never names a half-made file.
func create(path string, timeout time.Duration) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, base+".new-*") // mode 0600
	if err != nil {
		return err
	}
	tmp := f.Name()
	f.Close()
	defer os.Remove(tmp)
	bdb, err := bolt.Open(tmp, 0o600, &bolt.Options{Timeout: timeout})
	if err != nil {
		return err
	}
	err = bdb.Update(initSchema)
	if cerr := bdb.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	// Link never replaces: if another process created path meanwhile, we
	// open its file, and its lock decides.
	if err := os.Link(tmp, path); err != nil {
		if _, serr := os.Stat(path); serr == nil {
			return nil
		}
		// A file system without hard links: rename (replaces a file made
		// in the instant since the Stat above; only at first creation).
		if err := os.Rename(tmp, path); err != nil {
			return err
		}
	}
	return syncDir(dir)
}

// mkdirAll creates dir and its missing parents with mode 0700 and makes
// their names durable.
func mkdirAll(dir string) error {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil || !errors.Is(err, fs.ErrNotExist) {
			break
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, d := range missing {
		if err := syncDir(filepath.Dir(d)); err != nil {
			return err
		}
	}
	return nil
}

// syncDir makes the names in dir durable. Windows has no directory fsync;
// some file systems refuse it, which is not an error.
func syncDir(dir string) error {
	if goruntime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, errors.ErrUnsupported) {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

// removeLeftovers removes temporary files of a creation that crashed. It
// runs with the lock of path held; a creation racing with it finds path
// and opens it instead.
func removeLeftovers(path string) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	names, _ := filepath.Glob(filepath.Join(dir, globEscape(base)+".new-*"))
	for _, n := range names {
		os.Remove(n)
	}
}

func globEscape(s string) string {
	var b []byte
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', '\\':
			if goruntime.GOOS != "windows" {
				b = append(b, '\\')
			}
		}
		b = append(b, s[i])
	}
	return string(b)
}

// Path is the state file's path.
func (db *DB) Path() string { return db.path }

// Apply writes a batch of PutLease, DeleteLease and PutService effects in
// one transaction, durable when Apply returns nil. Any other effect, or a
// record without id or name, fails the whole batch and writes nothing.
func (db *DB) Apply(batch []runtime.Effect) error {
	if len(batch) == 0 {
		return nil
	}
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		leases, services := tx.Bucket(leasesBucket), tx.Bucket(servicesBucket)
		for i, f := range batch {
			var err error
			switch f := f.(type) {
			case runtime.PutLease:
				if f.Lease.ID == "" {
					return fmt.Errorf("effect %d (put-lease) has an empty lease id", i)
				}
				var v []byte
				if v, err = json.Marshal(f.Lease); err == nil {
					err = leases.Put([]byte(f.Lease.ID), v)
				}
			case runtime.DeleteLease:
				if f.Lease == "" {
					return fmt.Errorf("effect %d (delete-lease) has an empty lease id", i)
				}
				err = leases.Delete([]byte(f.Lease))
			case runtime.PutService:
				if f.Service.Name == "" {
					return fmt.Errorf("effect %d (put-service) has an empty service name", i)
				}
				var v []byte
				if v, err = json.Marshal(f.Service); err == nil {
					err = services.Put([]byte(f.Service.Name), v)
				}
			default:
				return fmt.Errorf("effect %d is a %T, not a persistence effect (a driver bug)", i, f)
			}
			if err != nil {
				return fmt.Errorf("effect %d: %w", i, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("state file %s: batch of %d effects not written: %w", db.path, len(batch), err)
	}
	return nil
}

// State returns every stored lease, sorted by id, and every service record,
// sorted by name.
func (db *DB) State() (st runtime.State, err error) {
	defer func() {
		if r := recover(); r != nil {
			st, err = runtime.State{}, corruptError(db.path, fmt.Errorf("%v", r))
		}
	}()
	err = db.bolt.View(func(tx *bolt.Tx) error {
		// bbolt iterates keys in byte order, which is Go's string order.
		err := tx.Bucket(leasesBucket).ForEach(func(k, v []byte) error {
			var r runtime.LeaseRecord
			if err := decode(v, &r); err != nil {
				return db.badRecord(leasesBucket, k, "the record does not decode: "+err.Error())
			}
			if string(r.ID) != string(k) {
				return db.badRecord(leasesBucket, k, fmt.Sprintf("the record's id is %q", r.ID))
			}
			st.Leases = append(st.Leases, r)
			return nil
		})
		if err != nil {
			return err
		}
		return tx.Bucket(servicesBucket).ForEach(func(k, v []byte) error {
			var r runtime.ServiceRecord
			if err := decode(v, &r); err != nil {
				return db.badRecord(servicesBucket, k, "the record does not decode: "+err.Error())
			}
			if r.Name != string(k) {
				return db.badRecord(servicesBucket, k, fmt.Sprintf("the record's name is %q", r.Name))
			}
			st.Services = append(st.Services, r)
			return nil
		})
	})
	if err != nil {
		return runtime.State{}, err
	}
	return st, nil
}

func decode(v []byte, r any) error {
	if v == nil {
		return errors.New("a nested bucket, not a record")
	}
	return json.Unmarshal(v, r)
}

func (db *DB) badRecord(bucket, key []byte, why string) error {
	return corruptError(db.path, fmt.Errorf("bucket %q key %q: %s", bucket, key, why))
}

// Close releases the file and its lock.
func (db *DB) Close() error { return db.bolt.Close() }
