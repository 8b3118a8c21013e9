package agent

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/internal/testhost"
	"github.com/oarbank/svcrun/store"
)

// stallStore is a store whose writes wait, once armed, until released: a
// frozen disk.
type stallStore struct {
	engine.Store
	mu      sync.Mutex
	armed   bool
	entered chan struct{} // closed when an armed write starts waiting
	release chan struct{}
}

func (s *stallStore) arm() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed, s.entered, s.release = true, make(chan struct{}), make(chan struct{})
}

func (s *stallStore) Apply(batch []engine.Effect) error {
	s.mu.Lock()
	armed, entered, release := s.armed, s.entered, s.release
	s.armed = false
	s.mu.Unlock()
	if armed {
		close(entered)
		<-release
	}
	return s.Store.Apply(batch)
}

// TestStatusWhileStoreWriteStalls: while a store write waits for a frozen
// disk, status and metrics answer at once, from the last stored step (not
// the step being written), and the write is logged at ERROR once it has
// waited SlowWrite and with its duration when it ends.
func TestStatusWhileStoreWriteStalls(t *testing.T) {
	logs := testhost.NewLogLines(t)
	a, err := Open(Options{PressureFile: noPressure, ConfigPath: testConfig(t),
		Logger: slog.New(slog.NewTextHandler(logs, nil)), NoContainers: true})
	if err != nil {
		t.Fatal(err)
	}
	stall := &stallStore{Store: a.db}
	a.persist = stall
	a.slowWrite = 50 * time.Millisecond // SlowWrite is seconds: the test waits for the log lines, not the clock
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() { cancel(); <-done }()
	guard, stop := context.WithTimeout(context.Background(), 60*time.Second) // only a guard against a hang
	defer stop()

	before, err := a.Status(guard)
	if err != nil {
		t.Fatal(err)
	}
	stall.arm()
	var once sync.Once
	release := func() { once.Do(func() { close(stall.release) }) }
	defer release() // before Run is stopped, also when the test fails
	acquired := make(chan error, 1)
	go func() {
		_, err := a.Acquire(guard, AcquireRequest{Job: "stalled"})
		acquired <- err
	}()
	<-stall.entered // the loop now waits for the disk
	st, err := answersAtOnce(t, func() (Status, error) { return a.Status(guard) })
	if err != nil {
		t.Fatalf("Status while a write waits: %v", err)
	}
	if len(st.Leases) != len(before.Leases) || st.Steps < before.Steps {
		t.Errorf("status shows the step being written: %d leases (before %d), step %d (before %d)",
			len(st.Leases), len(before.Leases), st.Steps, before.Steps)
	}
	m, err := answersAtOnce(t, func() (string, error) {
		var m bytes.Buffer
		err := a.WriteMetrics(guard, &m)
		return m.String(), err
	})
	if err != nil || !strings.Contains(m, `svcrun_leases{state="admitted"} 0`) {
		t.Errorf("metrics while a write waits: %v\n%s", err, m)
	}
	logs.WaitFor("level=ERROR", "store write waiting for the disk")
	if w := value(scrape(t, a), "svcrun_store_write_waiting_seconds"); w < a.slowWrite.Seconds() {
		t.Errorf("svcrun_store_write_waiting_seconds %v once the write has waited %v", w, a.slowWrite)
	}
	release()
	if err := <-acquired; err != nil {
		t.Fatalf("Acquire after the disk came back: %v", err)
	}
	logs.WaitFor("level=ERROR", `msg="slow store write" took=`)
	fams := scrape(t, a)
	if w := value(fams, "svcrun_store_write_waiting_seconds"); w != 0 {
		t.Errorf("svcrun_store_write_waiting_seconds %v after the write", w)
	}
	if h := sample(fams, "svcrun_store_write_duration_seconds").GetHistogram(); h.GetSampleSum() < a.slowWrite.Seconds() {
		t.Errorf("store write durations sum to %v s, less than the stalled write's %v", h.GetSampleSum(), a.slowWrite)
	}
	st, err = a.Status(guard)
	if err != nil || len(st.Leases) != len(before.Leases)+1 {
		t.Fatalf("status after the write: %d leases, %v", len(st.Leases), err)
	}
}

// answersAtOnce runs f and fails the test if it has not returned in 60 s (a
// guard: it should return at once).
func answersAtOnce[T any](t *testing.T, f func() (T, error)) (T, error) {
	t.Helper()
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() { v, err := f(); ch <- result{v, err} }()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-time.After(60 * time.Second):
		t.Fatal("still waiting after 60s: it waits for the loop, which waits for the disk")
	}
	panic("unreachable")
}

// TestJournalFailureIsQuiet: a journal that cannot write (a full disk:
// /dev/full) never stops a step and is logged at most once a minute of
// step time; once it can write again, it journals the next steps, on a
// line of their own, and says so once.
func TestJournalFailureIsQuiet(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip("no /dev/full")
	}
	dir := t.TempDir()
	j, err := OpenJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	live := j.f
	j.f = full
	j.w.Reset(full)
	logs := testhost.NewLogLines(t)
	a := &Agent{opts: Options{Clock: clock.New()}, slowWrite: SlowWrite,
		log: slog.New(slog.NewTextHandler(logs, nil)), jour: j}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	step := func(i int) {
		a.record(at.Add(time.Duration(i)*10*time.Millisecond), engine.Doctor{Reason: "r"}, nil)
	}
	for i := range 9000 { // 90 s of steps, every one failing the journal
		step(i)
	}
	if n := logs.Count("journal"); n != 2 {
		t.Errorf("%d log lines about the journal in 90 s, want 2 (at 0 s and 60 s)", n)
	}
	if n := logs.Count("level=WARN", "journal: steps are not journaled", "failures=6000"); n != 1 {
		t.Errorf("the second line does not count the 6000 failures of the minute since the first")
	}
	// Space is back (the file is another one here: /dev/full stays full).
	// The buffer still holds its error; the journal drops it and takes up
	// with the step after.
	j.f = live
	step(12100) // fails, and is logged: a minute after the last line
	step(18200) // works, and says so: a minute after that
	if n := logs.Count("level=INFO", "journal: journaling again"); n != 1 {
		t.Errorf("%d lines saying the journal works again, want 1", n)
	}
	data, err := os.ReadFile(filepath.Join(dir, JournalName))
	if err != nil || !strings.HasPrefix(string(data), "\n{") || strings.Count(string(data), "\n") != 2 {
		t.Errorf("journal after the failures: %q, %v; want the next step on a line of its own", data, err)
	}
}

// nopStore stores nothing.
type nopStore struct{}

func (nopStore) Apply([]engine.Effect) error { return nil }

// TestWatchedWriteAllocations: watching a store write for a stall makes
// no timer and no closure of its own per write (it made a timer and four
// closures, at two writes every step); what is left is the write's
// duration measured for /metrics.
func TestWatchedWriteAllocations(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), StateFile), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	a := &Agent{opts: Options{Clock: clock.New()}, slowWrite: SlowWrite,
		log: slog.New(slog.DiscardHandler), db: db, persist: nopStore{}, meters: newMeters()}
	g := storeGate{a}
	batch := []engine.Effect{engine.DeleteLease{Lease: "lease-1"}}
	if err := g.Apply(batch); err != nil { // the first write makes the watch's timer
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { g.Apply(batch) }); n > 2 {
		t.Errorf("%.0f allocations to watch a store write, want at most 2", n)
	}
}

// TestLateStallTimerIgnored: the one timer of a kind of write is reset at
// each write, so its fire for a write that has ended may come late, during
// the next one: it marks nothing stalled and logs nothing. The next
// write's own wait still is.
func TestLateStallTimerIgnored(t *testing.T) {
	mock := clock.NewMock()
	logs := testhost.NewLogLines(t)
	a := &Agent{opts: Options{Clock: mock}, slowWrite: time.Hour,
		log: slog.New(slog.NewTextHandler(logs, nil)), persist: nopStore{}, meters: newMeters()}
	w := &writeWatch{what: "test write", where: func(int) []any { return nil }}
	a.writeBegins(w, 1)
	a.writeEnds(w)
	mock.Add(time.Hour) // stopped: no fire
	a.writeBegins(w, 1)
	a.writeWaited(w) // as the first write's fire would, late
	a.snaps.mu.Lock()
	stalling := a.snaps.stalling
	a.snaps.mu.Unlock()
	if stalling || logs.Count("waiting for the disk") > 0 {
		t.Fatalf("a late fire marked the write that had just begun stalled (stalling %v, %d lines)",
			stalling, logs.Count("waiting for the disk"))
	}
	mock.Add(time.Hour) // the second write's own fire
	logs.WaitFor("level=ERROR", "test write waiting for the disk")
	a.writeEnds(w)
	if n := logs.Count("level=ERROR", `msg="slow test write" took=1h0m0s`); n != 1 {
		t.Errorf("%d lines for the slow write's end, want 1", n)
	}
}
