package executor

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/protocol"
)

// TestEngines runs the tests of Spawn with both engines: the Linux poll engine
// and the portable one, which other platforms use (and Linux before 5.3).
func TestEngines(t *testing.T) {
	for _, e := range []struct {
		name     string
		portable bool
	}{{"native", false}, {"portable", true}} {
		t.Run(e.name, func(t *testing.T) {
			portableOnly = e.portable
			defer func() { portableOnly = false }()
			for _, tc := range engineTests {
				t.Run(tc.name, tc.f)
			}
		})
	}
}

var engineTests = []struct {
	name string
	f    func(*testing.T)
}{
	{"EnvironmentCwdStdin", testEnvironmentCwdStdin},
	{"NilEnvIsEmpty", testNilEnvIsEmpty},
	{"StdoutFloodIsCutAndKilled", testStdoutFloodIsCutAndKilled},
	{"TimeoutKillsTheGroup", testTimeoutKillsTheGroup},
	{"TimeoutPoliteExitsWithinGrace", testTimeoutPoliteExitsWithinGrace},
	{"TimeoutStubbornGetsSIGKILL", testTimeoutStubbornGetsSIGKILL},
	{"DaemonHoldingStdoutDoesNotHangTheOp", testDaemonHoldingStdoutDoesNotHangTheOp},
	{"Outcomes", testOutcomes},
	{"OwnedObjectWithDashIDIsSkipped", testOwnedObjectWithDashIDIsSkipped},
	{"SpawnErrors", testSpawnErrors},
	{"StderrKeepsTheTail", testStderrKeepsTheTail},
	{"CancelKillsLikeATimeout", testCancelKillsLikeATimeout},
	{"Hooks", testHooks},
	{"ReaperReapsAbandonedDaemon", testReaperReapsAbandonedDaemon},
	{"ConcurrentOpsWhileDaemonsDie", testConcurrentOpsWhileDaemonsDie},
}

func testEnvironmentCwdStdin(t *testing.T) {
	f := newFixture(t)
	res := Spawn(context.Background(), f.spec("env", protocol.OpFingerprint, 10*time.Second))
	if o := Outcome(protocol.OpFingerprint, protocol.RoleService, res); o.Failure != engine.FailNone {
		t.Fatalf("outcome %+v", o)
	}
	// Exactly svcenv.Environ, in its order, and nothing of ours.
	got := strings.Split(strings.TrimSuffix(f.readFile(t, "environ"), "\n"), "\n")
	if diff := cmp.Diff(f.env, got); diff != "" {
		t.Errorf("environment (-want +got):\n%s", diff)
	}
	if cwd := strings.TrimSpace(f.readFile(t, "cwd")); cwd != f.bundle {
		t.Errorf("cwd %q, want the bundle root %q", cwd, f.bundle)
	}
	if in := strings.TrimSpace(f.readFile(t, "stdin")); in != "/dev/null" {
		t.Errorf("stdin is %q, want /dev/null", in)
	}
	if argv := f.readFile(t, "argv"); argv != f.script+"\nfingerprint\n" {
		t.Errorf("argv $0 $@ = %q", argv)
	}
}

func testNilEnvIsEmpty(t *testing.T) {
	f := newFixture(t)
	s := f.spec("env", protocol.OpFingerprint, 10*time.Second)
	s.Env = nil
	// svc.sh writes to $OARBANK_MODULE_DATA, which is unset: it fails,
	// and it must not have found our environment.
	t.Setenv("OARBANK_MODULE_DATA", f.data)
	res := Spawn(context.Background(), s)
	if res.SpawnErr != nil {
		t.Fatal(res.SpawnErr)
	}
	if _, err := os.Stat(filepath.Join(f.data, "environ")); err == nil {
		t.Errorf("the op saw svcrun's environment")
	}
}

func testStdoutFloodIsCutAndKilled(t *testing.T) {
	f := newFixture(t)
	res := Spawn(context.Background(), f.spec("flood", protocol.OpFingerprint, 60*time.Second))
	if !res.StdoutTruncated || len(res.Stdout) != protocol.MaxStdout+1 {
		t.Fatalf("truncated %v, %d bytes read; want a cut at %d", res.StdoutTruncated, len(res.Stdout), protocol.MaxStdout+1)
	}
	// Killed at once rather than waited for: SIGKILL ended it, not EOF.
	if res.Signal != syscall.SIGKILL || !res.Escalated || res.TimedOut {
		t.Errorf(
			"signal %v escalated %v timed out %v; want killed by us at the limit", res.Signal, res.Escalated, res.TimedOut)
	}
	o := Outcome(protocol.OpFingerprint, protocol.RoleService, res)
	if o.Failure != engine.FailProtocol || !strings.Contains(o.Message, "stdout was cut off at the 1 MiB limit") {
		t.Errorf("outcome %+v", o)
	}
}

func testTimeoutKillsTheGroup(t *testing.T) {
	f := newFixture(t)
	s := f.spec("hang", protocol.OpFingerprint, 300*time.Millisecond)
	s.Grace = 10 * time.Second
	res := Spawn(context.Background(), s)
	if !res.TimedOut || res.Escalated {
		t.Fatalf("timed out %v, escalated %v; want SIGTERM to be enough", res.TimedOut, res.Escalated)
	}
	if res.Duration < s.Timeout || res.Duration >= s.Timeout+s.Grace {
		t.Errorf("took %v; want between the timeout %v and the end of the grace", res.Duration, s.Timeout)
	}
	child := f.readPid(t, "child.pid")
	eventually(t, 10*time.Second, "the op's background child survived the timeout", func() bool { return !alive(child) })
	o := Outcome(protocol.OpFingerprint, protocol.RoleService, res)
	want := "killed after 300ms; its process group got SIGTERM (stderr: hanging)"
	if o.Failure != engine.FailTimeout || o.Message != want {
		t.Errorf("outcome %+v, want message %q", o, want)
	}
}

func testTimeoutPoliteExitsWithinGrace(t *testing.T) {
	f := newFixture(t)
	s := f.spec("polite", protocol.OpStop, 200*time.Millisecond)
	s.Grace = 20 * time.Second
	res := Spawn(context.Background(), s)
	if !res.TimedOut || res.Escalated || res.Duration >= s.Grace {
		t.Errorf(
			"timed out %v escalated %v after %v; want a prompt exit at SIGTERM", res.TimedOut, res.Escalated, res.Duration)
	}
	if !bytes.Contains(res.StderrTail, []byte("bye")) {
		t.Errorf("stderr %q: the TERM trap did not run", res.StderrTail)
	}
}

func testTimeoutStubbornGetsSIGKILL(t *testing.T) {
	f := newFixture(t)
	s := f.spec("stubborn", protocol.OpStart, 200*time.Millisecond)
	s.Grace = 500 * time.Millisecond
	res := Spawn(context.Background(), s)
	if !res.TimedOut || !res.Escalated || res.Signal != syscall.SIGKILL {
		t.Fatalf("timed out %v escalated %v signal %v; want SIGKILL after the grace", res.TimedOut, res.Escalated, res.Signal)
	}
	if res.Duration < s.Timeout+s.Grace {
		t.Errorf("took %v, less than timeout+grace %v: SIGKILL came early", res.Duration, s.Timeout+s.Grace)
	}
	if res.Duration > s.Timeout+s.Grace+5*time.Second {
		t.Errorf("took %v", res.Duration)
	}
	child := f.readPid(t, "child.pid")
	eventually(t, 10*time.Second, "the stubborn child survived SIGKILL", func() bool { return !alive(child) })
	o := Outcome(protocol.OpStart, protocol.RoleService, res)
	if o.Failure != engine.FailTimeout || !strings.Contains(o.Message, "SIGTERM, then SIGKILL") {
		t.Errorf("outcome %+v", o)
	}
}

func testDaemonHoldingStdoutDoesNotHangTheOp(t *testing.T) {
	f := newFixture(t)
	s := f.spec("daemon", protocol.OpFingerprint, 60*time.Second)
	s.WaitDelay = 200 * time.Millisecond
	res := Spawn(context.Background(), s)
	killGroupAtEnd(t, res.Pid)
	// The daemon outlives the timeout: an op that waited for it ran into
	// the timeout, whereas a loaded machine only slows the op down.
	if res.Duration >= s.Timeout {
		t.Errorf("took %v, its whole timeout: waited for the daemon", res.Duration)
	}
	if res.Duration < s.WaitDelay {
		t.Errorf("took %v, less than the wait delay: the pipes cannot have been released", res.Duration)
	}
	if !res.PipesHeld || res.TimedOut {
		t.Errorf("pipes held %v, timed out %v", res.PipesHeld, res.TimedOut)
	}
	o := Outcome(protocol.OpFingerprint, protocol.RoleService, res)
	if o.Failure != engine.FailNone || !*o.Result.Fingerprint.Running {
		t.Errorf("outcome %+v", o)
	}
	// Spawn never kills the group of an op that exited on its own.
	if child := f.readPid(t, "child.pid"); !alive(child) {
		t.Errorf("the daemon %d was killed", child)
	}
}

func testOutcomes(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		mode    string
		op      protocol.Op
		failure engine.FailureKind
		msg     string // exact message, or a substring when it starts with "~"
	}{
		{"ok", protocol.OpFingerprint, engine.FailNone, ""},
		{"twodocs", protocol.OpFingerprint, engine.FailProtocol, "~stdout holds more than one JSON document"},
		{"badutf8", protocol.OpFingerprint, engine.FailProtocol, "~not valid UTF-8"},
		{"okfalse", protocol.OpStart, engine.FailProtocol, "~/ok: false, but the exit status is 0"},
		{"exit3ok", protocol.OpStart, engine.FailProtocol, "~/ok: true, but the exit status is 3"},
		{"fail", protocol.OpStart, engine.FailOp, "exit status 1: port taken (stderr: error: port 8080 is taken)"},
		{"segv", protocol.OpStatus, engine.FailOp, "killed by signal 11 (segmentation fault) (stderr: about to crash)"},
		{"nosuchmode", protocol.OpStatus, engine.FailOp, "exit status 64 (stderr: svc.sh: unknown mode nosuchmode)"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			res := Spawn(context.Background(), f.spec(tc.mode, tc.op, 10*time.Second))
			o := Outcome(tc.op, protocol.RoleService, res)
			if o.Failure != tc.failure {
				t.Fatalf("failure %q, want %q; message %q", o.Failure, tc.failure, o.Message)
			}
			if s, ok := strings.CutPrefix(tc.msg, "~"); ok {
				if !strings.Contains(o.Message, s) {
					t.Errorf("message %q lacks %q", o.Message, s)
				}
			} else if o.Message != tc.msg {
				t.Errorf("message %q, want %q", o.Message, tc.msg)
			}
		})
	}
}

func testOwnedObjectWithDashIDIsSkipped(t *testing.T) {
	f := newFixture(t)
	res := Spawn(context.Background(), f.spec("dashid", protocol.OpListOwned, 10*time.Second))
	o := Outcome(protocol.OpListOwned, protocol.RoleService, res)
	if o.Failure != engine.FailNone {
		t.Fatalf("outcome %+v", o)
	}
	if objs := o.Result.OwnedList.Objects; len(objs) != 1 || objs[0].ID != "vol-1" {
		t.Errorf("objects %+v, want only vol-1", objs)
	}
	const skipped = `/objects/0: skipped: invalid object id "-rf": starts with '-'`
	if w := o.Result.Warnings; len(w) != 1 || !strings.Contains(w[0], skipped) {
		t.Errorf("warnings %q", w)
	}
}

func testSpawnErrors(t *testing.T) {
	f := newFixture(t)
	notExec := filepath.Join(f.bundle, "bin", "plain")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]Spec{
		"missing":        {Path: filepath.Join(f.bundle, "bin", "nope"), Dir: f.bundle, Timeout: time.Second},
		"not executable": {Path: notExec, Dir: f.bundle, Timeout: time.Second},
		"bad dir":        {Path: f.script, Dir: filepath.Join(f.bundle, "gone"), Timeout: time.Second},
		"no timeout":     {Path: f.script, Dir: f.bundle},
	} {
		t.Run(name, func(t *testing.T) {
			res := Spawn(context.Background(), s)
			if res.SpawnErr == nil || res.Pid != 0 {
				t.Fatalf("spawn error %v, pid %d", res.SpawnErr, res.Pid)
			}
			o := Outcome(protocol.OpStart, protocol.RoleService, res)
			if o.Failure != engine.FailSpawn || o.Message == "" {
				t.Errorf("outcome %+v", o)
			}
		})
	}
}

func testStderrKeepsTheTail(t *testing.T) {
	f := newFixture(t)
	res := Spawn(context.Background(), f.spec("stderrflood", protocol.OpFingerprint, 30*time.Second))
	if o := Outcome(protocol.OpFingerprint, protocol.RoleService, res); o.Failure != engine.FailNone {
		t.Fatalf("outcome %+v", o)
	}
	tail := res.StderrTail
	if len(tail) != protocol.StderrTailSize {
		t.Fatalf("tail is %d bytes, want %d", len(tail), protocol.StderrTailSize)
	}
	end := "\nthe last line\n"
	if !bytes.HasSuffix(tail, []byte(end)) {
		t.Errorf("tail ends %q", tail[len(tail)-40:])
	}
	if bytes.Count(tail, []byte("e")) != len(tail)-len(end)+2 { // "the last line" has two e's
		t.Errorf("tail is not the last %d bytes", len(tail))
	}
}

func TestTailBuffer(t *testing.T) {
	var all []byte
	var tb tailBuffer
	for i := 0; i < 5000; i++ {
		chunk := bytes.Repeat([]byte{byte('a' + i%26)}, i%97)
		all = append(all, chunk...)
		tb.write(chunk)
	}
	want := all[len(all)-protocol.StderrTailSize:]
	if !bytes.Equal(tb.bytes(), want) {
		t.Errorf("ring content differs from the last %d bytes", len(want))
	}
	var empty tailBuffer
	if empty.bytes() != nil {
		t.Errorf("an empty tail is not nil")
	}
}

func testCancelKillsLikeATimeout(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	s := f.spec("hang", protocol.OpStart, time.Minute)
	s.OnStart = func(int) { cancel() }
	res := Spawn(ctx, s)
	if !res.Canceled || res.TimedOut || res.Duration > 30*time.Second {
		t.Fatalf("canceled %v timed out %v after %v", res.Canceled, res.TimedOut, res.Duration)
	}
	o := Outcome(protocol.OpStart, protocol.RoleService, res)
	if o.Failure != engine.FailTimeout || !strings.HasPrefix(o.Message, "canceled after ") {
		t.Errorf("outcome %+v", o)
	}
	res = Spawn(ctx, s)
	if !res.Canceled || res.Pid != 0 || res.SpawnErr != nil {
		t.Errorf("an op with a done context: %+v", res)
	}
	if o := Outcome(protocol.OpStart, protocol.RoleService, res); o.Failure != engine.FailTimeout ||
		o.Message != "canceled before it started" {
		t.Errorf("outcome %+v", o)
	}
}

func testHooks(t *testing.T) {
	f := newFixture(t)
	s := f.spec("ok", protocol.OpFingerprint, 10*time.Second)
	var launched, adjusted bool
	s.Hooks = Hooks{
		SysProcAttr: func(a *syscall.SysProcAttr) { adjusted = a.Setpgid },
		Launch: func(start func() error) error {
			launched = true
			done := make(chan error)
			go func() { done <- start() }() // another goroutine, as a confined thread would be
			return <-done
		},
	}
	var pid int
	s.OnStart = func(p int) { pid = p }
	res := Spawn(context.Background(), s)
	if o := Outcome(protocol.OpFingerprint, protocol.RoleService, res); o.Failure != engine.FailNone {
		t.Fatalf("outcome %+v", o)
	}
	if !launched || !adjusted || pid != res.Pid || pid == 0 {
		t.Errorf("launched %v, adjusted with Setpgid %v, OnStart pid %d, result pid %d", launched, adjusted, pid, res.Pid)
	}
	s.Hooks.Launch = func(func() error) error { return nil }
	if res := Spawn(context.Background(), s); res.SpawnErr == nil {
		t.Errorf("a Launch that never started the op succeeded")
	}

	// Started sees the pid of the running op; its error kills the op.
	s.Hooks.Launch = nil
	var startedPid int
	s.Hooks.Started = func(p int) error {
		startedPid = p
		if _, _, ok := procStat(p); !ok { // it may have exited, but is not reaped yet
			t.Errorf("Started(%d): no such process", p)
		}
		return nil
	}
	res = Spawn(context.Background(), s)
	if startedPid == 0 || startedPid != res.Pid || res.SpawnErr != nil {
		t.Errorf("Started saw pid %d; result pid %d, spawn error %v", startedPid, res.Pid, res.SpawnErr)
	}
	s = f.spec("hang", protocol.OpStart, 10*time.Second)
	s.Hooks.Started = func(p int) error {
		startedPid = p
		return errors.New("no rlimit for you")
	}
	// The op hangs and no timer runs for an op that failed to start: Spawn
	// returns only if it kills the op, and the guard only keeps a Spawn
	// that waits for it from hanging the test.
	ran := make(chan Result, 1)
	go func() { ran <- Spawn(context.Background(), s) }()
	select {
	case res = <-ran:
	case <-time.After(time.Minute):
		t.Fatal("Spawn with a failing Started hook has not returned in a minute: " +
			"it waits for its hanging op instead of killing it")
	}
	if res.SpawnErr == nil || !strings.Contains(res.SpawnErr.Error(), "no rlimit for you") ||
		res.Pid != 0 || res.TimedOut {
		t.Errorf("a failing Started: spawn error %v, pid %d, timed out %v", res.SpawnErr, res.Pid, res.TimedOut)
	}
	eventually(t, time.Minute, "the op of a failing Started is killed", func() bool { return !alive(startedPid) })
}

func testReaperReapsAbandonedDaemon(t *testing.T) {
	f := newFixture(t)
	fifo := filepath.Join(f.data, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	res := Spawn(context.Background(), f.spec("doublefork", protocol.OpStart, 10*time.Second))
	if o := Outcome(protocol.OpStart, protocol.RoleService, res); o.Failure != engine.FailNone {
		t.Fatalf("outcome %+v", o)
	}
	daemon := f.readPid(t, "daemon.pid")
	// Its parent exited before the op did: the daemon is ours now.
	if ppid, state, ok := procStat(daemon); !ok || ppid != os.Getpid() || state == 'Z' {
		t.Fatalf(
			"daemon %d: parent %d state %c found %v; want a live child of the subreaper %d", daemon, ppid, state, ok,
			os.Getpid())
	}
	// Let it exit: it blocks reading the fifo.
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("x\n"))
	w.Close()
	eventually(t, 10*time.Second, "the dead daemon was not reaped", func() bool {
		_, _, exists := procStat(daemon)
		return !exists
	})
	if zs := zombieChildren(); len(zs) > 0 {
		t.Errorf("zombie children left: %v", zs)
	}
}

func testConcurrentOpsWhileDaemonsDie(t *testing.T) {
	f := newFixture(t)
	const n = 50
	results := make([]Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = Spawn(context.Background(), f.spec("shortdaemon", protocol.OpStart, 60*time.Second))
		}()
	}
	wg.Wait()
	for i, res := range results {
		if o := Outcome(protocol.OpStart, protocol.RoleService, res); o.Failure != engine.FailNone {
			t.Errorf("op %d: %+v (a stolen exit status shows as a wait error)", i, o)
		}
	}
	// The daemons sleep at most 0.5 s; then every one must be reaped.
	eventually(t, 20*time.Second, "zombies left", func() bool { return len(zombieChildren()) == 0 && ReapOrphans() == 0 })
}
