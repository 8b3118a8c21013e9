package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/oarbank/svcrun/engine"
)

// Journal writes every engine step as a JSON line (engine.JournalEntry,
// with the records of the event stream it made: journalLine) into
// dir/journal.jsonl, rotating it to journal-<time>.jsonl when it grows
// past MaxBytes and keeping the newest Keep rotated files. `svcsim replay`
// re-runs a journal through the engine.
//
// A journal that cannot write (a full disk) drops the lines it could not
// write and takes up again with the next one that can be written; one that
// could not be opened tries again at most once a ReopenEvery (of step
// time). Its errors are for the caller to log, never fatal.
type Journal struct {
	dir         string
	MaxBytes    int64
	Keep        int
	ReopenEvery time.Duration

	f    *os.File
	w    *bufio.Writer
	size int64
	// torn is set after a failed write: the file may end in part of a
	// line, which the next line must not continue.
	torn     bool
	openedAt time.Time // the last attempt to open, while f is nil
	// line is the buffer each line is encoded in, by enc.
	line bytes.Buffer
	enc  *json.Encoder
}

// JournalName is the live journal's file name.
const JournalName = "journal.jsonl"

// OpenJournal opens (appending) the journal in dir, creating dir 0700.
func OpenJournal(dir string) (*Journal, error) {
	j := NewJournal(dir)
	if err := j.open(); err != nil {
		return nil, err
	}
	return j, nil
}

// NewJournal is a journal in dir that opens at its first Write: svcrun
// runs on without a journal it cannot open (a full disk) and opens it
// when it can.
func NewJournal(dir string) *Journal {
	return &Journal{dir: dir, MaxBytes: 64 << 20, Keep: 5, ReopenEvery: time.Minute}
}

func (j *Journal) open() error {
	if err := os.MkdirAll(j.dir, 0o700); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(j.dir, JournalName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("journal: %w", err)
	}
	j.f, j.w, j.size = f, bufio.NewWriterSize(f, 64<<10), fi.Size()
	return nil
}

// journalLine is one line of the journal: an engine step (what svcsim
// replay re-runs) and the records of the event stream it made, in their
// words (svcrun events reads them across restarts). A line without an
// event holds records alone, made by svcrun outside the engine (a
// reload's verdict); replay skips it.
type journalLine struct {
	engine.JournalEntry
	Records []journalRecord `json:"records,omitempty"`
}

// journalRecord is a Record in a journal line, whose time it has.
type journalRecord struct {
	Kind string `json:"kind"`
	Text string `json:"text"`
}

// Write appends one step and the records it made. Errors are returned,
// not fatal: the journal is for diagnosis, the store is what must not
// fail.
func (j *Journal) Write(at time.Time, ev engine.Event, effects []engine.Effect, records []Record) error {
	e, err := engine.NewJournalEntry(at, ev, effects)
	if err != nil {
		return err
	}
	return j.writeLine(journalLine{JournalEntry: e, Records: recordsOf(records)})
}

// WriteRecords appends a line of records alone.
func (j *Journal) WriteRecords(at time.Time, records []Record) error {
	return j.writeLine(journalLine{JournalEntry: engine.JournalEntry{At: at}, Records: recordsOf(records)})
}

func recordsOf(rs []Record) []journalRecord {
	if len(rs) == 0 {
		return nil
	}
	out := make([]journalRecord, len(rs))
	for i, r := range rs {
		out[i] = journalRecord{Kind: r.Kind, Text: r.Text}
	}
	return out
}

func (j *Journal) writeLine(e journalLine) error {
	at := e.At
	// Encoded into a buffer kept from line to line (json.Marshal copies
	// out every line): a line at every step, the API's too.
	j.line.Reset()
	if j.enc == nil {
		j.enc = json.NewEncoder(&j.line)
	}
	if err := j.enc.Encode(e); err != nil { // the line and its '\n'
		return fmt.Errorf("journal: %w", err)
	}
	line := j.line.Bytes()
	if j.f == nil {
		if !j.openedAt.IsZero() && at.Sub(j.openedAt) < j.ReopenEvery {
			return fmt.Errorf("journal: not open (tried %s ago)", at.Sub(j.openedAt).Round(time.Second))
		}
		j.openedAt = at
		if err := j.open(); err != nil {
			return err
		}
	}
	if j.size+int64(len(line)) > j.MaxBytes && j.size > 0 {
		if err := j.rotate(at); err != nil {
			return err
		}
	}
	n := 0
	var err error
	if j.torn { // end the torn line first
		if err = j.w.WriteByte('\n'); err == nil {
			n = 1
		}
	}
	if err == nil {
		var m int
		m, err = j.w.Write(line)
		n += m
	}
	j.size += int64(n)
	if err != nil {
		return j.failed(err)
	}
	j.torn = false
	return nil
}

// readJournalRecords reads the records of the journal in dir made at or
// after since and before before (no bound when zero), oldest first: the last n of them when
// n > 0. Files rotated before since are not read, and the newest files
// are read first, up to n records. A line it cannot decode (one torn by a
// full disk, one being written) is skipped: the history is for people.
func readJournalRecords(dir string, since, before time.Time, n int) ([]Record, error) {
	files, err := filepath.Glob(filepath.Join(dir, "journal-*.jsonl"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files) // their names are the times of rotation
	files = append(files, filepath.Join(dir, JournalName))
	var out []Record
	for i := len(files) - 1; i >= 0; i-- {
		if rotated, ok := rotatedAt(files[i]); ok && rotated.Before(since) {
			break // every line of it, and of the older ones, is older
		}
		rs, err := fileRecords(files[i], since, before)
		if errors.Is(err, fs.ErrNotExist) {
			continue // rotated away meanwhile, or no step yet
		}
		if err != nil {
			return out, err
		}
		out = append(rs, out...)
		if n > 0 && len(out) >= n {
			return out[len(out)-n:], nil
		}
	}
	return out, nil
}

// rotatedAt is when a rotated journal file was rotated, from its name.
func rotatedAt(file string) (time.Time, bool) {
	stamp, ok := strings.CutPrefix(strings.TrimSuffix(filepath.Base(file), ".jsonl"), "journal-")
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse("20060102T150405.000000000Z", stamp)
	return t, err == nil
}

func fileRecords(file string, since, before time.Time) ([]Record, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var out []Record
	for sc.Scan() {
		if !bytes.Contains(sc.Bytes(), []byte(`"records":`)) {
			continue // a step that made no record: most of them
		}
		var l journalLine
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.At.Before(since) || (!before.IsZero() && !l.At.Before(before)) {
			continue
		}
		for _, r := range l.Records {
			out = append(out, Record{At: l.At, Kind: r.Kind, Text: r.Text})
		}
	}
	return out, sc.Err()
}

// Flush writes buffered lines to the file.
func (j *Journal) Flush() error {
	if j.f == nil {
		return nil
	}
	if err := j.w.Flush(); err != nil {
		return j.failed(err)
	}
	return nil
}

// failed drops what the buffer holds: a bufio.Writer that failed fails
// every later write, and the journal must take up again once the disk
// has space.
func (j *Journal) failed(err error) error {
	j.w.Reset(j.f)
	j.torn = true
	return fmt.Errorf("journal: %w", err)
}

func (j *Journal) rotate(at time.Time) error {
	// The live file is renamed while still open, and replaced only once
	// the new one is open: a failure leaves the journal writing where it
	// was (retrying after another MaxBytes), never closed for good.
	if err := j.w.Flush(); err != nil {
		return j.failed(err)
	}
	live := filepath.Join(j.dir, JournalName)
	name := fmt.Sprintf("journal-%s.jsonl", at.UTC().Format("20060102T150405.000000000Z"))
	if err := os.Rename(live, filepath.Join(j.dir, name)); err != nil {
		j.size = 0
		return fmt.Errorf("journal: rotate: %w", err)
	}
	f, err := os.OpenFile(live, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		j.size = 0
		return fmt.Errorf("journal: rotate: %w", err)
	}
	old := j.f
	j.f, j.w, j.size = f, bufio.NewWriterSize(f, 64<<10), 0
	old.Close()
	rotated, _ := filepath.Glob(filepath.Join(j.dir, "journal-*.jsonl"))
	sort.Strings(rotated)
	for len(rotated) > j.Keep {
		if err := os.Remove(rotated[0]); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("journal: %w", err)
		}
		rotated = rotated[1:]
	}
	return nil
}

// Close flushes and closes the journal.
func (j *Journal) Close() error {
	if j.f == nil {
		return nil
	}
	err := j.w.Flush()
	if cerr := j.f.Close(); err == nil {
		err = cerr
	}
	j.f = nil
	if err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// journalMissing logs at WARN, at start, when the state file holds
// leases or service records while the journal is missing or empty: the
// state file was restored or copied without it, or it was deleted.
// Nothing is lost that svcrun needs (the state file and its log hold the
// state), but the history of how it came to be is, and a reader of the
// journal must not take its first line for the node's first step.
func (a *Agent) journalMissing(st engine.State) {
	if len(st.Leases)+len(st.Services) == 0 {
		return
	}
	ents, _ := os.ReadDir(a.jour.dir) // Open made it, unless it could not
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() && fi.Size() > 0 {
			return
		}
	}
	a.log.Warn(fmt.Sprintf("the state file holds %d lease(s) and %d service record(s) but its "+
		"journal is missing or empty: "+
		"the state file was restored or copied without it, or the journal was deleted. "+
		"svcrun starts from the state as stored; the history of the steps before this start "+
		"(svcrun events, svcsim replay) is not there",
		len(st.Leases), len(st.Services)), "state_file", a.db.Path(), "journal", a.jour.dir)
}
