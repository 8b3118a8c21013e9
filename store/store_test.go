package store

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/oarbank/svcrun/engine"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 123456789, time.UTC)

func lease(id string) engine.LeaseRecord {
	return engine.LeaseRecord{ID: engine.LeaseID(id), Job: "build", Attempt: "a-" + id, Admitted: t0}
}

func openT(t testing.TB, path string) *DB {
	t.Helper()
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func apply(t testing.TB, db *DB, batch ...engine.Effect) {
	t.Helper()
	if err := db.Apply(batch); err != nil {
		t.Fatal(err)
	}
}

func state(t testing.TB, db *DB) engine.State {
	t.Helper()
	st, err := db.State()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// fullState exercises every field of both records.
func fullState() engine.State {
	return engine.State{
		Leases: []engine.LeaseRecord{
			{ID: "a", Attempt: "at-1", Admitted: t0},
			{ID: "b/ünïcode lease", Job: "job-b", Attempt: "at-2",
				Requirements: engine.Requirements{Pools: map[string]int64{"gpu": 2, "ram-gb": 16},
					NeedsPools: []string{"net"}, Capabilities: []string{"docker", "kvm"}},
				TTL: 30 * time.Second, Expires: t0.Add(30 * time.Second), Admitted: t0},
			{ID: "c", Attempt: "at-3", Admitted: t0.In(time.FixedZone("X", 3600))},
		},
		Services: []engine.ServiceRecord{
			{Name: "colima/vm", Failures: 3, Unhealthy: true, Reason: "exit 1: no space", BackoffUntil: t0.Add(time.Minute)},
			{Name: "db/postgres"},
			{Name: "vms/linux", LastUsed: t0.Add(-time.Hour)},
		},
	}
}

func TestRoundTripEveryEffect(t *testing.T) {
	db := openT(t, filepath.Join(t.TempDir(), "state.db"))
	if got := state(t, db); !cmp.Equal(got, engine.State{}) {
		t.Fatalf("new store not empty: %+v", got)
	}
	want := fullState()
	var batch []engine.Effect
	for _, l := range want.Leases {
		batch = append(batch, engine.PutLease{Lease: l})
	}
	for _, s := range want.Services {
		batch = append(batch, engine.PutService{Service: s})
	}
	// Written in reverse: State sorts.
	for i, j := 0, len(batch)-1; i < j; i, j = i+1, j-1 {
		batch[i], batch[j] = batch[j], batch[i]
	}
	apply(t, db, batch...)
	if d := cmp.Diff(want, state(t, db)); d != "" {
		t.Fatalf("State after puts (-want +got):\n%s", d)
	}

	// Overwrite, delete, delete of an unknown lease (a no-op), and an update
	// of a service, in one batch; a later effect of the batch wins.
	renewed := want.Leases[1]
	renewed.Expires = t0.Add(time.Hour)
	healed := engine.ServiceRecord{Name: "colima/vm"}
	apply(t, db,
		engine.PutLease{Lease: lease("d")},
		engine.DeleteLease{Lease: "a"},
		engine.DeleteLease{Lease: "never-there"},
		engine.PutLease{Lease: renewed},
		engine.PutService{Service: engine.ServiceRecord{Name: "colima/vm", Failures: 9}},
		engine.PutService{Service: healed},
		engine.PutLease{Lease: lease("e")},
		engine.DeleteLease{Lease: "e"},
	)
	want.Leases = []engine.LeaseRecord{renewed, want.Leases[2], lease("d")}
	want.Services[0] = healed
	if d := cmp.Diff(want, state(t, db)); d != "" {
		t.Fatalf("State after the second batch (-want +got):\n%s", d)
	}
	// An empty batch is no transaction and no error.
	apply(t, db)
}

func TestBatchIsAtomic(t *testing.T) {
	db := openT(t, filepath.Join(t.TempDir(), "state.db"))
	apply(t, db, engine.PutLease{Lease: lease("keep")},
		engine.PutService{Service: engine.ServiceRecord{Name: "m/s", Failures: 1}})
	before := state(t, db)

	good := []engine.Effect{
		engine.PutLease{Lease: lease("new")},
		engine.DeleteLease{Lease: "keep"},
		engine.PutService{Service: engine.ServiceRecord{Name: "m/s", Failures: 2}},
		engine.PutService{Service: engine.ServiceRecord{Name: "m/other"}},
	}
	for _, tc := range []struct {
		name string
		bad  engine.Effect
		msg  string
	}{
		{"not a persistence effect", engine.Note{Subject: "x", Text: "y"},
			"effect 4 is a engine.Note, not a persistence effect (a driver bug)"},
		{"pointer effect", &engine.PutLease{Lease: lease("p")}, "effect 4 is a *engine.PutLease, not a persistence effect"},
		{"nil effect", nil, "effect 4 is a <nil>, not a persistence effect"},
		{"empty lease id", engine.PutLease{Lease: engine.LeaseRecord{Attempt: "x"}},
			"effect 4 (put-lease) has an empty lease id"},
		{"empty delete id", engine.DeleteLease{}, "effect 4 (delete-lease) has an empty lease id"},
		{"empty service name", engine.PutService{}, "effect 4 (put-service) has an empty service name"},
		{"key too large", engine.PutLease{Lease: lease(strings.Repeat("k", bolt.MaxKeySize+1))}, "effect 4: key too large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := db.Apply(append(good[:len(good):len(good)], tc.bad))
			if err == nil || !strings.Contains(err.Error(), tc.msg) ||
				!strings.Contains(err.Error(), "batch of 5 effects not written") {
				t.Fatalf("Apply = %v, want an error with %q", err, tc.msg)
			}
			if d := cmp.Diff(before, state(t, db)); d != "" {
				t.Fatalf("a failed batch left changes (-before +after):\n%s", d)
			}
		})
	}
	// The store still works, and the failed batches are not there after a
	// reopen either.
	path := db.Path()
	db.Close()
	db = openT(t, path)
	if d := cmp.Diff(before, state(t, db)); d != "" {
		t.Fatalf("after reopen (-before +after):\n%s", d)
	}
	apply(t, db, good...)
}

func TestReopenKeepsEverything(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := fullState()
	for _, l := range want.Leases {
		apply(t, db, engine.PutLease{Lease: l})
	}
	for _, s := range want.Services {
		apply(t, db, engine.PutService{Service: s})
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		db = openT(t, path)
		if d := cmp.Diff(want, state(t, db)); d != "" {
			t.Fatalf("after reopen (-want +got):\n%s", d)
		}
		db.Close()
	}
}

func TestFileAndDirMode(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix modes")
	}
	dir := filepath.Join(t.TempDir(), "data", "svcrun")
	path := filepath.Join(dir, "state.db")
	db := openT(t, path)
	apply(t, db, engine.PutLease{Lease: lease("a")})
	for _, c := range []struct {
		path string
		mode os.FileMode
	}{{path, 0o600}, {path + ".wal", 0o600}, {dir, 0o700 | os.ModeDir}, {filepath.Dir(dir), 0o700 | os.ModeDir}} {
		fi, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != c.mode {
			t.Errorf("%s: mode %v, want %v", c.path, fi.Mode(), c.mode)
		}
	}
	// Only the state file and its log are in the directory (no temporary
	// file left).
	names, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(names) != 2 {
		t.Errorf("directory holds %v", names)
	}
}

func TestSecondOpenFailsFast(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db := openT(t, path)
	start := time.Now()
	db2, err := Open(path, Options{})
	took := time.Since(start)
	if err == nil {
		db2.Close()
		t.Fatal("second Open succeeded")
	}
	if !errors.Is(err, ErrLocked) {
		t.Errorf("error %v is not ErrLocked", err)
	}
	want := "state file " + path + " is locked by another svcrun"
	if runtime.GOOS == "linux" {
		want += fmt.Sprintf(" (pid %d)", os.Getpid())
	}
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q does not start with %q", err, want)
	}
	// The lock timeout is the floor, which no load can lower; a loaded
	// machine only adds to it, so the ceiling merely tells a wait bounded
	// by the timeout from one for the lock's release.
	if took < 800*time.Millisecond || took > time.Minute {
		t.Errorf("second Open took %v, want its lock timeout of %v, give or take a loaded machine's delay", took,
			DefaultLockTimeout)
	}
	t.Log(err)
	// The first one is unharmed.
	apply(t, db, engine.PutLease{Lease: lease("a")})
}

// TestLockOfAnotherProcess: the holder is named by its pid, and a holder
// killed with SIGKILL leaves no stale lock.
func TestLockOfAnotherProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	cmd, out := helper(t, "hold", path, 0)
	if line, err := out.ReadString('\n'); err != nil || line != "open\n" {
		t.Fatalf("helper said %q, %v", line, err)
	}
	_, err := Open(path, Options{LockTimeout: 200 * time.Millisecond})
	want := "is locked by another svcrun"
	if runtime.GOOS == "linux" {
		want += fmt.Sprintf(" (pid %d)", cmd.Process.Pid)
	}
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Open = %v, want %q", err, want)
	}
	cmd.Process.Kill()
	cmd.Wait()
	db := openT(t, path)
	if st := state(t, db); len(st.Leases) != 1 || st.Leases[0].ID != "held" {
		t.Fatalf("state %+v", st)
	}
}

func setVersion(t *testing.T, path string, v string) {
	t.Helper()
	b, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Update(func(tx *bolt.Tx) error { return tx.Bucket(metaBucket).Put(versionKey, []byte(v)) }); err != nil {
		t.Fatal(err)
	}
}

func TestVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db := openT(t, path)
	db.Close()
	b, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	b.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(metaBucket).Get(versionKey); string(v) != "2" {
			t.Errorf("version %q, want 2", v)
		}
		return nil
	})
	b.Close()

	setVersion(t, path, "3")
	before, _ := os.ReadFile(path)
	_, err = Open(path, Options{})
	if !errors.Is(err, ErrNewerVersion) ||
		!strings.Contains(err.Error(), "state file "+path+" has schema version 3, but this svcrun knows only version 2") {
		t.Fatalf("Open = %v", err)
	}
	t.Log(err)
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("the refused file was modified")
	}
}

func TestCorruptFileIsRefused(t *testing.T) {
	garbage := make([]byte, 64<<10)
	rand.Read(garbage)
	for _, tc := range []struct {
		name string
		make func(t *testing.T, path string)
		why  string
	}{
		{"garbage", func(t *testing.T, path string) { os.WriteFile(path, garbage, 0o600) }, "invalid database"},
		{"text", func(t *testing.T, path string) { os.WriteFile(path, []byte("node_id = \"n\"\n"), 0o600) },
			"invalid database"},
		{"both meta pages smashed", func(t *testing.T, path string) {
			validStore(t, path)
			f, _ := os.OpenFile(path, os.O_RDWR, 0)
			f.WriteAt(garbage[:8192], 0)
			f.Close()
		}, "invalid database"},
		{"data page smashed", func(t *testing.T, path string) {
			validStore(t, path)
			fi, _ := os.Stat(path)
			f, _ := os.OpenFile(path, os.O_RDWR, 0)
			meta := int64(2 * os.Getpagesize())
			f.WriteAt(garbage[:fi.Size()-meta], meta) // every page after the two meta pages
			f.Close()
		}, ""},
		{"another bbolt file", func(t *testing.T, path string) {
			b, _ := bolt.Open(path, 0o600, nil)
			b.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("jobs")); return err })
			b.Close()
		}, `it has no "meta" bucket`},
		{"no version", func(t *testing.T, path string) {
			validStore(t, path)
			b, _ := bolt.Open(path, 0o600, nil)
			b.Update(func(tx *bolt.Tx) error { return tx.Bucket(metaBucket).Delete(versionKey) })
			b.Close()
		}, "it has no schema version"},
		{"bad version", func(t *testing.T, path string) { validStore(t, path); setVersion(t, path, "one") },
			`its schema version "one" is not valid`},
		{"no services bucket", func(t *testing.T, path string) {
			validStore(t, path)
			b, _ := bolt.Open(path, 0o600, nil)
			b.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket(servicesBucket) })
			b.Close()
		}, `it has no "services" bucket`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			tc.make(t, path)
			before, _ := os.ReadFile(path)
			db, err := Open(path, Options{})
			if err == nil {
				db.Close()
				t.Fatal("Open succeeded")
			}
			msg := err.Error()
			if !errors.Is(err, ErrCorrupt) ||
				!strings.HasPrefix(msg, "state file "+path+" is damaged or is not an svcrun state file (") ||
				!strings.Contains(msg, tc.why) || !strings.Contains(msg, "nothing already stored is lost") ||
				!strings.Contains(msg, "mv "+path+" "+path+".damaged") {
				t.Fatalf("Open = %v", err)
			}
			t.Log(err)
			if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
				t.Fatal("the refused file was modified")
			}
			// Refused again, the same way: nothing was reset.
			if _, err2 := Open(path, Options{}); err2 == nil || err2.Error() != msg {
				t.Fatalf("second Open = %v", err2)
			}
		})
	}
}

// validStore makes a store holding a lease and a service.
func validStore(t *testing.T, path string) {
	t.Helper()
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	apply(t, db, engine.PutLease{Lease: lease("a")}, engine.PutService{Service: engine.ServiceRecord{Name: "m/s"}})
	db.Close()
}

func TestUndecodableRecord(t *testing.T) {
	for _, tc := range []struct {
		bucket []byte
		key    string
		value  string
		why    string
	}{
		{leasesBucket, "l-2", `{"id":"l-2","ttl":"soon"}`,
			`bucket "leases" key "l-2": the record does not decode: json: cannot unmarshal`},
		{servicesBucket, "m/x", `not json`, `bucket "services" key "m/x": the record does not decode: invalid character`},
		{leasesBucket, "l-3", `{"id":"l-4","attempt":"a"}`, `bucket "leases" key "l-3": the record's id is "l-4"`},
		{servicesBucket, "m/y", `{"name":"m/z"}`, `bucket "services" key "m/y": the record's name is "m/z"`},
	} {
		path := filepath.Join(t.TempDir(), "state.db")
		validStore(t, path)
		b, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		b.Update(func(tx *bolt.Tx) error { return tx.Bucket(tc.bucket).Put([]byte(tc.key), []byte(tc.value)) })
		b.Close()
		// Refused by Open, before it writes anything (State would refuse
		// it too, after Open had marked the file open).
		db, err := Open(path, Options{})
		if err == nil {
			db.Close()
		}
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("Open = %v; want %q", err, tc.why)
		}
	}
}

// A service record stored before a field existed restores with that
// field's zero value: last_used (a record of svcrun before it kept the
// order of yielding) is zero, least recently used, as that svcrun had it.
func TestRecordsOfOlderVersionsRestore(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		want        engine.ServiceRecord
	}{
		{"before last_used", `{"name":"m/a","failures":2,"reason":"exit 1"}`,
			engine.ServiceRecord{Name: "m/a", Failures: 2, Reason: "exit 1"}},
		{"with last_used", `{"name":"m/a","failures":0,"last_used":"2026-01-01T00:00:00Z"}`,
			engine.ServiceRecord{Name: "m/a", LastUsed: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			validStore(t, path)
			putRaw(t, path, servicesBucket, "m/a", tc.value)
			db := openT(t, path)
			var got engine.ServiceRecord
			for _, s := range state(t, db).Services {
				if s.Name == "m/a" {
					got = s
				}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("restored record (-want +got):\n%s", d)
			}
		})
	}
}

func TestEmptyFileIsInitialised(t *testing.T) {
	// A zero-length file holds nothing: it becomes an empty store.
	path := filepath.Join(t.TempDir(), "state.db")
	os.WriteFile(path, nil, 0o600)
	db := openT(t, path)
	apply(t, db, engine.PutLease{Lease: lease("a")})
	if st := state(t, db); len(st.Leases) != 1 {
		t.Fatal(st)
	}
}

func TestLeftoverOfCrashedCreationIsRemoved(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	leftover := path + ".new-12345"
	os.WriteFile(leftover, []byte("half"), 0o600)
	os.WriteFile(filepath.Join(dir, "other.new-1"), nil, 0o600)
	openT(t, path)
	if _, err := os.Stat(leftover); err == nil {
		t.Error("leftover still there")
	}
	if _, err := os.Stat(filepath.Join(dir, "other.new-1")); err != nil {
		t.Error("an unrelated file was removed")
	}
}

// helper re-executes the test binary as TestHelperProcess in mode with the
// store at path; it returns the process and its stdout.
func helper(t *testing.T, mode, path string, logBytes int64) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "STORE_HELPER="+mode, "STORE_HELPER_PATH="+path,
		"STORE_HELPER_LOG_BYTES="+strconv.FormatInt(logBytes, 10))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
	return cmd, bufio.NewReader(out)
}

func leaseN(i int) engine.LeaseID { return engine.LeaseID(fmt.Sprintf("lease-%07d", i)) }

// TestHelperProcess is the helper of the multi-process tests, not a test.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv("STORE_HELPER")
	if mode == "" {
		return
	}
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(2)
	}
	logBytes, _ := strconv.ParseInt(os.Getenv("STORE_HELPER_LOG_BYTES"), 10, 64)
	db, err := Open(os.Getenv("STORE_HELPER_PATH"), Options{LogBytes: logBytes})
	if err != nil {
		fail(err)
	}
	switch mode {
	case "hold":
		if err := db.Apply([]engine.Effect{engine.PutLease{Lease: lease("held")}}); err != nil {
			fail(err)
		}
		os.Stdout.WriteString("open\n")
		io.Copy(io.Discard, os.Stdin) // until the parent closes it, or kills us
	case "apply":
		// Batch i: put lease i, put service m/s with i failures, delete
		// lease i-3. Its number is printed once Apply has returned.
		for i := 0; ; i++ {
			rec := lease(string(leaseN(i)))
			rec.Requirements.Pools = map[string]int64{"gpu": int64(i % 4)}
			batch := []engine.Effect{engine.PutLease{Lease: rec},
				engine.PutService{Service: engine.ServiceRecord{Name: "m/s", Failures: i}}}
			if i >= 3 {
				batch = append(batch, engine.DeleteLease{Lease: leaseN(i - 3)})
			}
			if err := db.Apply(batch); err != nil {
				fail(err)
			}
			if _, err := os.Stdout.WriteString(strconv.Itoa(i) + "\n"); err != nil {
				fail(err)
			}
		}
	}
	db.Close()
	os.Exit(0)
}

// TestKill9 kills a process applying batches at a random moment (perhaps
// while it creates the file) and checks that every batch it acknowledged
// is on disk, and that the one in flight is there whole or not at all.
// Every other run has the smallest log, so that it checkpoints every few
// batches and the kill often lands in a checkpoint.
func TestKill9(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("TerminateProcess is not SIGKILL")
	}
	runs := 20
	if testing.Short() {
		runs = 5
	}
	for run := range runs {
		path := filepath.Join(t.TempDir(), "data", "state.db")
		logBytes := int64(0)
		if run%2 == 1 {
			logBytes = MinLogBytes
		}
		cmd, out := helper(t, "apply", path, logBytes)
		acked := make(chan int, 1<<16)
		go func() {
			defer close(acked)
			for {
				line, err := out.ReadString('\n')
				if err != nil {
					return
				}
				n, _ := strconv.Atoi(strings.TrimSpace(line))
				acked <- n
			}
		}()
		delay := time.Duration(mrand.IntN(250)) * time.Millisecond
		time.Sleep(delay)
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		n := 0 // batches acknowledged: 0 .. n-1
		for i := range acked {
			if i != n {
				t.Fatalf("run %d: ack %d after %d acks", run, i, n)
			}
			n++
		}
		if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
			t.Fatalf("run %d: helper ended with %v, want killed (see its stderr)", run, err)
		}

		db, err := Open(path, Options{})
		if err != nil {
			t.Fatalf("run %d (killed after %v, %d acks): reopen: %v", run, delay, n, err)
		}
		st := state(t, db)
		db.Close()
		t.Logf("run %d (log %d bytes): killed after %v, %d batches acknowledged, %d leases on disk", run, logBytes,
			delay, n, len(st.Leases))
		if err := checkKilled(st, n); err != nil {
			t.Fatalf("run %d (killed after %v, %d acks): %v\nstate: %+v", run, delay, n, err, st)
		}
	}
}

// checkKilled checks the state left by the apply helper after n
// acknowledged batches: batches 0..n-1 are there, batch n whole or not at
// all, nothing after it.
func checkKilled(st engine.State, n int) error {
	present := map[engine.LeaseID]bool{}
	for _, l := range st.Leases {
		present[l.ID] = true
	}
	inFlight := present[leaseN(n)] // batch n committed, unacknowledged
	last := n - 1                  // last committed batch
	if inFlight {
		last = n
	}
	for i := 0; i <= last; i++ {
		if want := i > last-3; present[leaseN(i)] != want {
			return fmt.Errorf("lease %d: present=%v, want %v (last committed batch %d)", i, present[leaseN(i)], want, last)
		}
	}
	want := min(last+1, 3)
	if len(st.Leases) != want {
		return fmt.Errorf("%d leases, want %d", len(st.Leases), want)
	}
	switch {
	case last < 0 && len(st.Services) != 0:
		return fmt.Errorf("services %+v before any batch", st.Services)
	case last >= 0 && (len(st.Services) != 1 || st.Services[0].Failures != last):
		return fmt.Errorf("services %+v, want m/s with %d failures", st.Services, last)
	}
	return nil
}

// BenchmarkApplyLease: one op is one Apply, as the driver makes them: the
// admission of a lease (PutLease), then its release (DeleteLease). The
// checkpoint sub-benchmark writes every batch into the state file, as a
// store without the log would (two fsyncs per batch).
func BenchmarkApplyLease(b *testing.B) {
	for _, mode := range []string{"log", "checkpoint"} {
		b.Run(mode, func(b *testing.B) {
			db := openT(b, filepath.Join(b.TempDir(), "state.db"))
			rec := fullState().Leases[1]
			for i := range 100 { // some live leases around
				rec.ID = engine.LeaseID(fmt.Sprintf("live-%03d", i))
				apply(b, db, engine.PutLease{Lease: rec})
			}
			i := 0
			for b.Loop() {
				id := leaseN(i / 2)
				var f engine.Effect = engine.DeleteLease{Lease: id}
				if i%2 == 0 {
					rec.ID = id
					f = engine.PutLease{Lease: rec}
				}
				if err := db.Apply([]engine.Effect{f}); err != nil {
					b.Fatal(err)
				}
				if mode == "checkpoint" {
					db.mu.Lock()
					err := db.checkpoint()
					db.mu.Unlock()
					if err != nil {
						b.Fatal(err)
					}
				}
				i++
			}
		})
	}
}
