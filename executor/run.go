package executor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/oarbank/svcrun/clockwork"
	"github.com/oarbank/svcrun/protocol"
)

// Defaults of Spec.
const (
	// DefaultGrace is the pause between SIGTERM and SIGKILL for an op
	// that overran its timeout.
	DefaultGrace = 2 * time.Second
	// DefaultWaitDelay is how long Spawn keeps reading stdout and stderr
	// after the op's process exited: a daemon the op left behind may hold
	// them open for ever.
	DefaultWaitDelay = 200 * time.Millisecond
)

// Spec is one op process to run.
type Spec struct {
	// Path is the executable, absolute: the manifest's exec[0] resolved
	// inside the bundle. There is no PATH lookup.
	Path string
	// Arg0 is argv[0]; "" means Path. A symlinked multi-call binary wants
	// the unresolved name here.
	Arg0 string
	// Args follow argv[0]: exec[1:], the op, then the op's arguments.
	Args []string
	// Dir is the working directory: the bundle root.
	Dir string
	// Env is the op's whole environment (svcenv.Environ). Nothing of the
	// agent's own environment is added, and a nil Env means an empty one,
	// not the agent's.
	Env []string
	// Timeout bounds the op; it must be positive. At the timeout the op's
	// process group gets SIGTERM, then SIGKILL Grace later.
	Timeout time.Duration
	// Grace is the SIGTERM to SIGKILL gap; 0 means DefaultGrace.
	Grace time.Duration
	// WaitDelay is how long stdout and stderr are still read after the
	// op's process exited; 0 means DefaultWaitDelay.
	WaitDelay time.Duration
	// Stdin is the op's standard input; nil means a /dev/null that Spawn
	// opened once for all ops (an op never reads anything).
	Stdin *os.File
	// Hooks are the sandbox's extension points.
	Hooks Hooks
	// OnStart, if set, is called with the op's pid, which is also its
	// process group id, as soon as it runs and before Spawn waits for it.
	OnStart func(pid int)
	// Pauses, if set, keeps a pause of svcrun itself out of the op's
	// timeout and grace: neither ends while svcrun does not run, nor at
	// the instant it runs again, when the op's exit meanwhile is still to
	// be reaped.
	Pauses *clockwork.Pauses
}

// Hooks are the extension points of the sandbox (docs/decisions.md, Sandbox). The zero
// value runs the op unconfined, as svcrun's own user.
type Hooks struct {
	// SysProcAttr adjusts the attributes of the op's process before it
	// is started: Credential (run_as), Cloneflags (namespaces),
	// UseCgroupFD and CgroupFD (clone into the service's cgroup),
	// Pdeathsig. On unix Spawn has set Setpgid, and the hook must leave it:
	// timeouts, Kill and Freeze address the op's process group. On Linux
	// Spawn sets PidFD after the hook: the op's pidfd is Spawn's.
	SysProcAttr func(*syscall.SysProcAttr)
	// Launch runs start, which forks and execs the op, where it must
	// run: a Landlock policy confines one locked OS thread, and only a
	// child cloned from that thread inherits it. Launch must call start
	// exactly once and return its error. nil calls start on Spawn's
	// goroutine. Files Spawn passes to the child are opened beforehand, on
	// Spawn's goroutine.
	Launch func(start func() error) error
	// Started, if set, is called with the op's pid as soon as it was
	// started, before OnStart and before Spawn waits for it: the sandbox
	// sets the op's RLIMIT_CORE there (prlimit). An error kills the op's
	// process group, and Spawn fails with SpawnErr set to that error and
	// Pid 0, as for a failed start.
	Started func(pid int) error
}

// Result is how one op process ended.
type Result struct {
	// Output is what the op printed and its exit status. ExitCode is
	// 128+n when the process was ended by signal n (see Signal).
	protocol.Output
	// Pid is the op's pid and process group id; 0 if it never started.
	Pid int
	// Signal is the signal that ended the op's process, or 0.
	Signal syscall.Signal
	// TimedOut says the op overran Spec.Timeout and was killed with its
	// process group.
	TimedOut bool
	// Canceled says the context ended before the op, which was killed
	// like a timed-out op (or, with Pid 0, never started).
	Canceled bool
	// Escalated says SIGTERM was not enough: the group got SIGKILL after
	// the grace (or at once, for a stdout overrun).
	Escalated bool
	// PipesHeld says stdout or stderr was still open WaitDelay after the
	// op's process exited: something the op left behind holds them (a
	// daemon that did not redirect its output). Reading stopped there.
	PipesHeld bool
	// SpawnErr is set when the op could not be started (missing file,
	// not executable, bad working directory, a failing hook) or waited
	// for; nothing else is then meaningful but Duration.
	SpawnErr error
	// Left, after a stop, are the processes it left in the service's
	// container (or, in the fallback, in its process groups) and that
	// were killed before the stop counted as ended; the executor's ops
	// only (not Spawn's).
	Left []int
	// Timeout is the timeout the op ran with.
	Timeout time.Duration
	// Duration is the wall time from the spawn to the return of Spawn.
	Duration time.Duration
}

var (
	devNullOnce sync.Once
	devNull     *os.File
	devNullErr  error
)

// sharedDevNull is the stdin of every op: opened once, never closed.
func sharedDevNull() (*os.File, error) {
	devNullOnce.Do(func() { devNull, devNullErr = os.Open(os.DevNull) })
	return devNull, devNullErr
}

// Spawn runs one op process and returns when it has ended, synchronously.
//
// The op runs in its own process group with exactly Spec.Env, in Spec.Dir,
// stdin /dev/null. Stdout is read up to protocol.MaxStdout+1 bytes: one more
// sets StdoutTruncated and kills the group at once, since the output is
// invalid already. Of stderr only the last protocol.StderrTailSize bytes
// are kept, and it is drained as fast as it comes, so the op never blocks
// on it. At the timeout (or when ctx ends) the group gets SIGTERM, and
// SIGKILL Grace later unless it emptied. Once the op's process exited its
// pipes are read for at most WaitDelay more. Spawn never kills the group of
// an op that exited on its own: a start op's daemons live there.
//
// A process that called BecomeSubreaper must start every child through
// Spawn or StartCmd, so the reaper never takes an exit status os/exec waits
// for.
func Spawn(ctx context.Context, s Spec) Result {
	p := &spawning{spec: s, t0: time.Now(), res: Result{Timeout: s.Timeout}}
	if s.Timeout <= 0 {
		return p.fail(fmt.Errorf("executor: timeout %v is not positive", s.Timeout))
	}
	if ctx.Err() != nil {
		p.res.Canceled = true
		p.res.Duration = time.Since(p.t0)
		return p.res
	}
	p.grace, p.waitDelay = s.Grace, s.WaitDelay
	if p.grace <= 0 {
		p.grace = DefaultGrace
	}
	if p.waitDelay <= 0 {
		p.waitDelay = DefaultWaitDelay
	}
	p.stdin = s.Stdin
	if p.stdin == nil {
		var err error
		if p.stdin, err = sharedDevNull(); err != nil {
			return p.fail(fmt.Errorf("executor: open %s: %w", os.DevNull, err))
		}
	}
	p.env = s.Env
	if p.env == nil {
		p.env = []string{} // nil would give the child svcrun's environment
	}
	arg0 := s.Arg0
	if arg0 == "" {
		arg0 = s.Path
	}
	p.argv = make([]string, 0, 1+len(s.Args))
	p.argv = append(p.argv, arg0)
	p.argv = append(p.argv, s.Args...)
	p.sys = newSysProcAttr()
	if s.Hooks.SysProcAttr != nil {
		s.Hooks.SysProcAttr(p.sys)
	}
	if !portableOnly {
		if res, ok := spawnNative(ctx, p); ok {
			return res
		}
	}
	return spawnPortable(ctx, p)
}

// portableOnly makes Spawn use the portable engine everywhere (tests run
// both engines).
var portableOnly bool

// spawning is one op process whose Spec has been checked and completed, on
// its way through Spawn.
type spawning struct {
	spec      Spec
	t0        time.Time
	res       Result
	grace     time.Duration
	waitDelay time.Duration
	stdin     *os.File
	env       []string
	argv      []string
	sys       *syscall.SysProcAttr
}

func (p *spawning) fail(err error) Result {
	if errors.Is(err, syscall.EACCES) {
		if why := whyDenied(p.sys, p.spec.Dir, p.spec.Path); why != "" {
			err = fmt.Errorf("%w (%s)", err, why)
		}
	}
	p.res.SpawnErr = err
	p.res.Duration = time.Since(p.t0)
	return p.res
}

// launch calls start through the Launch hook, if any.
func (p *spawning) launch(start func() error, started func() bool) error {
	if p.spec.Hooks.Launch == nil {
		return start()
	}
	err := p.spec.Hooks.Launch(start)
	if err == nil && !started() {
		err = errors.New("executor: the Launch hook did not call start")
	}
	return err
}

// arm starts the timeout and the cancellation of an op that runs.
func (p *spawning) arm(ctx context.Context, k *killer) (stop func()) {
	timer := p.spec.Pauses.AfterFunc(p.spec.Timeout, func() { k.terminate(&k.timedOut) })
	stopCtx := context.AfterFunc(ctx, func() { k.terminate(&k.canceled) })
	return func() {
		timer.Stop()
		stopCtx()
	}
}

// spawnPortable is the engine of every platform: os.StartProcess, pipes read by
// the runtime's poller, and a goroutine in Wait.
func spawnPortable(ctx context.Context, p *spawning) Result {
	rOut, wOut, err := os.Pipe()
	if err != nil {
		return p.fail(fmt.Errorf("executor: stdout pipe: %w", err))
	}
	rErr, wErr, err := os.Pipe()
	if err != nil {
		rOut.Close()
		wOut.Close()
		return p.fail(fmt.Errorf("executor: stderr pipe: %w", err))
	}
	attr := &os.ProcAttr{Dir: p.spec.Dir, Env: p.env, Files: []*os.File{p.stdin, wOut, wErr}, Sys: p.sys}
	var (
		proc    *os.Process
		untrack func()
	)
	err = p.launch(func() error {
		var err error
		proc, untrack, err = startTracked(p.spec.Path, p.argv, attr)
		return err
	}, func() bool { return proc != nil })
	if err == nil && p.spec.Hooks.Started != nil {
		err = p.spec.Hooks.Started(proc.Pid)
	}
	wOut.Close()
	wErr.Close()
	if err != nil {
		if proc != nil { // Launch failed after start succeeded: do not leak the op
			signalGroup(proc.Pid, syscall.SIGKILL)
			proc.Wait()
			untrack()
		}
		rOut.Close()
		rErr.Close()
		return p.fail(err)
	}
	res := &p.res
	res.Pid = proc.Pid
	if p.spec.OnStart != nil {
		p.spec.OnStart(proc.Pid)
	}
	k := &killer{pgid: proc.Pid, grace: p.grace, pauses: p.spec.Pauses}
	disarm := p.arm(ctx, k)

	var tail tailBuffer
	errDone := make(chan struct{})
	go func() {
		tail.readFrom(rErr)
		close(errDone)
	}()
	var (
		state   *os.ProcessState
		waitErr error
	)
	waitDone := make(chan struct{})
	go func() {
		state, waitErr = proc.Wait()
		untrack()
		disarm()
		k.exited()
		// Whatever still holds the pipes gets WaitDelay to finish.
		dl := time.Now().Add(p.waitDelay)
		stopReading(rOut, dl)
		stopReading(rErr, dl)
		close(waitDone)
	}()

	var out stdoutBuffer
	var outErr error
	for outErr == nil && !out.truncated {
		var n int
		n, outErr = rOut.Read(out.next())
		if out.advance(n) {
			k.kill()
		}
	}
	rOut.Close()
	<-waitDone
	<-errDone
	rErr.Close()
	k.finish()

	res.Stdout, res.StdoutTruncated = out.buf, out.truncated
	res.StderrTail = tail.bytes()
	pipeCut := errors.Is(outErr, os.ErrDeadlineExceeded) || errors.Is(outErr, os.ErrClosed)
	res.PipesHeld = tail.held || (!out.truncated && pipeCut)
	res.TimedOut, res.Canceled, res.Escalated = k.timedOut, k.canceled, k.killed
	if waitErr != nil {
		res.SpawnErr = fmt.Errorf("executor: wait for pid %d: %w", proc.Pid, waitErr)
	} else {
		res.ExitCode, res.Signal = exitStatus(state)
	}
	res.Duration = time.Since(p.t0)
	return *res
}

// stopReading makes reads of f fail at dl; where f cannot take a deadline
// it is closed then instead.
func stopReading(f *os.File, dl time.Time) {
	if err := f.SetReadDeadline(dl); err != nil {
		time.AfterFunc(time.Until(dl), func() { f.Close() })
	}
}

// stdoutBuffer collects stdout up to protocol.MaxStdout+1 bytes.
type stdoutBuffer struct {
	buf       []byte
	truncated bool
}

const stdoutLimit = protocol.MaxStdout + 1

// next returns where to read next, growing the buffer up to the limit.
func (b *stdoutBuffer) next() []byte {
	if b.buf == nil {
		b.buf = make([]byte, 0, 4096)
	}
	if len(b.buf) == cap(b.buf) {
		nb := make([]byte, len(b.buf), min(2*cap(b.buf), stdoutLimit))
		copy(nb, b.buf)
		b.buf = nb
	}
	return b.buf[len(b.buf):cap(b.buf)]
}

// advance commits n bytes read into next(). It reports true when the limit
// was reached: the caller kills the op and stops reading.
func (b *stdoutBuffer) advance(n int) bool {
	if n > 0 {
		b.buf = b.buf[:len(b.buf)+n]
	}
	if len(b.buf) >= stdoutLimit {
		b.truncated = true
	}
	return b.truncated
}

// killer ends an op's process group: SIGTERM at the timeout, SIGKILL a
// grace later.
type killer struct {
	pgid  int
	grace time.Duration

	mu        sync.Mutex
	termAt    time.Time // when SIGTERM was sent; zero if it was not
	graceKill clockwork.Stopper
	pauses    *clockwork.Pauses
	done      bool // the process exited, and finish ran or is running
	gone      bool // the leader was reaped
	timedOut  bool
	canceled  bool
	killed    bool
}

// terminate sends SIGTERM to the group and arms the SIGKILL; reason records
// the cause. It does nothing once the op's process has exited or a
// termination is under way.
func (k *killer) terminate(reason *bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	// An op whose process exited but is not reaped yet (svcrun was
	// paused, or busy) ended before its deadline: its group, where a
	// start's daemon lives, is left alone.
	if k.gone || !k.termAt.IsZero() || exited(k.pgid) {
		return
	}
	*reason = true
	k.termAt = time.Now()
	signalGroup(k.pgid, syscall.SIGTERM)
	k.graceKill = k.pauses.AfterFunc(k.grace, k.kill)
}

// kill sends SIGKILL to the group, once.
func (k *killer) kill() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.killed || k.done {
		return
	}
	k.killed = true
	signalGroup(k.pgid, syscall.SIGKILL)
}

// exited records that the op's process was reaped: no new termination
// starts from now on.
func (k *killer) exited() {
	k.mu.Lock()
	k.gone = true
	k.mu.Unlock()
}

// finish runs after the op's process exited. If the group was being
// terminated, it waits (at most until the grace is over) for the rest of
// the group to go, and kills what is left: an op that overran its timeout
// is killed with its whole process group.
func (k *killer) finish() {
	k.mu.Lock()
	termAt := k.termAt
	k.mu.Unlock()
	if !termAt.IsZero() {
		deadline := termAt.Add(k.grace)
		for groupHasLive(k.pgid) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if groupHasLive(k.pgid) {
			k.kill()
		}
	}
	k.mu.Lock()
	k.done = true
	if k.graceKill != nil {
		k.graceKill.Stop()
	}
	k.mu.Unlock()
}
