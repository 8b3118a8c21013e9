package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

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
