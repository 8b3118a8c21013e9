package store

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/oarbank/svcrun/engine"
)

// Batch i of the model workload puts lease i and deletes lease i-3, so the
// state after batch k names k exactly: leases k-2..k.
func modelBatch(i int) []engine.Effect {
	b := []engine.Effect{engine.PutLease{Lease: lease(string(leaseN(i)))}}
	if i >= 3 {
		b = append(b, engine.DeleteLease{Lease: leaseN(i - 3)})
	}
	return b
}

// modelLeases are the lease ids after batches 0..k (none for k < 0).
func modelLeases(k int) []string {
	var ids []string
	for i := max(0, k-2); i <= k; i++ {
		ids = append(ids, string(leaseN(i)))
	}
	return ids
}

// logRec is where a record of the log starts, and its number.
type logRec struct {
	off int
	seq uint64
}

// unreplayed lists the records of the log at path that the state file
// does not hold yet (numbers above its wal_seq), in order.
func unreplayed(t *testing.T, path string) []logRec {
	t.Helper()
	data, err := os.ReadFile(path + ".wal")
	if err != nil {
		t.Fatal(err)
	}
	var recs []logRec
	var prev uint64
	for off := logHeaderSize; off+recHeaderSize <= len(data); {
		s, end, ok := wholeRecord(data, off)
		if !ok || (off > logHeaderSize && s != prev+1) {
			break
		}
		recs = append(recs, logRec{off, s})
		prev, off = s, int(alignBlock(int64(end)))
	}
	return recs
}

// copyStore copies the state file and its log at src into a new dir.
func copyStore(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "state.db")
	for _, suffix := range []string{"", ".wal"} {
		data, err := os.ReadFile(src + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst+suffix, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// lappedLog leaves, as a crash would, a log that has wrapped: the records
// of batches not yet in the state file from its start, then records of an
// earlier lap with lower numbers. It returns the path and the number of
// batches acknowledged (0..n-1).
func lappedLog(t *testing.T) (string, int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := Open(path, Options{LogBytes: 16 * logBlock})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for ; n < 200; n++ {
		apply(t, db, modelBatch(n)...)
		// Stop once the log holds a few new records in front of old ones.
		if db.log.off >= 6*logBlock && db.seq > 20 {
			n++
			break
		}
	}
	crash(t, db)
	return path, n
}

// TestDamagedRecordAtEveryPosition damages each byte class (length, crc,
// seq, payload) of each record the state file does not hold yet. A
// damaged record before the last is refused, naming its offset; the last
// one is indistinguishable from a torn write and ends the log: Open then
// holds exactly the batches before it. Never a silent loss of a batch
// before the damaged one.
func TestDamagedRecordAtEveryPosition(t *testing.T) {
	path, n := lappedLog(t)
	recs := unreplayed(t, path)
	if len(recs) < 3 {
		t.Fatalf("only %d unreplayed records: the workload did not lap the log", len(recs))
	}
	data, _ := os.ReadFile(path + ".wal")
	if _, _, ok := wholeRecord(data, recs[len(recs)-1].off+logBlock); !ok {
		t.Fatal("no record of an earlier lap behind the last one: the test does not cover laps")
	}
	firstSeq := recs[0].seq
	for i, r := range recs {
		_, end, _ := wholeRecord(data, r.off)
		for _, at := range []struct {
			field string
			pos   int
		}{
			{"length", 0}, {"length high byte", 3}, {"crc", 4}, {"seq", 8}, {"seq high byte", 15},
			{"payload first byte", recHeaderSize}, {"payload last byte", end - r.off - 1},
		} {
			t.Run(fmt.Sprintf("record %d %s", i, at.field), func(t *testing.T) {
				p := copyStore(t, path)
				f, err := os.OpenFile(p+".wal", os.O_RDWR, 0)
				if err != nil {
					t.Fatal(err)
				}
				b := []byte{data[r.off+at.pos] ^ 0x5a}
				f.WriteAt(b, int64(r.off+at.pos))
				f.Close()
				db, err := Open(p, Options{})
				if i < len(recs)-1 {
					if err == nil {
						st := state(t, db)
						db.Close()
						t.Fatalf("opened with leases %v: batches after the damaged record lost", leaseIDs(st))
					}
					want := fmt.Sprintf("the record at offset %d is damaged", r.off)
					if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), want) {
						t.Fatalf("Open = %v, want ErrCorrupt with %q", err, want)
					}
					return
				}
				if err != nil {
					t.Fatalf("a damaged last record (a torn write) is refused: %v", err)
				}
				defer db.Close()
				// Batches numbered firstSeq.. are batches n-len(recs)..n-1.
				lastOK := n - len(recs) + int(r.seq-firstSeq) - 1
				if d := cmp.Diff(modelLeases(lastOK), leaseIDs(state(t, db))); d != "" {
					t.Errorf("leases (-want +got):\n%s", d)
				}
			})
		}
	}
}

// snapshotDir is what a refused Open must not change: every name in the
// directory, and the bytes of each file.
func snapshotDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	names, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range names {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = fmt.Sprintf("%d bytes, sha256 %x", len(data), sha256.Sum256(data))
	}
	return files
}

// TestRefusedOpenWritesNothing: for each damage, Open refuses, and both
// files are byte for byte as they were, and no file is added or removed.
func TestRefusedOpenWritesNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(t *testing.T, path string)
		kind error
		want string
	}{
		{"state file cut to 0 bytes", func(t *testing.T, path string) { os.Truncate(path, 0) },
			ErrCorrupt, "it is empty (0 bytes) but has a write-ahead log"},
		{"state file deleted beside its log", func(t *testing.T, path string) { os.Remove(path) },
			ErrCorrupt, "the state file is missing, but its log is here"},
		{"a lease record damaged", func(t *testing.T, path string) {
			putRaw(t, path, leasesBucket, "a", `{"id":"a","ttl":"soon"}`)
		}, ErrCorrupt, `bucket "leases" key "a": the record does not decode`},
		{"a service record naming another", func(t *testing.T, path string) {
			putRaw(t, path, servicesBucket, "m/s", `{"name":"m/t"}`)
		}, ErrCorrupt, `bucket "services" key "m/s": the record's name is "m/t"`},
		{"state file cut short, meta pages intact", func(t *testing.T, path string) { cutStateFile(t, path) },
			ErrCorrupt, "it was cut short"},
		{"log damaged in its middle", func(t *testing.T, path string) {
			db, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 4 {
				apply(t, db, engine.PutLease{Lease: lease(string(leaseN(i)))})
			}
			crash(t, db)
			flipByte(t, path+".wal", logHeaderSize+logBlock+recHeaderSize)
		}, ErrCorrupt, fmt.Sprintf("the record at offset %d is damaged", logHeaderSize+logBlock)},
		{"log header damaged", func(t *testing.T, path string) { flipByte(t, path+".wal", 20) }, ErrCorrupt,
			"no valid header"},
		{"log missing after a crash", func(t *testing.T, path string) {
			db, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			apply(t, db, engine.PutLease{Lease: lease("acked")})
			crash(t, db)
			os.Remove(path + ".wal")
		}, ErrCorrupt, "it is missing, and svcrun did not stop cleanly"},
		{"newer schema version", func(t *testing.T, path string) { setVersion(t, path, "3") }, ErrNewerVersion,
			"has schema version 3"},
		{"garbage state file",
			func(t *testing.T, path string) { os.WriteFile(path, []byte(strings.Repeat("x", 9000)), 0o600) },
			ErrCorrupt, "invalid database"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "state.db")
			validStore(t, path)
			tc.make(t, path)
			before := snapshotDir(t, dir)
			db, err := Open(path, Options{})
			if err == nil {
				db.Close()
				t.Fatal("opened")
			}
			if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open = %v, want %v with %q", err, tc.kind, tc.want)
			}
			if d := cmp.Diff(before, snapshotDir(t, dir)); d != "" {
				t.Errorf("a refused Open changed the data dir (-before +after):\n%s", d)
			}
		})
	}
}

// putRaw stores value under key in bucket, bypassing the store's checks.
func putRaw(t *testing.T, path string, bucket []byte, key, value string) {
	t.Helper()
	b, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucket).Put([]byte(key), []byte(value)) }); err != nil {
		t.Fatal(err)
	}
}

// cutStateFile cuts the state file to 8192 bytes: its meta pages survive,
// the pages they point to are gone (truncate -s 8192 of a 32 KiB file).
func cutStateFile(t *testing.T, path string) {
	t.Helper()
	if fi, err := os.Stat(path); err != nil || fi.Size() <= 8192 {
		t.Fatalf("state file: %v, %v", fi, err)
	}
	if err := os.Truncate(path, 8192); err != nil {
		t.Fatal(err)
	}
}

func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x5a
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// faultPlan fails calls of one kind ("write" or "sync" of the log,
// "update" of the state file) from the at-th on, times of them (-1: all).
type faultPlan struct {
	kind  string
	at    int
	times int
	err   error
	// torn: a failing log write writes half its bytes first; after: a
	// failing update is committed all the same (its sync failed).
	torn, after bool

	mu     sync.Mutex
	counts map[string]int
	hits   int
	// hitsInApply are the failed calls before the workload's State.
	hitsInApply int
}

func (p *faultPlan) hit(kind string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.counts == nil {
		p.counts = map[string]int{}
	}
	p.counts[kind]++
	n := p.counts[kind]
	if kind != p.kind || n < p.at || (p.times >= 0 && n >= p.at+p.times) {
		return nil
	}
	p.hits++
	return p.err
}

func (p *faultPlan) seam() seam {
	return seam{
		log: func(d logDev) logDev { return faultyLog{d, p} },
		update: func(b *bolt.DB, fn func(*bolt.Tx) error) error {
			if err := p.hit("update"); err != nil {
				if p.after {
					b.Update(fn)
				}
				return err
			}
			return b.Update(fn)
		},
	}
}

type faultyLog struct {
	logDev
	p *faultPlan
}

func (f faultyLog) WriteAt(b []byte, off int64) (int, error) {
	if err := f.p.hit("write"); err != nil {
		if f.p.torn {
			n, _ := f.logDev.WriteAt(b[:len(b)/2], off)
			return n, err
		}
		return 0, err
	}
	return f.logDev.WriteAt(b, off)
}

func (f faultyLog) Sync() error {
	if err := f.p.hit("sync"); err != nil {
		return err
	}
	return f.logDev.Sync()
}

// crashAny leaves db as a kill -9 would, whatever state it is in.
func crashAny(db *DB) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.log != nil {
		db.log.f.Close()
		db.bolt.Close()
		db.log = nil
	}
}

const faultLogBytes = 16 * logBlock // 15 record blocks, 3 of them the reserve
const faultBatches = 40

// runFaults runs the model workload on a store whose writes fail as p
// says, stopping at the first failed Apply as svcrun does, and checks
// that after a crash every acknowledged batch is there, and the one in
// flight whole or not at all. It returns the notifications of OnFull and
// the Apply error.
func runFaults(t *testing.T, p *faultPlan) ([]error, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := Open(path, Options{LogBytes: faultLogBytes})
	if err != nil {
		t.Fatal(err)
	}
	db.Close() // created without faults: the faults hit a store in use
	var notes []error
	acked := -1
	var applyErr error
	db, err = Open(path, Options{seam: p.seam(), OnFull: func(err error) { notes = append(notes, err) }})
	if err != nil { // its replay could not be written: refused, as svcrun stops
		if errors.Is(err, ErrCorrupt) {
			t.Fatalf("Open: %v", err)
		}
		applyErr = err
	} else {
		for i := range faultBatches {
			if applyErr = db.Apply(modelBatch(i)); applyErr != nil {
				break
			}
			acked = i
		}
		p.hitsInApply = p.hits
		// Also while full, State holds what the log holds.
		if st, err := db.State(); err != nil && db.failed == nil {
			t.Fatalf("State of a store that is not failed: %v", err)
		} else if err == nil {
			if d := cmp.Diff(modelLeases(acked), leaseIDs(st)); d != "" {
				t.Errorf("State before the crash (-want +got):\n%s", d)
			}
		}
		if p.times > 0 { // space is back: the next attempt finds it
			db.mu.Lock()
			db.retryAt = time.Time{}
			db.mu.Unlock()
			if err := db.Writable(); err != nil {
				t.Fatalf("Writable once space is back: %v", err)
			}
		}
		crashAny(db)
	}
	db, err = Open(path, Options{})
	if err != nil {
		t.Fatalf("reopen without faults (%d batches acknowledged, Apply: %v): %v", acked+1, applyErr, err)
	}
	defer db.Close()
	got := leaseIDs(state(t, db))
	inFlight := applyErr != nil && cmp.Equal(modelLeases(acked+1), got) // reached the disk, unacknowledged
	if d := cmp.Diff(modelLeases(acked), got); d != "" && !inFlight {
		t.Errorf("after reopen, %d batches acknowledged, Apply: %v (-want +got):\n%s", acked+1, applyErr, d)
	}
	return notes, applyErr
}

// TestFaultAtEveryWrite fails each write of the log and each transaction
// of the state file in turn, with ENOSPC and EIO: never a silent loss.
// ENOSPC at a checkpoint leaves the store full, not failed: batches go on
// into the log's reserve until it is used up, and the next Open replays
// them.
func TestFaultAtEveryWrite(t *testing.T) {
	clean := &faultPlan{}
	if _, err := runFaults(t, clean); err != nil {
		t.Fatalf("without faults: %v", err)
	}
	counts := clean.counts
	if counts["update"] < 3 || counts["write"] < faultBatches {
		t.Fatalf("the workload made %v writes: too few checkpoints", counts)
	}
	for _, kind := range []string{"write", "sync", "update"} {
		for at := 1; at <= counts[kind]; at++ {
			for _, errno := range []error{syscall.ENOSPC, syscall.EIO} {
				for _, variant := range []string{"", "torn", "after", "once"} {
					switch {
					case variant == "torn" && kind != "write",
						variant == "after" && (kind != "update" || errno != syscall.EIO),
						variant == "once" && (kind != "update" || errno != syscall.ENOSPC):
						continue
					}
					t.Run(fmt.Sprintf("%s %d %v %s", kind, at, errno, variant), func(t *testing.T) {
						p := &faultPlan{kind: kind, at: at, times: -1, err: &os.PathError{Op: kind, Path: "x", Err: errno},
							torn: variant == "torn", after: variant == "after"}
						if variant == "once" {
							p.times = 1
						}
						notes, err := runFaults(t, p)
						if p.hits == 0 {
							return // this run made fewer such writes
						}
						full := kind == "update" && errno == syscall.ENOSPC
						switch {
						case full && len(notes) == 0:
							t.Fatal("no space at a checkpoint, and OnFull was not told")
						case full && !errors.Is(notes[0], ErrFull):
							t.Fatalf("OnFull(%v), want ErrFull", notes[0])
						case full && err != nil &&
							(!errors.Is(err, ErrFull) || !strings.Contains(err.Error(), "the data dir is full: ") ||
								!strings.Contains(err.Error(), "no space left on device") ||
								!strings.Contains(err.Error(), "reserve is used up")):
							t.Fatalf("Apply = %v, want ErrFull with the data dir and the reason", err)
						case variant == "once" && notes[len(notes)-1] != nil:
							t.Fatalf("space returned, and the store is still full: OnFull %v", notes)
						case !full && err == nil && p.hitsInApply > 0:
							t.Fatal("a failed write was acknowledged")
						}
					})
				}
			}
		}
	}
}

// TestOpenOnFullDisk: an Open whose replay finds no space opens full: it
// holds what the log holds, and appends after the log's last record, not
// over the records the state file lacks.
func TestOpenOnFullDisk(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db := openT(t, path)
	for i := range 5 {
		apply(t, db, modelBatch(i)...)
	}
	crash(t, db)
	p := &faultPlan{kind: "update", at: 1, times: -1, err: &os.PathError{Op: "write", Path: path, Err: syscall.ENOSPC}}
	db, err := Open(path, Options{seam: p.seam()})
	if err != nil {
		t.Fatalf("Open on a full disk: %v", err)
	}
	if err := db.Writable(); !errors.Is(err, ErrFull) {
		t.Fatalf("Writable = %v, want ErrFull", err)
	}
	if d := cmp.Diff(modelLeases(4), leaseIDs(state(t, db))); d != "" {
		t.Errorf("State while full (-want +got):\n%s", d)
	}
	for i := 5; i < 7; i++ {
		apply(t, db, modelBatch(i)...)
	}
	crashAny(db)
	db = openT(t, path)
	if d := cmp.Diff(modelLeases(6), leaseIDs(state(t, db))); d != "" {
		t.Errorf("after a crash (-want +got):\n%s", d)
	}
}
