package store

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/oarbank/svcrun/runtime"
)

// Batch i of the model workload puts lease i and deletes lease i-3, so the
// state after batch k names k exactly: leases k-2..k.
func modelBatch(i int) []runtime.Effect {
	b := []runtime.Effect{runtime.PutLease{Lease: lease(string(leaseN(i)))}}
	if i >= 3 {
		b = append(b, runtime.DeleteLease{Lease: leaseN(i - 3)})
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
				apply(t, db, runtime.PutLease{Lease: lease(string(leaseN(i)))})
			}
			crash(t, db)
			flipByte(t, path+".wal", logHeaderSize+logBlock+recHeaderSize)
		}, ErrCorrupt, fmt.Sprintf("the record at offset %d is damaged", logHeaderSize+logBlock)},
		{"log header damaged", func(t *testing.T, path string) { flipByte(t, path+".wal", 20) }, ErrCorrupt, "no valid header"},
		{"log missing after a crash", func(t *testing.T, path string) {
			db, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			apply(t, db, runtime.PutLease{Lease: lease("acked")})
			crash(t, db)
			os.Remove(path + ".wal")
		}, ErrCorrupt, "it is missing, and svcrun did not stop cleanly"},
		{"newer schema version", func(t *testing.T, path string) { setVersion(t, path, "3") }, ErrNewerVersion, "has schema version 3"},
		{"garbage state file", func(t *testing.T, path string) { os.WriteFile(path, []byte(strings.Repeat("x", 9000)), 0o600) },
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
