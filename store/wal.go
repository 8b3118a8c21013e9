package store

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/oarbank/svcrun/engine"
)

// The log (see "The write-ahead log" in the package doc): one
// preallocated file, records overwritten in place from the start after
// every checkpoint.

const (
	// DefaultLogBytes is the log's default size: 4,095 record blocks,
	// 3,072 records (engine steps) between checkpoints and 1,023 in the
	// reserve for a full data dir.
	DefaultLogBytes = 16 << 20
	// MinLogBytes is the smallest log Options.LogBytes may ask for.
	MinLogBytes = 2 * logBlock

	// logBlock is the unit of the log: the header is one block, and every
	// record starts a block, so that writing a record never rewrites a
	// block holding an earlier one (a torn write of a shared block could
	// destroy an acknowledged record).
	logBlock      = 4096
	logHeaderSize = logBlock
	logMagic      = "svcrun-log-v1\n\x00\x00" // 16 bytes
	recHeaderSize = 16                        // length u32, crc u32, seq u64
	maxRecord     = 1 << 30

	opPutLease    byte = 1
	opDeleteLease byte = 2
	opPutService  byte = 3
)

// castagnoliTable is made on first use: making it at start would cost
// every command of the binary, a client's too.
var castagnoliTable = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

// logFile is the open log.
type logFile struct {
	f    logDev
	path string
	size int64 // the file's size, fixed at creation
	// soft is where a checkpoint is due: a record that would end past it
	// waits for one. The blocks from soft to size are the reserve the log
	// keeps for the batches that come while a checkpoint cannot be written
	// (the data dir is full) and new leases are refused.
	soft int64
	off  int64 // where the next record goes
	rec  []byte
}

// logDev is what the store needs of the log's open file. It is the seam
// the fault tests fail writes through.
type logDev interface {
	WriteAt(p []byte, off int64) (int, error)
	// Sync makes what was written durable (fdatasync).
	Sync() error
	Close() error
}

// osLog is the log's file on disk.
type osLog struct{ *os.File }

func (f osLog) Sync() error { return datasync(f.File) }

// softLimit keeps a quarter of the log's record blocks as its reserve.
func softLimit(size int64) int64 {
	blocks := (size - logHeaderSize) / logBlock
	return size - blocks/4*logBlock
}

// newStoreID is the random id a state file and its log share, so a log is
// never replayed into another state file.
func newStoreID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux, macOS or Windows
	}
	return hex.EncodeToString(b[:])
}

// logHeader is the first block: magic, store id, the file's size (a log
// cut short is refused, not read as one that ends early), and a CRC-32C
// of those 56 bytes.
func logHeader(id string, size int64) []byte {
	h := make([]byte, logHeaderSize)
	copy(h, logMagic)
	copy(h[16:48], id)
	binary.LittleEndian.PutUint64(h[48:], uint64(size))
	binary.LittleEndian.PutUint32(h[56:], crc32.Checksum(h[:56], castagnoliTable()))
	return h
}

// createLog makes a zero-filled log of size bytes for the store id and
// links it into place. Zero-filled, not sparse: a record then overwrites
// blocks the file system has already allocated, so its fdatasync writes
// data only, no metadata.
func createLog(dbPath, path, id string, size int64) error {
	dir, base := filepath.Split(dbPath)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, base+".new-wal-*") // removed by removeLeftovers if we crash
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	err = writeZeroFilled(f, logHeader(id, size), size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(dir)
}

func writeZeroFilled(f *os.File, head []byte, size int64) error {
	if _, err := f.Write(head); err != nil {
		return err
	}
	zeros := make([]byte, 256<<10)
	for left := size - int64(len(head)); left > 0; left -= int64(len(zeros)) {
		if _, err := f.Write(zeros[:min(left, int64(len(zeros)))]); err != nil {
			return err
		}
	}
	return f.Sync()
}

// openLog opens the log of the store id and returns it with the records it
// holds after seq (the last one the state file has), in order, and where
// its chain of records ends. A missing log is created when the state file
// says it holds everything (inUse false: a clean Close, or a new store),
// and refused otherwise.
func (db *DB) openLog(id string, seq uint64, inUse bool, size int64) (*logFile, []logRecord, int64, error) {
	path := db.logPath()
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if inUse {
			return nil, nil, 0, db.badLog(
				"it is missing, and svcrun did not stop cleanly: it holds the latest leases and service records")
		}
		if err := createLog(db.path, path, id, size); err != nil {
			return nil, nil, 0, fmt.Errorf("create the log %s of state file %s: %w", path, db.path, err)
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("open the log of state file %s: %w", db.path, err)
	}
	data, err := readWhole(f)
	if err != nil {
		f.Close()
		return nil, nil, 0, fmt.Errorf("read the log %s: %w", path, err)
	}
	recs, end, err := db.readLog(data, id, seq)
	if err != nil {
		f.Close()
		return nil, nil, 0, err
	}
	var dev logDev = osLog{f}
	if db.seam.log != nil {
		dev = db.seam.log(dev)
	}
	n := int64(len(data))
	return &logFile{f: dev, path: path, size: n, soft: softLimit(n), off: logHeaderSize}, recs, end, nil
}

// readWhole reads f from its start to its end into one buffer of its size:
// io.ReadAll grows its buffer from 512 bytes, copying a 16 MiB log about
// twice over and faulting in every copy, on svcrun serve's path to its
// first op.
func readWhole(f *os.File) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	// One byte more than the size, so that the read that sees the end
	// does not grow the buffer; a file grown meanwhile is still read whole.
	data := make([]byte, 0, fi.Size()+1)
	for {
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return nil, err
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
	}
}

// logRecord is one step's batch in the log.
type logRecord struct {
	seq     uint64
	payload []byte
}

func (db *DB) logPath() string { return db.path + ".wal" }

// badLog is the error for a log svcrun refuses.
func (db *DB) badLog(why string) error { return logError(db.path, why) }

func logError(dbPath, why string) error {
	path := dbPath + ".wal"
	return &kindError{ErrCorrupt, fmt.Sprintf("the write-ahead log %s of state file %s: %s. "+
		"svcrun does not write to either file, so nothing already stored is lost. "+
		"Restore both from a backup, or move both aside (mv %s %s.damaged; mv %s %s.damaged) to start with an empty state: "+
		"svcrun then forgets the leases and service failures it held", path, dbPath, why, dbPath, dbPath, path, path)}
}

// readLog checks the log's header and returns its records after seq.
// Records are read from the start while they are whole (length and
// checksum) and consecutive: after a checkpoint new records overwrite old
// ones from the start, and the old ones left behind them have lower
// numbers, so the chain ends where the last write ended.
func (db *DB) readLog(data []byte, id string, seq uint64) ([]logRecord, int64, error) {
	bad := func(why string) error { return db.badLog("it is damaged or is not an svcrun log (" + why + ")") }
	if len(data) < MinLogBytes || string(data[:16]) != logMagic ||
		binary.LittleEndian.Uint32(data[56:]) != crc32.Checksum(data[:56], castagnoliTable()) {
		return nil, 0, bad("no valid header")
	}
	if size := binary.LittleEndian.Uint64(data[48:]); size != uint64(len(data)) {
		return nil, 0, bad(fmt.Sprintf("it has %d bytes, its header says %d: it was cut short or extended", len(data), size))
	}
	if got := string(data[16:48]); got != id {
		return nil, 0, bad(fmt.Sprintf("it belongs to the state file with id %s, not to this one (id %s)", got, id))
	}
	var recs []logRecord
	var prev uint64
	off := logHeaderSize
	for off+recHeaderSize <= len(data) {
		s, end, ok := wholeRecord(data, off)
		if !ok || (off > logHeaderSize && s != prev+1) {
			break
		}
		if s > seq {
			if len(recs) == 0 && s != seq+1 {
				return nil, 0, bad(fmt.Sprintf("it continues from step %d but the state file ends at step %d: "+
					"the state file is older than its log (restored from a backup?)", s, seq))
			}
			recs = append(recs, logRecord{seq: s, payload: data[off+recHeaderSize : end]})
		}
		prev, off = s, int(alignBlock(int64(end)))
	}
	// The chain ends at off: at a torn last write, or where the records of
	// an earlier lap begin (they have lower numbers). A damaged record in
	// the middle would end it too, so look on for any whole record newer
	// than the chain's last (or than the state file, for an empty chain):
	// one there means acknowledged batches lie behind the damage.
	last := max(prev, seq)
	for o := off; o+recHeaderSize <= len(data); {
		if s, end, ok := wholeRecord(data, o); ok && s > last {
			return nil, 0, bad(fmt.Sprintf(
				"the record at offset %d is damaged or missing, but a whole record of a later step (%d, at offset %d) follows it: "+
					"the log is damaged in its middle, not torn at its end, and acknowledged batches would be lost", off, s, o))
		} else if ok {
			o = int(alignBlock(int64(end)))
			continue
		}
		o += logBlock
	}
	for _, r := range recs {
		if err := checkBatch(r.payload); err != nil {
			return nil, 0, bad(fmt.Sprintf("step %d: %v", r.seq, err))
		}
	}
	return recs, int64(off), nil
}

// wholeRecord says whether a record starting at off is whole (its length
// fits and its checksum matches), with its number and where it ends.
func wholeRecord(data []byte, off int) (seq uint64, end int, ok bool) {
	n := int64(binary.LittleEndian.Uint32(data[off:]))
	if n == 0 || n > maxRecord || int64(off)+recHeaderSize+n > int64(len(data)) {
		return 0, 0, false
	}
	end = off + recHeaderSize + int(n)
	sum := crc32.Update(crc32.Checksum(data[off:off+4], castagnoliTable()), castagnoliTable(), data[off+8:end])
	if sum != binary.LittleEndian.Uint32(data[off+4:]) {
		return 0, 0, false
	}
	return binary.LittleEndian.Uint64(data[off+8:]), end, true
}

func alignBlock(n int64) int64 { return (n + logBlock - 1) / logBlock * logBlock }

// checkBatch checks a logged batch as Apply checked it before logging it,
// and its values as State will read them, so that a record that passes
// its checksum but not these is refused rather than replayed.
func checkBatch(p []byte) error {
	var bad error
	err := decodeBatch(p, func(op byte, key, val []byte) {
		if bad != nil {
			return
		}
		switch {
		case len(key) == 0:
			bad = errors.New("an effect with an empty key")
		case len(key) > bolt.MaxKeySize:
			bad = fmt.Errorf("key %.40q...: %w", key, berrors.ErrKeyTooLarge)
		case op == opPutLease:
			var r engine.LeaseRecord
			if err := json.Unmarshal(val, &r); err != nil || string(r.ID) != string(key) {
				bad = fmt.Errorf("lease %q: the record does not decode or names another lease", key)
			}
		case op == opPutService:
			var r engine.ServiceRecord
			if err := json.Unmarshal(val, &r); err != nil || r.Name != string(key) {
				bad = fmt.Errorf("service %q: the record does not decode or names another service", key)
			}
		}
	})
	if err != nil {
		return err
	}
	return bad
}

// room says whether a record of payload fits before limit.
func (l *logFile) room(payload []byte, limit int64) bool {
	return len(payload) <= maxRecord && l.off+recHeaderSize+int64(len(payload)) <= limit
}

// append writes one record, from the next block, and waits until it is on
// disk. The caller has checked that it has room.
func (l *logFile) append(seq uint64, payload []byte) error {
	r := appendRecord(l.rec[:0], seq, payload)
	l.rec = r
	if _, err := l.f.WriteAt(r, l.off); err != nil {
		return err
	}
	if err := l.f.Sync(); err != nil {
		return err
	}
	l.off = alignBlock(l.off + int64(len(r)))
	return nil
}

// appendRecord appends the record of batch seq to dst: length, checksum,
// seq, payload.
func appendRecord(dst []byte, seq uint64, payload []byte) []byte {
	start := len(dst)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)))
	dst = binary.LittleEndian.AppendUint32(dst, 0)
	dst = binary.LittleEndian.AppendUint64(dst, seq)
	dst = append(dst, payload...)
	r := dst[start:]
	binary.LittleEndian.PutUint32(r[4:], crc32.Update(crc32.Checksum(r[:4], castagnoliTable()), castagnoliTable(), r[8:]))
	return dst
}

// encodeBatch appends the log payload of batch to dst: per effect, its op,
// the key and the value (the JSON of the record, as in the state file),
// each length-prefixed. It refuses what the state file would refuse.
func encodeBatch(dst []byte, batch []engine.Effect) ([]byte, error) {
	for i, f := range batch {
		var op byte
		var key string
		var rec any
		switch f := f.(type) {
		case engine.PutLease:
			op, key, rec = opPutLease, string(f.Lease.ID), f.Lease
		case engine.DeleteLease:
			op, key = opDeleteLease, string(f.Lease)
		case engine.PutService:
			op, key, rec = opPutService, f.Service.Name, f.Service
		default:
			return nil, fmt.Errorf("effect %d is a %T, not a persistence effect (a driver bug)", i, f)
		}
		switch {
		case key == "" && op == opPutService:
			return nil, fmt.Errorf("effect %d (put-service) has an empty service name", i)
		case key == "":
			return nil, fmt.Errorf("effect %d (%s) has an empty lease id", i,
				map[byte]string{opPutLease: "put-lease", opDeleteLease: "delete-lease"}[op])
		case len(key) > bolt.MaxKeySize:
			return nil, fmt.Errorf("effect %d: %w", i, berrors.ErrKeyTooLarge)
		}
		var val []byte
		if rec != nil {
			var err error
			if val, err = json.Marshal(rec); err != nil {
				return nil, fmt.Errorf("effect %d: %w", i, err)
			}
		}
		dst = append(dst, op)
		dst = binary.AppendUvarint(dst, uint64(len(key)))
		dst = append(dst, key...)
		dst = binary.AppendUvarint(dst, uint64(len(val)))
		dst = append(dst, val...)
	}
	return dst, nil
}

// decodeBatch calls fn for each effect of a payload; val is nil for a
// delete. key and val alias the payload.
func decodeBatch(p []byte, fn func(op byte, key, val []byte)) error {
	next := func() ([]byte, bool) {
		n, k := binary.Uvarint(p)
		if k <= 0 || n > uint64(len(p)-k) {
			return nil, false
		}
		b := p[k : k+int(n)]
		p = p[k+int(n):]
		return b, true
	}
	for len(p) > 0 {
		op := p[0]
		p = p[1:]
		key, ok1 := next()
		val, ok2 := next()
		switch {
		case !ok1 || !ok2:
			return errors.New("a record is cut short")
		case op != opPutLease && op != opDeleteLease && op != opPutService:
			return fmt.Errorf("unknown operation %d", op)
		case (op == opDeleteLease) != (len(val) == 0):
			return fmt.Errorf("operation %d with a value of %d bytes", op, len(val))
		}
		if op == opDeleteLease {
			val = nil
		}
		fn(op, key, val)
	}
	return nil
}
