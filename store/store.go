package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/oarbank/svcrun/errdefs"
	"github.com/oarbank/svcrun/internal/flock"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/oarbank/svcrun/engine"
)

// SchemaVersion is the layout version this package writes and reads.
const SchemaVersion = 2

// DefaultLockTimeout is how long Open waits for the file lock by default.
const DefaultLockTimeout = time.Second

var (
	// ErrLocked: another process (another svcrun) has the state file open.
	ErrLocked = errors.New("state file locked")
	// ErrCorrupt: the file is damaged or is not an svcrun state file.
	ErrCorrupt = errors.New("state file damaged")
	// ErrNewerVersion: the file has a schema version this svcrun does not know.
	ErrNewerVersion = errors.New("state file from a newer svcrun")
	// ErrFull: the data dir has no space left for a checkpoint of the log
	// into the state file (ENOSPC or EDQUOT). Nothing stored is lost; what
	// can wait (new and renewed leases) is refused until space returns.
	// It is errdefs.ErrFull, which the API answers with 507 store_full.
	ErrFull = errdefs.ErrFull
)

// fullError is a write that found no space: the data dir, and the error of
// the write (wrapping the syscall's).
type fullError struct {
	dir string
	err error
}

func (e *fullError) Error() string {
	reason := e.err.Error()
	var errno syscall.Errno
	if errors.As(e.err, &errno) {
		reason = errno.Error()
	}
	return fmt.Sprintf("the data dir is full: %s: %s", e.dir, reason)
}

func (e *fullError) Unwrap() []error { return []error{ErrFull, e.err} }

func noSpace(err error) bool { return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) }

// While the data dir is full, the checkpoint is tried again after a wait
// that doubles from fullRetryMin to fullRetryMax.
const (
	fullRetryMin = time.Second
	fullRetryMax = 30 * time.Second
)

var (
	metaBucket     = []byte("meta")
	leasesBucket   = []byte("leases")
	servicesBucket = []byte("services")
	versionKey     = []byte("version")
	idKey          = []byte("id")
	walSeqKey      = []byte("wal_seq")
	walOpenKey     = []byte("wal_open")
)

// Options tunes Open. The zero value is the default.
type Options struct {
	// LockTimeout is how long Open waits for another process to release the
	// file before failing with ErrLocked. Default DefaultLockTimeout.
	LockTimeout time.Duration
	// LogBytes is the size of the write-ahead log created with a new
	// store (an existing log keeps its size); a checkpoint runs whenever
	// the next batch would pass three quarters of it (the last quarter is
	// the reserve for a full data dir). Default DefaultLogBytes, at least
	// MinLogBytes.
	LogBytes int64
	// OnFull, if set, is called when the data dir becomes full (err wraps
	// ErrFull) and when a checkpoint succeeds again (err nil). It is
	// called with the DB locked: it must not call the DB.
	OnFull func(err error)

	seam seam
}

// seam is where the fault tests fail the store's writes: log wraps the
// log's file, update runs a transaction of the state file.
type seam struct {
	log    func(logDev) logDev
	update func(b *bolt.DB, fn func(*bolt.Tx) error) error
}

// DB is an open state file. It implements engine.Store.
type DB struct {
	bolt *bolt.DB
	path string

	mu  sync.Mutex
	log *logFile
	// seq is the number of the last batch written (to the log or the state
	// file); pending maps what the log holds beyond the state file, by
	// bucket and key, to its value (nil: deleted).
	seq     uint64
	pending map[pendingKey][]byte
	enc     []byte
	// failed is set when a log write failed: what reached the disk is
	// unknown, so no later batch may be numbered after it.
	failed error
	// full is set while a checkpoint finds no space: the state file is as
	// it was, the log keeps everything beyond it, and new records go into
	// the log's reserve. retryAt is the next checkpoint attempt; backoff
	// the wait before the one after it.
	full    atomic.Pointer[fullError]
	retryAt time.Time
	backoff time.Duration
	onFull  func(error)
	seam    seam
	// opened are the state file and its log as opened; unlinked is set
	// once CheckLinked finds one of them gone from its path.
	opened   []opened
	unlinked atomic.Pointer[unlinkedError]
}

type pendingKey struct {
	bucket byte // opPutLease (leases) or opPutService (services)
	key    string
}

var _ engine.Store = (*DB)(nil)

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
		"Restore it and its write-ahead log from a backup, or move both aside (mv %s %s.damaged; mv %s.wal "+
		"%s.wal.damaged) to start with an empty state: "+
		"svcrun then forgets the leases and service failures it held", path, why, path, path, path, path)}
}

// Open opens the state file at path, creating it (and its directory) if it
// does not exist, and holds an exclusive lock on it until Close.
func Open(path string, opts Options) (*DB, error) {
	timeout := opts.LockTimeout
	if timeout <= 0 {
		timeout = DefaultLockTimeout
	}
	logBytes := opts.LogBytes
	if logBytes <= 0 {
		logBytes = DefaultLogBytes
	}
	logBytes = max(logBytes, MinLogBytes)
	dir := filepath.Dir(path)
	if err := MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create the directory of state file %s: %w", path, err)
	}
	_, logErr := os.Stat(path + ".wal")
	hasLog := logErr == nil
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		if hasLog {
			// A new state file would not be the log's: refuse before
			// writing anything, the log holds the latest batches.
			return nil, logError(path,
				"the state file is missing, but its log is here (the log holds only the latest batches, the state file the rest)")
		}
		if err := create(path, timeout); err != nil {
			return nil, fmt.Errorf("create state file %s: %w", path, err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("open state file: %w", err)
	}

	// First a read-only pass (shared lock): bbolt panics on some damaged
	// pages while opening read-write, and a panicking bolt.Open leaks its
	// file and lock; read-only, the checks below report damage as errors.
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("open state file: %w", err)
	}
	if fi.Size() == 0 && hasLog {
		// bbolt would initialise it: a state file svcrun made is never
		// empty (see create), so this one was cut short.
		return nil, corruptError(path, errors.New("it is empty (0 bytes) but has a write-ahead log: it was cut short"))
	}
	if fi.Size() > 0 {
		// bbolt maps the file: a page beyond its end is a SIGBUS, not an
		// error, so the size is checked against the meta page first.
		if err := checkSize(path); err != nil {
			return nil, err
		}
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
	db := &DB{bolt: bdb, path: path, pending: map[pendingKey][]byte{}, onFull: opts.OnFull, seam: opts.seam}
	if err := db.recover(logBytes); err != nil {
		if db.log != nil {
			db.log.f.Close()
		}
		bdb.Close()
		return nil, err
	}
	if err := db.remember(); err != nil {
		db.log.f.Close()
		bdb.Close()
		return nil, err
	}
	removeLeftovers(path)
	return db, nil
}

// recover brings the state file to its current layout and replays into it
// what its write-ahead log holds beyond it.
func (db *DB) recover(logBytes int64) error {
	var id string
	var inUse bool
	read := func(tx *bolt.Tx) error {
		meta := tx.Bucket(metaBucket)
		if meta == nil || string(meta.Get(versionKey)) == "1" {
			return nil
		}
		id = string(meta.Get(idKey))
		seq, err := strconv.ParseUint(string(meta.Get(walSeqKey)), 10, 64)
		if len(id) != 32 || err != nil {
			return corruptError(db.path, fmt.Errorf("its id %q or log position %q is not valid", id, meta.Get(walSeqKey)))
		}
		db.seq = seq
		inUse = string(meta.Get(walOpenKey)) == "1"
		return nil
	}
	// Read first: a file refused below must not have been written to.
	err := db.bolt.View(read)
	if err == nil && id == "" { // an empty file, or version 1 (no log)
		if _, serr := os.Stat(db.logPath()); serr == nil {
			return db.badLog("the state file has no log of its own (it is empty or from a svcrun without one), so " +
				"this log belongs to another state file")
		}
		err = db.bolt.Update(func(tx *bolt.Tx) error {
			if err := db.initIfEmpty(tx); err != nil {
				return err
			}
			if meta := tx.Bucket(metaBucket); string(meta.Get(versionKey)) == "1" {
				if err := upgradeFrom1(meta); err != nil {
					return err
				}
			}
			return read(tx)
		})
	}
	if err != nil {
		return err
	}
	l, recs, end, err := db.openLog(id, db.seq, inUse, logBytes)
	if err != nil {
		return err
	}
	db.log = l
	for _, r := range recs {
		db.fold(r.payload)
		db.seq = r.seq
	}
	// From here until Close the log may hold what the state file does not.
	err = db.commit(nil, true)
	if err != nil && db.failed == nil { // no space: new records follow the old
		db.log.off = end
		db.setFull(err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("state file %s: replay its write-ahead log: %w", db.path, err)
	}
	return nil
}

// upgradeFrom1 gives a version-1 store what version 2 adds: an id and
// the log position.
func upgradeFrom1(meta *bolt.Bucket) error {
	if err := meta.Put(idKey, []byte(newStoreID())); err != nil {
		return err
	}
	if err := meta.Put(walSeqKey, []byte("0")); err != nil {
		return err
	}
	return meta.Put(versionKey, []byte(strconv.Itoa(SchemaVersion)))
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
	case errors.Is(err, berrors.ErrTimeout):
		holder := "another svcrun"
		if pid, ok := flock.Holder(path); ok {
			holder = fmt.Sprintf("another svcrun (pid %d)", pid)
		}
		return nil, &kindError{ErrLocked, fmt.Sprintf("state file %s is locked by %s: "+
			"only one svcrun may use a data dir at a time; stop the other one, or give this one another data_dir", path, holder)}
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum),
		errors.Is(err, berrors.ErrVersionMismatch):
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
				return &kindError{ErrNewerVersion,
					fmt.Sprintf("state file %s has schema version %d, but this svcrun knows only version %d: "+
						"it was written by a newer svcrun. Run that newer svcrun (or a later one); this one leaves the file untouched",
						path, n, SchemaVersion)}
			}
			for _, b := range [][]byte{leasesBucket, servicesBucket} {
				if tx.Bucket(b) == nil {
					return corruptError(path, fmt.Errorf("it has no %q bucket", b))
				}
			}
		}
		if meta != nil {
			if err := checkRecords(tx, path); err != nil {
				return err
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

// checkRecords decodes every record as State will, so that a file State
// would refuse is refused before Open writes to it.
func checkRecords(tx *bolt.Tx, path string) error {
	err := tx.Bucket(leasesBucket).ForEach(func(k, v []byte) error {
		var r engine.LeaseRecord
		return checkRecord(path, leasesBucket, k, v, &r, func() string { return string(r.ID) })
	})
	if err != nil {
		return err
	}
	return tx.Bucket(servicesBucket).ForEach(func(k, v []byte) error {
		var r engine.ServiceRecord
		return checkRecord(path, servicesBucket, k, v, &r, func() string { return r.Name })
	})
}

// checkRecord decodes v into r and checks that its id (or name) is its key.
func checkRecord(path string, bucket, k, v []byte, r any, id func() string) error {
	if err := decode(v, r); err != nil {
		return badRecord(path, bucket, k, "the record does not decode: "+err.Error())
	}
	if got := id(); got != string(k) {
		what := "id"
		if bytes.Equal(bucket, servicesBucket) {
			what = "name"
		}
		return badRecord(path, bucket, k, fmt.Sprintf("the record's %s is %q", what, got))
	}
	return nil
}

// bbolt's meta page (go.etcd.io/bbolt/internal/common): after the page
// header (16 bytes), magic, version, page size, flags, root bucket (16
// bytes), freelist page, high-water page id, txid, FNV-64a of the 56 bytes
// before it.
const (
	boltMagic       = 0xED0CDAED
	boltVersion     = 2
	boltPageHeader  = 16
	boltMetaSumSize = 56
)

// checkSize refuses a file shorter than its meta page says: bbolt would map
// pages past its end and die of SIGBUS at the first read of one. The meta
// page bbolt would use is the valid one with the higher txid; a file
// without a valid one is left to bbolt, which refuses it.
func checkSize(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open state file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("open state file: %w", err)
	}
	var best struct{ pgid, txid, pageSize uint64 }
	found := false
	meta := func(off int64) (pageSize uint64, ok bool) {
		var b [boltPageHeader + boltMetaSumSize + 8]byte
		if _, err := f.ReadAt(b[:], off); err != nil {
			return 0, false
		}
		m := b[boltPageHeader:]
		h := fnv.New64a()
		h.Write(m[:boltMetaSumSize])
		le := binary.LittleEndian
		if le.Uint32(m) != boltMagic || le.Uint32(m[4:]) != boltVersion || le.Uint64(m[boltMetaSumSize:]) != h.Sum64() {
			return 0, false
		}
		ps, pgid, txid := uint64(le.Uint32(m[8:])), le.Uint64(m[40:]), le.Uint64(m[48:])
		if !found || txid > best.txid {
			best.pgid, best.txid, best.pageSize, found = pgid, txid, ps, true
		}
		return ps, true
	}
	if ps, ok := meta(0); ok {
		meta(int64(ps))
	} else {
		for ps := int64(1024); ps <= 16<<20 && ps < fi.Size(); ps <<= 1 { // as bbolt looks for the second
			if _, ok := meta(ps); ok {
				break
			}
		}
	}
	if need := best.pgid * best.pageSize; found && uint64(fi.Size()) < need {
		return corruptError(path,
			fmt.Errorf("it has %d bytes, but its meta page says it has %d (%d pages of %d bytes): it was cut short",
				fi.Size(), need, best.pgid, best.pageSize))
	}
	return nil
}

func isEmpty(tx *bolt.Tx) bool {
	errNotEmpty := errors.New("not empty")
	return tx.ForEach(func([]byte, *bolt.Bucket) error { return errNotEmpty }) == nil
}

// initIfEmpty writes the current layout into a file without any bucket
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
	for k, v := range map[string]string{string(versionKey): strconv.Itoa(SchemaVersion),
		string(idKey): newStoreID(), string(walSeqKey): "0"} {
		if err := meta.Put([]byte(k), []byte(v)); err != nil {
			return err
		}
	}
	for _, b := range [][]byte{leasesBucket, servicesBucket} {
		if _, err := tx.CreateBucket(b); err != nil {
			return err
		}
	}
	return nil
}

// create builds a whole store of the current version in a temporary file and links it
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

// MkdirAll creates dir and its missing parents with mode perm (less the
// umask) and makes their names durable: a data dir made at a node's first
// start must not vanish in a power loss with the leases stored in it.
func MkdirAll(dir string, perm fs.FileMode) error {
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
	if err := os.MkdirAll(dir, perm); err != nil {
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
	if runtime.GOOS == "windows" {
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
			if runtime.GOOS != "windows" {
				b = append(b, '\\')
			}
		}
		b = append(b, s[i])
	}
	return string(b)
}

// Path is the state file's path.
func (db *DB) Path() string { return db.path }

// Apply writes a batch of PutLease, DeleteLease and PutService effects,
// durable when Apply returns nil: as one record of the write-ahead log,
// or, for a batch too big for the log, as one transaction of the state
// file. Any other effect, or a record without id or name, fails the whole
// batch and writes nothing.
func (db *DB) Apply(batch []engine.Effect) error {
	if len(batch) == 0 {
		return nil
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	if err := db.apply(batch); err != nil {
		return fmt.Errorf("state file %s: batch of %d effects not written: %w", db.path, len(batch), err)
	}
	return nil
}

func (db *DB) apply(batch []engine.Effect) error {
	if err := db.usable(); err != nil {
		return err
	}
	payload, err := encodeBatch(db.enc[:0], batch)
	if err != nil {
		return err
	}
	db.enc = payload
	if db.full.Load() != nil && !time.Now().Before(db.retryAt) {
		if err := db.tryCheckpoint(); err != nil {
			return err
		}
	}
	if !db.log.room(payload, db.limit()) {
		if err := db.tryCheckpoint(); err != nil {
			return err
		}
		if !db.log.room(payload, db.limit()) {
			if full := db.full.Load(); full != nil {
				return fmt.Errorf("%w, and the write-ahead log's reserve is used up: svcrun cannot store this batch", full)
			}
			return db.commit(payload, true) // too big for the log
		}
	}
	if err := db.log.append(db.seq+1, payload); err != nil {
		db.failed = err
		if noSpace(err) {
			err = &fullError{filepath.Dir(db.path), err}
		}
		return fmt.Errorf("write-ahead log %s: %w", db.log.path, err)
	}
	db.seq++
	db.fold(payload)
	return nil
}

// limit is where the next record must end: at the log's soft limit, or,
// while the data dir is full, anywhere in its reserve.
func (db *DB) limit() int64 {
	if db.full.Load() != nil {
		return db.log.size
	}
	return db.log.soft
}

// tryCheckpoint checkpoints. One that finds no space leaves the store
// full rather than failed: nothing of it was written (the batch number
// stays, the log is not overwritten), so it is simply tried again later.
func (db *DB) tryCheckpoint() error {
	err := db.checkpoint()
	if err != nil && db.failed != nil {
		return err
	}
	db.setFull(err)
	return nil
}

// setFull records the outcome of a checkpoint: nil (space is back) or an
// error finding no space.
func (db *DB) setFull(err error) {
	was := db.full.Load()
	if err == nil {
		if was != nil {
			db.full.Store(nil)
			db.backoff = 0
			if db.onFull != nil {
				db.onFull(nil)
			}
		}
		return
	}
	full := &fullError{filepath.Dir(db.path), err}
	db.full.Store(full)
	if was == nil {
		db.backoff = fullRetryMin
		if db.onFull != nil {
			db.onFull(full)
		}
	} else {
		db.backoff = min(2*db.backoff, fullRetryMax)
	}
	db.retryAt = time.Now().Add(db.backoff)
}

// Writable says whether a request whose batch can wait (a new or renewed
// lease) may be taken now: nil, or, while the data dir is full, an error
// wrapping ErrFull that says so. Once the backoff has passed, it tries
// the checkpoint again first: the store recovers when space returns also
// while every such request is refused.
func (db *DB) Writable() error {
	if db.full.Load() == nil {
		return nil
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.log != nil && db.failed == nil && db.full.Load() != nil && !time.Now().Before(db.retryAt) {
		if err := db.tryCheckpoint(); err != nil {
			return fmt.Errorf("state file %s: %w", db.path, err)
		}
	}
	if full := db.full.Load(); full != nil {
		return full
	}
	return nil
}

// Full is the error wrapping ErrFull while the data dir is full, else nil.
// It does not wait for the DB.
func (db *DB) Full() error {
	if full := db.full.Load(); full != nil {
		return full
	}
	return nil
}

// fold adds a logged batch to what the log holds beyond the state file.
func (db *DB) fold(payload []byte) {
	decodeBatch(payload, func(op byte, key, val []byte) { // checked when logged or read
		b := op
		if op == opDeleteLease {
			b = opPutLease
		}
		db.pending[pendingKey{b, string(key)}] = bytes.Clone(val)
	})
}

// usable says why no batch may be written or read now, if so.
func (db *DB) usable() error {
	switch {
	case db.log == nil:
		return errors.New("the state file is closed")
	case db.failed != nil:
		return fmt.Errorf("an earlier write failed (%w): what reached the disk is unknown until svcrun is "+
			"restarted", db.failed)
	}
	return nil
}

// checkpoint writes what the log holds into the state file, in one
// transaction with the number of the last batch, so the log can be
// overwritten from its start.
func (db *DB) checkpoint() error {
	if len(db.pending) > 0 || db.log.off > logHeaderSize {
		if err := db.commit(nil, true); err != nil {
			return err
		}
	}
	return nil
}

// commit writes the pending changes, then payload (a batch that is not in
// the log, numbered next), in one transaction of the state file, with the
// number of the last batch and whether the log may hold more (open). The
// log is then overwritten from its start. A failed commit fails the
// store: bbolt may have made it visible all the same (its meta page
// written, the sync failed), and a batch numbered after it could then be
// skipped at the next Open.
func (db *DB) commit(payload []byte, open bool) error {
	seq := db.seq
	if payload != nil {
		seq++
	}
	update := (*bolt.DB).Update
	if db.seam.update != nil {
		update = db.seam.update
	}
	err := update(db.bolt, func(tx *bolt.Tx) error {
		buckets := map[byte]*bolt.Bucket{opPutLease: tx.Bucket(leasesBucket), opPutService: tx.Bucket(servicesBucket)}
		put := func(b byte, key, val []byte) error {
			if val == nil {
				return buckets[b].Delete(key)
			}
			return buckets[b].Put(key, val)
		}
		for k, v := range db.pending {
			if err := put(k.bucket, []byte(k.key), v); err != nil {
				return fmt.Errorf("%q: %w", k.key, err)
			}
		}
		var err error
		if payload != nil {
			decodeBatch(payload, func(op byte, key, val []byte) {
				if op == opDeleteLease {
					op = opPutLease
				}
				if err == nil {
					err = put(op, key, val)
				}
			})
		}
		if err != nil {
			return err
		}
		meta := tx.Bucket(metaBucket)
		if err := meta.Put(walOpenKey, []byte(map[bool]string{true: "1", false: "0"}[open])); err != nil {
			return err
		}
		return meta.Put(walSeqKey, []byte(strconv.FormatUint(seq, 10)))
	})
	if err != nil {
		// A checkpoint that found no space wrote nothing that counts: the
		// log still holds all it had. Any other failure (or one of a batch
		// numbered here) leaves it unknown what reached the disk.
		if payload != nil || !noSpace(err) {
			db.failed = err
		}
		return err
	}
	db.seq = seq
	clear(db.pending)
	db.log.off = logHeaderSize
	return nil
}

// State returns every stored lease, sorted by id, and every service record,
// sorted by name.
func (db *DB) State() (st engine.State, err error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if err := db.usable(); err != nil {
		return engine.State{}, fmt.Errorf("state file %s: %w", db.path, err)
	}
	if err := db.tryCheckpoint(); err != nil {
		return engine.State{}, fmt.Errorf("state file %s: checkpoint its write-ahead log: %w", db.path, err)
	}
	defer func() {
		if r := recover(); r != nil {
			st, err = engine.State{}, corruptError(db.path, fmt.Errorf("%v", r))
		}
	}()
	err = db.bolt.View(func(tx *bolt.Tx) error {
		// bbolt iterates keys in byte order, which is Go's string order.
		err := tx.Bucket(leasesBucket).ForEach(func(k, v []byte) error {
			var r engine.LeaseRecord
			if err := checkRecord(db.path, leasesBucket, k, v, &r, func() string { return string(r.ID) }); err != nil {
				return err
			}
			st.Leases = append(st.Leases, r)
			return nil
		})
		if err != nil {
			return err
		}
		return tx.Bucket(servicesBucket).ForEach(func(k, v []byte) error {
			var r engine.ServiceRecord
			if err := checkRecord(db.path, servicesBucket, k, v, &r, func() string { return r.Name }); err != nil {
				return err
			}
			st.Services = append(st.Services, r)
			return nil
		})
	})
	if err != nil {
		return engine.State{}, err
	}
	if len(db.pending) > 0 { // the data dir is full: the log holds the rest
		return db.overlay(st)
	}
	return st, nil
}

// overlay returns st with what the log holds beyond the state file.
func (db *DB) overlay(st engine.State) (engine.State, error) {
	leases := map[string]engine.LeaseRecord{}
	for _, l := range st.Leases {
		leases[string(l.ID)] = l
	}
	services := map[string]engine.ServiceRecord{}
	for _, s := range st.Services {
		services[s.Name] = s
	}
	for k, v := range db.pending {
		var err error
		switch {
		case k.bucket == opPutLease && v == nil:
			delete(leases, k.key)
		case k.bucket == opPutLease:
			var r engine.LeaseRecord
			err = json.Unmarshal(v, &r)
			leases[k.key] = r
		case v != nil:
			var r engine.ServiceRecord
			err = json.Unmarshal(v, &r)
			services[k.key] = r
		}
		if err != nil { // checked when logged or read
			return engine.State{}, fmt.Errorf("state file %s: a logged record of %q does not decode: %w", db.path, k.key, err)
		}
	}
	st = engine.State{}
	for _, k := range slices.Sorted(maps.Keys(leases)) {
		st.Leases = append(st.Leases, leases[k])
	}
	for _, k := range slices.Sorted(maps.Keys(services)) {
		st.Services = append(st.Services, services[k])
	}
	return st, nil
}

func decode(v []byte, r any) error {
	if v == nil {
		return errors.New("a nested bucket, not a record")
	}
	return json.Unmarshal(v, r)
}

func badRecord(path string, bucket, key []byte, why string) error {
	return corruptError(path, fmt.Errorf("bucket %q key %q: %s", bucket, key, why))
}

// Close checkpoints the log and releases the files and the lock.
func (db *DB) Close() error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.log == nil {
		return nil
	}
	var err error
	if db.failed == nil {
		err = db.commit(nil, false) // the state file holds everything again
		if noSpace(err) {
			err = fmt.Errorf("%w: the write-ahead log keeps the latest batches, the next start replays them",
				&fullError{filepath.Dir(db.path), err})
		}
	}
	err = errors.Join(err, db.log.f.Close(), db.bolt.Close())
	db.log = nil
	if err != nil {
		return fmt.Errorf("close state file %s: %w", db.path, err)
	}
	return nil
}
