package executor

import (
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oarbank/svcrun/cgroup"
	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/internal/procfs"
	"github.com/oarbank/svcrun/protocol"
)

// logLines is a Logger whose lines the test can wait for.
type logLines chan string

func (l logLines) Write(p []byte) (int, error) {
	l <- string(p)
	return len(p), nil
}

func newLogLines() (logLines, *slog.Logger) {
	l := make(logLines, 1000)
	return l, slog.New(slog.NewTextHandler(l, nil))
}

// waitFile waits for a file to appear (an op writes it as it begins).
func waitFile(t *testing.T, path string) {
	t.Helper()
	eventually(t, 60*time.Second, path+" did not appear", func() bool {
		_, err := os.Stat(path)
		return err == nil
	})
}

func tempRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestLeftoverStartIsWaitedFor: a start an earlier svcrun left running
// (its executor never saw it end) holds every op of the next svcrun's
// executor on that service until it has ended, so the fingerprint sees its
// daemon and no second start is made beside it.
func TestLeftoverStartIsWaitedFor(t *testing.T) {
	for _, mode := range containerModes {
		t.Run(mode.name, func(t *testing.T) {
			root := tempRoot(t)
			m1 := mode.containers(t)
			a1 := newAdapterIn(t, root, m1, nil)
			if err := os.MkdirAll(a1.data, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(filepath.Join(a1.data, "release"), 0o600); err != nil {
				t.Fatal(err)
			}
			target := engine.Target{Module: "test", Name: "slowstart"}
			a1.x.Run(engine.RunOp{ID: 1, Target: target, Op: protocol.OpStart, Timeout: time.Minute})
			waitFile(t, filepath.Join(a1.data, "start.pid"))

			var m2 *cgroup.Manager
			if m1 != nil {
				// The earlier svcrun dies: its lock of the base goes,
				// and the next svcrun's Manager takes it.
				m1.Close()
				m2 = cgroup.New(cgroup.Options{Name: filepath.Base(m1.Base())})
				t.Cleanup(func() {
					// Before m1's cleanup, which can no longer see
					// the containers empty.
					for _, s := range m2.Services() {
						if err := m2.Kill(s, 5*time.Second); err != nil {
							t.Errorf("cleanup: kill %s: %v", s, err)
						}
						m2.Remove(s)
					}
					m2.Close()
				})
				if err := m2.Err(); err != nil {
					t.Fatal(err)
				}
			}
			logs, log := newLogLines()
			a2 := newAdapterIn(t, root, m2, log)
			a2.x.Run(engine.RunOp{ID: 1, Target: target, Op: protocol.OpFingerprint, Timeout: time.Minute})
			// Either the fingerprint is held (and says so), or it ran.
		wait:
			for {
				select {
				case d := <-a2.done:
					t.Fatalf("the fingerprint ran beside the earlier svcrun's start: %+v", d.Outcome)
				case line := <-logs:
					if strings.Contains(line, "op held until") {
						break wait
					}
				case <-time.After(60 * time.Second):
					t.Fatal("neither the fingerprint nor a wait for the leftover start within 60 s")
				}
			}
			if err := os.WriteFile(filepath.Join(a1.data, "release"), []byte("go\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if d := <-a1.done; d.Outcome.Failure != engine.FailNone {
				t.Fatalf("the start: %+v", d.Outcome)
			}
			a1.pid(t, "daemon.pid")
			d := <-a2.done
			fp := d.Outcome.Result.Fingerprint
			if d.Outcome.Failure != engine.FailNone || fp == nil || fp.Running == nil || !*fp.Running {
				t.Errorf("the fingerprint after the leftover start: %+v, want running", d.Outcome)
			}
			if recs := records(t, filepath.Join(root, "state", OpsDir)); len(recs) != 0 {
				t.Errorf("records left: %v", recs)
			}
		})
	}
}

// TestLeftoverRecords: how the next svcrun resolves each kind of record an
// earlier one left.
func TestLeftoverRecords(t *testing.T) {
	id, err := bootID()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		// argv is the process the record is about ("" in [0]: the
		// bundle's svc.sh); nil: none.
		argv []string
		// record returns the record's file content for that process.
		record func(rec opRecord, p proc) any
		// killed: the process is gone by the fingerprint's end; else it
		// still runs.
		killed bool
		log    string // a line of the log; "" for none
		kept   bool   // the record is still there at the end
	}{
		{
			name:   "overran its deadline",
			argv:   []string{"/bin/sh", "-c", `trap "" TERM; exec sleep 1000`},
			record: func(r opRecord, p proc) any { r.Pid, r.StartTicks = p.pid, p.start; return r },
			killed: true, log: "overran its timeout",
		},
		{
			name: "its pid is another process's",
			argv: []string{"sleep", "1000"},
			record: func(r opRecord, p proc) any {
				r.Pid, r.StartTicks, r.Timeout = p.pid, p.start+1, time.Hour
				return r
			},
		},
		{
			name:   "an intent without a pid finds its op",
			argv:   []string{"", "hang", "start"},
			record: func(r opRecord, p proc) any { return r },
			killed: true, log: "overran its timeout",
		},
		{
			name:   "an intent without a pid spares a stranger",
			argv:   []string{"", "hang", "stop"},
			record: func(r opRecord, p proc) any { return r },
		},
		{
			name: "an earlier boot",
			argv: []string{"sleep", "1000"},
			record: func(r opRecord, p proc) any {
				r.Pid, r.StartTicks, r.BootID = p.pid, p.start, "another-boot"
				return r
			},
		},
		{
			name:   "an intent never written",
			argv:   []string{"", "hang", "start"},
			record: func(opRecord, proc) any { return nil },
		},
		{
			name:   "unreadable",
			record: func(opRecord, proc) any { return "not a record" },
			log:    "unreadable record", kept: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := tempRoot(t)
			script := filepath.Join(root, "bundle", "bin", "svc.sh")
			copyExecutable(t, "testdata/svc.sh", script)
			rec := opRecord{
				Service: "test/envsvc", Op: "start", Argv: []string{script, "hang", "start"}, Path: script,
				BootID: id, Began: time.Now(), BeganBoot: bootNanos(), Svcrun: 1,
			}
			var p proc
			if tc.argv != nil {
				argv := tc.argv
				if argv[0] == "" {
					argv = append([]string{script}, argv[1:]...)
				}
				cmd := exec.Command(argv[0], argv[1:]...)
				cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // an op leads its group
				cmd.Env = []string{"OARBANK_MODULE_DATA=" + root}
				done, err := StartCmd(cmd)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
					cmd.Wait()
					done()
				})
				p.pid = cmd.Process.Pid
				var ok bool
				if p.start, ok = procfs.StartTicks(p.pid); !ok {
					t.Fatal("no start time")
				}
			}
			var data []byte
			if r := tc.record(rec, p); r != nil {
				if data, err = json.Marshal(r); err != nil {
					t.Fatal(err)
				}
				data = append(data, '\n')
			}
			dir := filepath.Join(root, "state", OpsDir)
			os.MkdirAll(dir, 0o700)
			file := filepath.Join(dir, "test.envsvc.1.1.json")
			if err := os.WriteFile(file, data, 0o600); err != nil {
				t.Fatal(err)
			}
			logs, log := newLogLines()
			a := newAdapterIn(t, root, nil, log)
			if o := a.run(t, 1, "envsvc", false, protocol.OpFingerprint); o.Failure != engine.FailNone {
				t.Fatalf("fingerprint: %+v", o)
			}
			if p.pid != 0 && alive(p.pid) == tc.killed {
				t.Errorf("pid %d alive %v, want killed %v", p.pid, alive(p.pid), tc.killed)
			}
			close(logs)
			var lines []string
			for l := range logs {
				// Whether the fingerprint had to wait for the resolution
				// in the background depends on the machine's load.
				if !strings.Contains(l, "op held until") {
					lines = append(lines, l)
				}
			}
			if got := strings.Join(lines, ""); tc.log != "" && !strings.Contains(got, tc.log) || tc.log == "" && got != "" {
				t.Errorf("log:\n%s\nwant a line with %q", got, tc.log)
			}
			if _, err := os.Stat(file); (err == nil) != tc.kept {
				t.Errorf("record kept %v, want %v", err == nil, tc.kept)
			}
		})
	}
}

// records lists the record files (*.json) of an ops dir, not the free
// ones (recordFiles).
func records(t *testing.T, dir string) []string {
	t.Helper()
	ms, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// TestRecordFilesAreReused: the file of an ended op's record is kept,
// empty, under a free name and is the next op's record; free files an
// earlier svcrun left are removed, whatever they hold, and not taken for
// records; Close removes this svcrun's.
func TestRecordFilesAreReused(t *testing.T) {
	id, err := bootID()
	if err != nil {
		t.Fatal(err)
	}
	root := tempRoot(t)
	dir := filepath.Join(root, "state", OpsDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	// A free file a dead svcrun left, still holding an ended op's intent
	// and pid, past its deadline: were it read as a record, the process
	// would be killed.
	cmd := startSleep(t, &syscall.SysProcAttr{Setpgid: true})
	start, _ := procfs.StartTicks(cmd.Process.Pid)
	rec := opRecord{Service: "test/envsvc", Op: "start", Argv: []string{"sleep", "1000"}, BootID: id, Began: time.Now(),
		BeganBoot: bootNanos(), Timeout: time.Nanosecond, Pid: cmd.Process.Pid, StartTicks: start}
	data, _ := json.Marshal(rec)
	stale := filepath.Join(dir, "1.1"+freeSuffix)
	if err := os.WriteFile(stale, append(data, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	logs, log := newLogLines()
	a := newAdapterIn(t, root, nil, log)
	free := func() os.FileInfo {
		t.Helper()
		ms, _ := filepath.Glob(filepath.Join(dir, "*"+freeSuffix))
		if len(ms) != 1 {
			t.Fatalf("free record files %v, want one", ms)
		}
		fi, err := os.Stat(ms[0])
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() != 0 {
			t.Errorf("free record file %s holds %d bytes", ms[0], fi.Size())
		}
		return fi
	}
	var first os.FileInfo
	for i := range 3 {
		// The outcome does not matter (envsvc answers a fingerprint):
		// every start has a record.
		a.run(t, engine.OpID(i+1), "envsvc", false, protocol.OpStart)
		if recs := records(t, dir); len(recs) != 0 {
			t.Fatalf("after start %d: records left: %v", i+1, recs)
		}
		fi := free()
		if first == nil {
			first = fi
		} else if !os.SameFile(first, fi) {
			t.Errorf("start %d: the record file was not reused", i+1)
		}
	}
	if _, err := os.Stat(stale); err == nil {
		t.Error("the earlier svcrun's free record file is still there")
	}
	if !alive(cmd.Process.Pid) {
		t.Error("the earlier svcrun's free record file was resolved as a record: its process was killed")
	}
	a.x.Close()
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("after Close: %v", ents)
	}
	close(logs)
	for l := range logs {
		t.Errorf("log: %s", l)
	}
}

// BenchmarkOpRecord is what recording costs a mutating op: the intent, the
// pid, the removal.
func BenchmarkOpRecord(b *testing.B) {
	root, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	x := &Executor{}
	x.initInflight(root, slog.New(slog.DiscardHandler))
	if x.dir == "" {
		b.Fatal("ops are not recorded here")
	}
	spec := Spec{Path: "/bin/true", Args: []string{"start"}, Timeout: time.Minute}
	t := engine.Target{Module: "test", Name: "svc"}
	pid := os.Getpid()
	for i := range b.N {
		j := x.recordIntent(engine.OpID(i), t, protocol.OpStart, spec)
		j.started(pid)
		j.done()
	}
}

// TestProcWaitWithoutPidfd: before Linux 5.3 a leftover op is watched by
// its pid and start time; a zombie counts as ended, as with a pidfd.
func TestProcWaitWithoutPidfd(t *testing.T) {
	cmd := exec.Command("sleep", "1000")
	done, err := StartCmd(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	start, ok := procfs.StartTicks(cmd.Process.Pid)
	if !ok {
		t.Fatal("no start time")
	}
	w := &procWait{fd: -1, p: proc{pid: cmd.Process.Pid, start: start}}
	if got := w.wait(t.Context(), 0); got != waitTimedOut {
		t.Errorf("a live process: %v, want timed out", got)
	}
	if (proc{pid: cmd.Process.Pid, start: start + 1}).runs() {
		t.Error("another start time is taken for the process")
	}
	cmd.Process.Kill()
	if got := w.wait(t.Context(), time.Minute); got != waitExited { // a zombie: not reaped yet
		t.Errorf("a killed process: %v, want exited", got)
	}
	cmd.Wait()
}

// TestLeftoverStopLeavesNothing: a stop that an earlier svcrun ran, and
// that ended while no svcrun ran, gets the end of every stop: what it left
// in its process group is killed before the service's next op.
func TestLeftoverStopLeavesNothing(t *testing.T) {
	id, err := bootID()
	if err != nil {
		t.Fatal(err)
	}
	root := tempRoot(t)
	// The stop: its leader exits at once and leaves a worker in its group.
	cmd := exec.Command("/bin/sh", "-c", `sleep 1000 </dev/null >/dev/null 2>&1 & echo $! >"$0/worker.pid"`, root)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	done, err := StartCmd(cmd)
	if err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	start, _ := procfs.StartTicks(pid)
	t.Cleanup(func() { syscall.Kill(-pid, syscall.SIGKILL) })
	cmd.Wait()
	done()
	worker := 0
	if data, err := os.ReadFile(filepath.Join(root, "worker.pid")); err == nil {
		worker, _ = strconv.Atoi(strings.TrimSpace(string(data)))
	}
	if worker <= 1 || !alive(worker) {
		t.Fatalf("no worker: %d", worker)
	}
	rec := opRecord{Service: "test/envsvc", Op: "stop", Argv: []string{"x", "stop"}, BootID: id, Began: time.Now(),
		BeganBoot: bootNanos(), Timeout: time.Hour, Pid: pid, StartTicks: start}
	data, _ := json.Marshal(rec)
	dir := filepath.Join(root, "state", OpsDir)
	os.MkdirAll(dir, 0o700)
	if err := os.WriteFile(filepath.Join(dir, "test.envsvc.1.1.json"), append(data, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	a := newAdapterIn(t, root, nil, nil)
	if o := a.run(t, 1, "envsvc", false, protocol.OpFingerprint); o.Failure != engine.FailNone {
		t.Fatalf("fingerprint: %+v", o)
	}
	if alive(worker) {
		t.Errorf("the worker %d the earlier svcrun's stop left still runs", worker)
	}
}

// TestLeftoverIntentInContainer: an intent without a pid, in a container,
// is resolved on the group leaders of the service's cgroup that started
// after it, whatever they run; the daemon that was there before is spared.
func TestLeftoverIntentInContainer(t *testing.T) {
	m := newContainers(t)
	id, err := bootID()
	if err != nil {
		t.Fatal(err)
	}
	fd, err := m.Create("test/envsvc")
	if err != nil {
		t.Fatal(err)
	}
	spawn := func() *exec.Cmd {
		return startSleep(t, &syscall.SysProcAttr{Setpgid: true, UseCgroupFD: true, CgroupFD: fd})
	}
	daemon := spawn()
	// The intent comes a tick (of /proc start times) after the daemon.
	dTicks, _ := procfs.StartTicks(daemon.Process.Pid)
	for bootNanos()/(1e9/userHZ) <= int64(dTicks) {
	}
	root := tempRoot(t)
	path, _ := m.Path("test/envsvc")
	rec := opRecord{Service: "test/envsvc", Op: "start", Argv: []string{"/bin/false", "start"}, Path: "/bin/false",
		BootID: id, Began: time.Now(), BeganBoot: bootNanos(), Cgroup: path}
	op := spawn()
	data, _ := json.Marshal(rec)
	dir := filepath.Join(root, "state", OpsDir)
	os.MkdirAll(dir, 0o700)
	if err := os.WriteFile(filepath.Join(dir, "test.envsvc.1.1.json"), append(data, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	a := newAdapterIn(t, root, nil, nil)
	if o := a.run(t, 1, "envsvc", false, protocol.OpFingerprint); o.Failure != engine.FailNone {
		t.Fatalf("fingerprint: %+v", o)
	}
	if alive(op.Process.Pid) {
		t.Error("the op of the intent, in the container, still runs")
	}
	if !alive(daemon.Process.Pid) {
		t.Error("the daemon that was in the container before the intent was killed")
	}
}

// startSleep starts `sleep 1000` with attr, killed and waited for at the
// test's end.
func startSleep(t *testing.T, attr *syscall.SysProcAttr) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "1000")
	cmd.SysProcAttr = attr
	done, err := StartCmd(cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		done()
	})
	return cmd
}
