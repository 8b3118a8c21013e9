package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/oarbank/svcrun/engine"
)

// crash leaves db as a kill -9 would: files closed, no checkpoint.
func crash(t *testing.T, db *DB) {
	t.Helper()
	db.mu.Lock()
	defer db.mu.Unlock()
	if err := errors.Join(db.log.f.Close(), db.bolt.Close()); err != nil {
		t.Fatal(err)
	}
	db.log = nil
}

func leaseIDs(st engine.State) []string {
	var ids []string
	for _, l := range st.Leases {
		ids = append(ids, string(l.ID))
	}
	return ids
}

// TestLogReplay: batches acknowledged only in the log (no checkpoint) are
// all there after a crash, also when the last record was torn.
func TestLogReplay(t *testing.T) {
	for _, torn := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "state.db")
		db, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		apply(t, db, engine.PutLease{Lease: lease("a")}, engine.PutLease{Lease: lease("b")})
		apply(t, db, engine.DeleteLease{Lease: "a"},
			engine.PutService{Service: engine.ServiceRecord{Name: "m/s", Failures: 1}})
		apply(t, db, engine.PutLease{Lease: lease("c")})
		off := db.log.off
		crash(t, db)
		if torn { // half a record after the last one, as a crash in mid-write leaves it
			f, _ := os.OpenFile(path+".wal", os.O_RDWR, 0)
			rec := []byte{200, 0, 0, 0, 1, 2, 3, 4, 4, 0, 0, 0, 0, 0, 0, 0, 'x', 'y'}
			f.WriteAt(rec, off)
			f.Close()
		}
		db = openT(t, path)
		st := state(t, db)
		if d := cmp.Diff([]string{"b", "c"}, leaseIDs(st)); d != "" {
			t.Errorf("torn=%v: leases (-want +got):\n%s", torn, d)
		}
		if len(st.Services) != 1 || st.Services[0].Failures != 1 {
			t.Errorf("torn=%v: services %+v", torn, st.Services)
		}
		// Replayed once: the state file has it all, and its log position.
		apply(t, db, engine.DeleteLease{Lease: "b"})
		crash(t, db)
		db = openT(t, path)
		if d := cmp.Diff([]string{"c"}, leaseIDs(state(t, db))); d != "" {
			t.Errorf("torn=%v: after a second crash (-want +got):\n%s", torn, d)
		}
	}
}

// TestCheckpoints: a small log checkpoints many times; the state is the
// same as the batches say, across crashes at any point.
func TestCheckpoints(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	open := func() *DB {
		db, err := Open(path, Options{LogBytes: MinLogBytes})
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	db := open()
	want := map[string]bool{}
	for i := range 500 {
		id := strconv.Itoa(i)
		batch := []engine.Effect{engine.PutLease{Lease: lease(id)}}
		want[id] = true
		if i%3 == 0 {
			old := strconv.Itoa(i / 2)
			batch = append(batch, engine.DeleteLease{Lease: engine.LeaseID(old)})
			delete(want, old)
		}
		apply(t, db, batch...)
		if i%97 == 0 {
			crash(t, db)
			db = open()
		}
	}
	st := state(t, db)
	db.Close()
	if len(st.Leases) != len(want) {
		t.Errorf("%d leases, want %d", len(st.Leases), len(want))
	}
	for _, l := range st.Leases {
		if !want[string(l.ID)] {
			t.Errorf("lease %s should be gone", l.ID)
		}
	}
}

// TestBatchBiggerThanLog goes straight into the state file, after what
// the log holds.
func TestBatchBiggerThanLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := Open(path, Options{LogBytes: MinLogBytes})
	if err != nil {
		t.Fatal(err)
	}
	apply(t, db, engine.PutLease{Lease: lease("x")})
	var big []engine.Effect
	for i := range 100 {
		l := lease("big-" + strconv.Itoa(i))
		l.Job = strings.Repeat("j", 100)
		big = append(big, engine.PutLease{Lease: l})
	}
	big = append(big, engine.DeleteLease{Lease: "x"})
	apply(t, db, big...)
	apply(t, db, engine.PutLease{Lease: lease("y")})
	crash(t, db)
	db = openT(t, path)
	st := state(t, db)
	if len(st.Leases) != 101 || st.Leases[len(st.Leases)-1].ID != "y" {
		t.Fatalf("%d leases: %v", len(st.Leases), leaseIDs(st))
	}
	for _, l := range st.Leases {
		if l.ID == "x" {
			t.Fatal("lease x deleted by the big batch is back")
		}
	}
}

// TestLogRefused: a log that does not fit its state file is refused, and
// neither file is written.
func TestLogRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(t *testing.T, path string)
		want string
	}{
		{"another store's log", func(t *testing.T, path string) {
			other := filepath.Join(t.TempDir(), "state.db")
			validStore(t, other)
			data, _ := os.ReadFile(other + ".wal")
			os.WriteFile(path+".wal", data, 0o600)
		}, "it belongs to the state file with id"},
		{"header damaged", func(t *testing.T, path string) {
			f, _ := os.OpenFile(path+".wal", os.O_RDWR, 0)
			f.WriteAt([]byte("garbage"), 3)
			f.Close()
		}, "no valid header"},
		{"cut short", func(t *testing.T, path string) { os.Truncate(path+".wal", 100) }, "no valid header"},
		{"cut to fewer blocks", func(t *testing.T, path string) {
			db, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 60 {
				apply(t, db, engine.PutLease{Lease: lease(string(leaseN(i)))})
			}
			crash(t, db)
			os.Truncate(path+".wal", MinLogBytes)
		}, "it has 8192 bytes, its header says 16777216"},
		{"missing after a crash", func(t *testing.T, path string) {
			db, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			apply(t, db, engine.PutLease{Lease: lease("acked")})
			crash(t, db)
			os.Remove(path + ".wal")
		}, "it is missing, and svcrun did not stop cleanly"},
		{"beside a version-1 state file", func(t *testing.T, path string) {
			os.Remove(path)
			writeV1(t, path)
		}, "the state file has no log of its own"},
		{"a record with an empty key", func(t *testing.T, path string) {
			writeRec(t, path+".wal", logHeaderSize, 2, rawPayload(opPutLease, "", `{"id":""}`))
		}, "step 2: an effect with an empty key"},
		{"a record that is not a lease", func(t *testing.T, path string) {
			writeRec(t, path+".wal", logHeaderSize, 2, rawPayload(opPutLease, "zz", `not json`))
		}, `step 2: lease "zz": the record does not decode`},
		{"state file older than its log", func(t *testing.T, path string) {
			db, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			apply(t, db, engine.PutLease{Lease: lease("b")})
			crash(t, db)
			backup, _ := os.ReadFile(path) // at step 1
			db = openT(t, path)            // replays step 2 into the state file
			apply(t, db, engine.PutLease{Lease: lease("c")})
			crash(t, db) // the log holds step 3
			os.WriteFile(path, backup, 0o600)
		}, "it continues from step 3 but the state file ends at step 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			validStore(t, path)
			tc.make(t, path)
			before, _ := os.ReadFile(path)
			beforeLog, _ := os.ReadFile(path + ".wal")
			db, err := Open(path, Options{})
			if err == nil {
				db.Close()
				t.Fatal("opened")
			}
			t.Log(err)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) ||
				!strings.Contains(err.Error(), "mv "+path+".wal") {
				t.Errorf("error %q, want ErrCorrupt with %q and the mv hint", err, tc.want)
			}
			after, _ := os.ReadFile(path)
			afterLog, _ := os.ReadFile(path + ".wal")
			if !bytes.Equal(before, after) || !bytes.Equal(beforeLog, afterLog) {
				t.Error("a refused file was modified")
			}
		})
	}
}

// writeV1 makes a version-1 state file (no log) with lease "a".
func writeV1(t *testing.T, path string) {
	t.Helper()
	b, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = b.Update(func(tx *bolt.Tx) error {
		meta, _ := tx.CreateBucket(metaBucket)
		meta.Put(versionKey, []byte("1"))
		leases, _ := tx.CreateBucket(leasesBucket)
		tx.CreateBucket(servicesBucket)
		return leases.Put([]byte("a"), []byte(`{"id":"a","attempt":"at-1","admitted":"2025-01-02T03:04:05Z"}`))
	})
	b.Close()
	if err != nil {
		t.Fatal(err)
	}
}

// writeRec writes a record with a valid checksum into the log at off.
func writeRec(t *testing.T, logPath string, off int64, seq uint64, payload []byte) {
	t.Helper()
	r := appendRecord(nil, seq, payload)
	f, err := os.OpenFile(logPath, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(r, off); err != nil {
		t.Fatal(err)
	}
}

func rawPayload(op byte, key, val string) []byte {
	p := []byte{op}
	p = binary.AppendUvarint(p, uint64(len(key)))
	p = append(p, key...)
	p = binary.AppendUvarint(p, uint64(len(val)))
	return append(p, val...)
}

// TestUpgradeFromVersion1: a version-1 state file (no log) keeps its
// records and becomes version 2.
func TestUpgradeFromVersion1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	writeV1(t, path)
	db := openT(t, path)
	apply(t, db, engine.PutLease{Lease: lease("b")})
	db.Close()
	db = openT(t, path)
	if d := cmp.Diff([]string{"a", "b"}, leaseIDs(state(t, db))); d != "" {
		t.Errorf("leases (-want +got):\n%s", d)
	}
	db.bolt.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(metaBucket).Get(versionKey); string(v) != "2" {
			t.Errorf("version %q", v)
		}
		return nil
	})
}

// TestFailedLogWriteStopsWrites: after a log write fails, no later batch
// is written (it would be numbered after a record that may be missing).
func TestFailedLogWriteStopsWrites(t *testing.T) {
	db := openT(t, filepath.Join(t.TempDir(), "state.db"))
	db.log.f.Close() // every write now fails
	if err := db.Apply([]engine.Effect{engine.PutLease{Lease: lease("a")}}); err == nil ||
		!strings.Contains(err.Error(), "write-ahead log") {
		t.Fatalf("Apply = %v", err)
	}
	err := db.Apply([]engine.Effect{engine.PutLease{Lease: lease("b")}})
	if err == nil || !strings.Contains(err.Error(), "an earlier write failed") {
		t.Fatalf("second Apply = %v", err)
	}
}

// TestMissingLogAfterCleanClose is made anew: the state file holds
// everything.
func TestMissingLogAfterCleanClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	validStore(t, path)
	os.Remove(path + ".wal")
	db := openT(t, path)
	if st := state(t, db); len(st.Leases) != 1 {
		t.Fatalf("state %+v", st)
	}
	apply(t, db, engine.PutLease{Lease: lease("b")})
}

// TestFailedStoreRefusesReads: after a failed write, State fails too (the
// state file lacks what the log acknowledged), and so does anything after
// Close.
func TestFailedStoreRefusesReads(t *testing.T) {
	db := openT(t, filepath.Join(t.TempDir(), "state.db"))
	apply(t, db, engine.PutLease{Lease: lease("acked")})
	db.log.f.Close()
	if err := db.Apply([]engine.Effect{engine.PutLease{Lease: lease("b")}}); err == nil {
		t.Fatal("Apply succeeded")
	}
	if _, err := db.State(); err == nil || !strings.Contains(err.Error(), "an earlier write failed") {
		t.Errorf("State after a failed write: %v", err)
	}
	db.Close()
	for name, f := range map[string]func() error{
		"Apply": func() error { return db.Apply([]engine.Effect{engine.PutLease{Lease: lease("a")}}) },
		"State": func() error { _, err := db.State(); return err },
	} {
		if err := f(); err == nil || !strings.Contains(err.Error(), "closed") {
			t.Errorf("%s after Close: %v", name, err)
		}
	}
}

// TestRecordsStartBlocks: a record never shares a block with the one
// before it, so writing it cannot tear an acknowledged one.
func TestRecordsStartBlocks(t *testing.T) {
	db := openT(t, filepath.Join(t.TempDir(), "state.db"))
	for i := range 5 {
		before := db.log.off
		apply(t, db, engine.PutLease{Lease: lease(strconv.Itoa(i))})
		if before%logBlock != 0 || db.log.off != before+logBlock {
			t.Fatalf("record %d at %d, next at %d", i, before, db.log.off)
		}
	}
}
