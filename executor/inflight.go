package executor

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/internal/ids"
	"github.com/oarbank/svcrun/internal/procfs"
	"github.com/oarbank/svcrun/protocol"
)

// OpsDir is the directory, under the node's data dir, of the records of the
// mutating ops in flight (see the package doc, "Ops across restarts").
const OpsDir = "ops"

// mutating reports whether op changes the service: only those are
// recorded, since a read-only op that outlives its svcrun changes nothing a
// later fingerprint could be misled by, and fingerprint and status run
// every period, where a file write per op would show.
func mutating(op protocol.Op) bool {
	switch op {
	case protocol.OpStart, protocol.OpStop, protocol.OpDestroy:
		return true
	}
	return false
}

// opRecord is one mutating op in flight, as a file <OpsDir>/<name>.json of
// JSON lines: the intent, written before the op is spawned, and once its
// pid is known a second line with Pid and StartTicks. The file is removed
// when the op, and the cleanup after a stop, have ended. Plain writes (no
// fsync) are enough: the record has to survive the death of svcrun's
// process, not of the machine, whose crash ends the op as well (BootID
// tells records of an earlier boot). Each line is one write(2), which a
// death does not split. Appending is cheaper than replacing the file by a
// rename, which ext4 (auto_da_alloc) makes write out (BenchmarkOpRecord
// measures the record of one op).
//
// The files themselves are reused (see recordFiles): creating one per op
// and removing it made ext4 look for a free inode past every one removed
// in the last minute (bench/HISTORY.md, svcrun beside supervisord, s6 and
// runit: op records reuse their files).
type opRecord struct {
	Service string   `json:"service"`
	Op      string   `json:"op"`
	Argv    []string `json:"argv"` // what /proc/<pid>/cmdline ends with
	Path    string   `json:"path"` // the executable, argv[0] resolved
	BootID  string   `json:"boot_id"`
	// Began and Deadline are wall-clock times, for people; BeganBoot
	// (CLOCK_BOOTTIME, ns) and Timeout are what the next svcrun computes
	// the deadline from, so that a clock step cannot move it.
	Began     time.Time     `json:"began"`
	Deadline  time.Time     `json:"deadline"`
	BeganBoot int64         `json:"began_boottime_ns"`
	Timeout   time.Duration `json:"timeout_ns"`
	Svcrun    int           `json:"svcrun_pid"`
	// Cgroup is the container the op was cloned into; "" for a process
	// group.
	Cgroup string `json:"cgroup,omitempty"`
	// Pid is the op's pid and process group id, StartTicks its start time
	// (/proc/<pid>/stat field 22), so that a reused pid is never taken
	// for it. Both are 0 in an intent whose spawn has not returned yet.
	Pid        int    `json:"pid,omitempty"`
	StartTicks uint64 `json:"start_ticks,omitempty"`
}

// opRecords is the Executor's side of the records: where they go, and the
// services whose leftover ops (of an earlier svcrun) are still being
// resolved.
type opRecords struct {
	dir    string // "" when ops are not recorded (no process identity here)
	bootID string
	log    *slog.Logger

	lmu       sync.Mutex
	leftovers map[engine.Target]chan struct{} // closed when resolved

	recordFiles
}

// freeSuffix names a record file not in use: the reader of records skips
// it (no .json), and the next svcrun removes those an earlier one left.
const freeSuffix = ".free"

// recordFiles are the open, empty record files no op uses, for the next
// mutating ops: a record is written into one and renamed to its op's name,
// and renamed back and emptied when the op has ended. Both renames are to
// a name that does not exist, which ext4 does not make write out (it does
// for a rename over a file), and neither allocates an inode. The file on
// disk under an op's name is always a whole intent, as a created one is
// once written: the intent is written before the first rename, and the
// file is emptied after the second. A free file that a dead svcrun left
// holds at most an intent whose op was never spawned, or one that has
// ended. There are at most max_concurrent_ops of them, since only the ops
// holding a slot have records.
type recordFiles struct {
	fmu  sync.Mutex
	free []*os.File // empty, named <dir>/<pid>.<token>.<n>.free (f.Name())
	// token (random, made at New) and made, the count of files made, name
	// the next one: two Executors of one process may share a data dir.
	token string
	made  uint64
}

// takeFree returns an empty free record file, a new one if none is left.
func (r *opRecords) takeFree() (*os.File, error) {
	r.fmu.Lock()
	if n := len(r.free); n > 0 {
		f := r.free[n-1]
		r.free = r.free[:n-1]
		r.fmu.Unlock()
		return f, nil
	}
	r.made++
	name := filepath.Join(r.dir, fmt.Sprintf("%d.%s.%d%s", os.Getpid(), r.token, r.made, freeSuffix))
	r.fmu.Unlock()
	// O_TRUNC: a file of this name is an earlier svcrun's (same pid),
	// removed at New unless it appeared since.
	return os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
}

// putFree keeps f, renamed to its free name and emptied, for a later op.
func (r *opRecords) putFree(f *os.File) {
	r.fmu.Lock()
	r.free = append(r.free, f)
	r.fmu.Unlock()
}

// closeRecordFiles removes the free record files (at Close: no op runs).
func (r *opRecords) closeRecordFiles() {
	r.fmu.Lock()
	defer r.fmu.Unlock()
	for _, f := range r.free {
		f.Close()
		os.Remove(f.Name())
	}
	r.free = nil
}

// initInflight prepares <data_dir>/ops and resolves, in the background, the
// records an earlier svcrun left there. A directory that cannot be made
// disables the records, loudly: ops still run.
func (x *Executor) initInflight(dataDir string, log *slog.Logger) {
	x.log = log
	x.leftovers = map[engine.Target]chan struct{}{}
	id, err := bootID()
	if err != nil {
		log.Warn("ops are not recorded: an op in flight when svcrun dies is not waited for by the next svcrun", "reason", err)
		return
	}
	if dataDir == "" {
		return
	}
	// The data dir keeps the mode its maker gave it (run_as ops must be
	// able to enter it on their way to their module's data dir); only
	// the records' own directory is svcrun's alone.
	dir := filepath.Join(dataDir, OpsDir)
	err = os.MkdirAll(dataDir, 0o755)
	if err == nil {
		err = os.Mkdir(dir, 0o700)
	}
	if errors.Is(err, fs.ErrExist) {
		err = nil
	}
	if err != nil {
		log.Warn(
			"ops are not recorded: an op in flight when svcrun dies is not waited for by the next svcrun", "dir", dir, "error",
			err)
		return
	}
	x.dir, x.bootID, x.token = dir, id, ids.New("")
	byTarget := map[engine.Target][]leftover{}
	for _, l := range x.loadLeftovers() {
		t := serviceOf(l.rec.Service)
		byTarget[t] = append(byTarget[t], l)
	}
	for t, ls := range byTarget {
		done := make(chan struct{})
		x.leftovers[t] = done
		x.wg.Add(1)
		go func() {
			defer x.wg.Done()
			if x.resolveAll(t, ls) {
				close(done)
			}
		}()
	}
}

// leftover is a record an earlier svcrun left, and its file.
type leftover struct {
	file string
	rec  opRecord
}

// loadLeftovers reads the records of the ops dir. Records of an earlier
// boot name ops that died with the machine and are removed; a record that
// cannot be read is kept and reported, since what it names is unknown.
func (x *Executor) loadLeftovers() []leftover {
	ents, err := os.ReadDir(x.dir)
	if err != nil {
		x.log.Warn("ops an earlier svcrun left in flight cannot be listed: not waited for", "dir", x.dir, "error", err)
		return nil
	}
	var out []leftover
	for _, e := range ents {
		file := filepath.Join(x.dir, e.Name())
		if strings.HasSuffix(e.Name(), freeSuffix) {
			// An earlier svcrun's unused record file (recordFiles).
			os.Remove(file)
			continue
		}
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		rec, complete, err := readRecord(file)
		if !complete {
			// svcrun died before writing the intent: nothing was spawned.
			os.Remove(file)
			continue
		}
		if err != nil {
			x.log.Warn("unreadable record of an op in flight: kept, not waited for", "file", file, "error", err)
			continue
		}
		if rec.BootID != x.bootID {
			os.Remove(file)
			continue
		}
		out = append(out, leftover{file: file, rec: rec})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rec.BeganBoot < out[j].rec.BeganBoot })
	return out
}

// readRecord reads a record file: complete is false when it is empty
// (svcrun died between its creation and the intent's write, before the
// spawn).
func readRecord(file string) (rec opRecord, complete bool, err error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return rec, true, err
	}
	if len(data) == 0 {
		return rec, false, nil
	}
	intent, rest, ok := strings.Cut(string(data), "\n")
	if !ok {
		return rec, true, errors.New("no whole intent line")
	}
	if err := json.Unmarshal([]byte(intent), &rec); err != nil {
		return rec, true, fmt.Errorf("intent: %w", err)
	}
	if rec.Service == "" || rec.Op == "" {
		return rec, true, errors.New("intent: no service or op")
	}
	// A pid line cut short cannot happen (one write); one that does not
	// parse leaves the intent without a pid, which is resolved soundly.
	if line, _, ok := strings.Cut(rest, "\n"); ok {
		var started struct {
			Pid        int    `json:"pid"`
			StartTicks uint64 `json:"start_ticks"`
		}
		if json.Unmarshal([]byte(line), &started) == nil {
			rec.Pid, rec.StartTicks = started.Pid, started.StartTicks
		}
	}
	return rec, true, nil
}

// resolveAll waits for (or kills at their deadline) the leftover ops of t
// and removes their records. It reports false when svcrun is stopping
// first: the records stay for the next svcrun.
func (x *Executor) resolveAll(t engine.Target, ls []leftover) bool {
	for _, l := range ls {
		if !x.resolve(t, l.rec) {
			return false
		}
		os.Remove(l.file)
	}
	return true
}

// resolve ends one leftover op: each of its processes (the recorded pid, or
// for an intent without one the candidates found for it) is waited for
// until its deadline, then its process group gets the timeout treatment;
// after a stop, what is left in the service's container is killed, as the
// stop's own end would have done.
func (x *Executor) resolve(t engine.Target, rec opRecord) bool {
	procs := []proc{{pid: rec.Pid, start: rec.StartTicks}}
	if rec.Pid == 0 {
		procs = findSpawned(rec)
	}
	deadline := rec.BeganBoot + int64(rec.Timeout)
	for _, p := range procs {
		if !x.awaitLeftover(rec, p, deadline) {
			return false
		}
	}
	if protocol.Op(rec.Op) == protocol.OpStop {
		// What the stop's own end would have killed (spawnIn): its
		// container, or its process group; the groups of the service's
		// other ops died with the earlier svcrun's memory.
		if t := serviceOf(rec.Service); rec.Cgroup != "" && x.cgroupOf(t) != "" {
			x.killContainerLeft(t)
		}
		var groups []int
		for _, p := range procs {
			if p.pid > 1 {
				groups = append(groups, p.pid)
			}
		}
		x.killGroupsLeft(t, groups)
	}
	return true
}

// awaitLeftover waits for one process of a leftover op to end, until
// deadline (CLOCK_BOOTTIME ns); false when svcrun stops first.
func (x *Executor) awaitLeftover(rec opRecord, p proc, deadline int64) bool {
	w, err := openProc(p)
	if err != nil {
		return true // gone, or its pid is another process's now
	}
	defer w.close()
	log := x.log.With("service", rec.Service, "op", rec.Op, "pid", p.pid, "began", rec.Began, "deadline", rec.Deadline)
	log.Warn("an op an earlier svcrun started is still running: no op of its service begins before it ends")
	began := time.Now()
	switch w.wait(x.ctx, time.Duration(deadline-bootNanos())) {
	case waitExited:
		log.Warn("the op an earlier svcrun started has ended", "waited", time.Since(began).Round(time.Millisecond))
		return true
	case waitCanceled:
		return false
	}
	grace := x.grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	log.Warn(
		"the op an earlier svcrun started overran its timeout: its process group is killed (SIGTERM, then SIGKILL after "+
			"the grace)", "grace", grace)
	signalGroup(p.pid, syscall.SIGTERM)
	termAt := time.Now()
	if w.wait(x.ctx, grace) == waitCanceled {
		return false
	}
	waitGroupGone(p.pid, grace-time.Since(termAt))
	if groupHasLive(p.pid) {
		signalGroup(p.pid, syscall.SIGKILL)
		waitGroupGone(p.pid, killWait)
	}
	return true
}

// awaitLeftovers holds op of t until the ops an earlier svcrun left on t
// are resolved; false when svcrun stops first.
func (x *Executor) awaitLeftovers(t engine.Target, op protocol.Op) bool {
	x.lmu.Lock()
	done := x.leftovers[t]
	x.lmu.Unlock()
	if done == nil {
		return true
	}
	select {
	case <-done:
	default:
		x.log.Info(
			"op held until the ops an earlier svcrun started on the service have ended", "service", t.String(), "op", string(op))
		select {
		case <-done:
		case <-x.ctx.Done():
			return false
		}
	}
	x.lmu.Lock()
	delete(x.leftovers, t)
	x.lmu.Unlock()
	return true
}

// opJournal is the record of one op of this svcrun, open for the pid line.
type opJournal struct {
	x    *Executor
	file string
	f    *os.File
	// free is the name f goes back to at done; "" when f was created
	// under file (a free file could not be used) and is removed at done.
	free string
}

// recordIntent writes the record of a mutating op before it is spawned;
// nil when it is not recorded. A record that cannot be written is logged
// and the op runs: refusing it would stop the service from being managed
// at all.
func (x *Executor) recordIntent(id engine.OpID, t engine.Target, op protocol.Op, spec Spec) *opJournal {
	if x.dir == "" || t.Probe || !mutating(op) {
		return nil
	}
	now := time.Now()
	argv := append([]string{spec.Arg0}, spec.Args...)
	if argv[0] == "" {
		argv[0] = spec.Path
	}
	rec := opRecord{
		Service: serviceName(t), Op: string(op), Argv: argv, Path: spec.Path, BootID: x.bootID,
		Began: now, Deadline: now.Add(spec.Timeout), BeganBoot: bootNanos(), Timeout: spec.Timeout,
		Svcrun: os.Getpid(), Cgroup: x.cgroupOf(t),
	}
	j := &opJournal{x: x, file: filepath.Join(x.dir, fmt.Sprintf("%s.%s.%d.%d.json", t.Module, t.Name, os.Getpid(), id))}
	data, err := json.Marshal(rec)
	if err == nil {
		data = append(data, '\n')
		if j.f, err = x.takeFree(); err == nil {
			if err = j.writeRenamed(data); err != nil {
				j.f.Close()
				os.Remove(j.f.Name())
				j.f = nil
			}
		}
		if j.f == nil {
			// As before the free files: created under its name.
			// O_TRUNC: a file of this name is an earlier svcrun's
			// (same pid, op id), resolved and removed before this op
			// could begin.
			j.f, err = os.OpenFile(j.file, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
			if err == nil {
				_, err = j.f.Write(data)
			}
		}
	}
	if err != nil {
		x.log.Warn(
			"record of an op in flight not written: if svcrun dies during the op, the next one will not wait for it", "file",
			j.file, "error", err)
	}
	return j
}

// writeRenamed writes the intent into the free file j.f and renames it to
// the op's name; on an error the file is left under its free name.
func (j *opJournal) writeRenamed(intent []byte) error {
	if _, err := j.f.Write(intent); err != nil {
		return err
	}
	// syscall.Rename: os.Rename would first stat the new name.
	if err := syscall.Rename(j.f.Name(), j.file); err != nil {
		return err
	}
	j.free = j.f.Name()
	return nil
}

// started adds the op's pid and its start time to the record.
func (j *opJournal) started(pid int) {
	if j == nil || j.f == nil {
		return
	}
	ticks, _ := procfs.StartTicks(pid)
	line := fmt.Sprintf("{\"pid\":%d,\"start_ticks\":%d}\n", pid, ticks)
	if _, err := j.f.WriteString(line); err != nil {
		j.x.log.Warn(
			"pid of an op in flight not recorded: if svcrun dies during the op, the next one looks for it", "file", j.file,
			"error", err)
	}
}

// done removes the record: the op and what follows it have ended. A reused
// file is renamed back to its free name, then emptied, and kept.
func (j *opJournal) done() {
	if j == nil {
		return
	}
	if j.free != "" {
		if err := syscall.Rename(j.file, j.free); err == nil {
			if j.f.Truncate(0) == nil {
				j.x.putFree(j.f)
			} else {
				j.f.Close()
				os.Remove(j.free)
			}
			return
		}
	}
	if j.f != nil {
		j.f.Close()
	}
	if err := os.Remove(j.file); err != nil && !errors.Is(err, os.ErrNotExist) {
		j.x.log.Warn(
			"record of an ended op not removed: the next svcrun will find its process gone", "file", j.file, "error", err)
	}
}

// proc is a process of a leftover op: its pid (and group) and start time.
type proc struct {
	pid   int
	start uint64
}
