package sandbox

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// policy is what one confining thread applies to itself before it forks
// ops: the same for every op of a module.
type policy struct {
	key    string
	module string
	abi    int // 0: no Landlock
	rules  []Rule
	scope  uint64 // LANDLOCK_SCOPE_* flags
	netns  bool
}

func policyOf(p *Plan) *policy {
	pol := &policy{module: p.Module, abi: p.Landlock, rules: p.Rules, netns: p.NetNS}
	if pol.abi > 0 {
		pol.scope = scoped(pol.abi)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s|abi %d|scope %#x|netns %v", p.Module, pol.abi, pol.scope, pol.netns)
	for _, r := range pol.rules {
		fmt.Fprintf(&b, "|%d %s %s", r.Access, r.Path, identity(r.Path))
	}
	pol.key = b.String()
	return pol
}

// identity is the file a rule's path names now, as Landlock holds it: a
// rule is bound to the file opened when the domain is made, not to its
// path. A path that names another file since (a bundle directory replaced
// by a package upgrade, mv then a new copy) makes another policy, so that
// the reload after it confines ops to the new file on a new thread; the
// old thread would refuse them ("permission denied") until svcrun
// restarts.
func identity(path string) string {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return "absent" // the thread's addRule will say why
	}
	return fmt.Sprintf("%d:%d", st.Dev, st.Ino)
}

// apply confines the calling thread, which must be locked to its
// goroutine for good: an empty network namespace, no_new_privs, the
// Landlock domain. Each is a per-thread system call.
func (pol *policy) apply() error {
	if pol.netns {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("sandbox: module %q: %s: unshare(CLONE_NEWNET): %w", pol.module, LayerNetNS, err)
		}
	}
	if err := setNoNewPrivs(); err != nil {
		return fmt.Errorf("sandbox: module %q: %s: %w", pol.module, LayerNoNewPrivs, err)
	}
	if pol.abi > 0 {
		fd, err := buildRuleset(pol.rules, pol.abi, pol.scope)
		if err != nil {
			return fmt.Errorf("sandbox: module %q: %s: %w", pol.module, LayerLandlock, err)
		}
		err = restrictThread(fd)
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("sandbox: module %q: %s: %w", pol.module, LayerLandlock, err)
		}
	}
	return nil
}

// confiner starts the ops of one policy on its confined thread.
//
// The thread lives as long as svcrun, so that every op of a module, and
// every process its ops leave behind (the daemon of a start), share one
// Landlock domain: a domain is made by each landlock_restrict_self, and
// scoping (signals, abstract Unix sockets) separates sibling domains. A
// module whose policy changed (a reload with other grants, or with a
// bundle, grant or tool replaced by another file under the same path) gets
// a new confiner, and the old one's thread exits once idle for
// idleTimeout.
//
// The hand-off to the thread and back is one byte over a pipe each way,
// not a channel: a goroutine locked to its thread and parked on a channel
// is woken through the scheduler (the caller's P handed to the locked M,
// a futex wake, and the same again for the answer), about 20 us a hop on
// a small VM, while a pipe write wakes the thread blocked in read(2)
// directly, and synchronously (on the writer's CPU): about 5 us
// (docs/decisions.md, Sandbox; the op's figure today: bench/README.md,
// row op-sandboxed). The request and its answer travel through atomics, which the race detector
// sees; the pipes only wake.
type confiner struct {
	pol *policy
	// stale says a newer policy replaced this one: its thread exits when
	// idle.
	stale atomic.Bool

	// mu serializes launches: one request in flight, and the thread's
	// start and exit.
	mu      sync.Mutex
	running bool
	req     [2]int // request pipe: caller writes, thread reads
	rep     [2]int // answer pipe: thread writes, caller reads
	// setups counts the threads set up so far (tests).
	setups int

	call   atomic.Pointer[func() error]
	result atomic.Pointer[error]
}

var (
	confMu    sync.Mutex
	confiners = map[string]*confiner{}
)

// idleTimeout is how long the thread of a stale confiner waits for an op
// before it exits.
var idleTimeout = 10 * time.Minute

// confinerFor returns the confiner of pol, shared by every op with the
// same policy; the module's confiners of other policies become stale.
func confinerFor(pol *policy) *confiner {
	confMu.Lock()
	defer confMu.Unlock()
	c := confiners[pol.key]
	if c == nil {
		c = &confiner{pol: pol}
		for key, o := range confiners {
			if o.pol.module == pol.module {
				o.stale.Store(true)
				delete(confiners, key)
			}
		}
		confiners[pol.key] = c
	}
	return c
}

// launch is the executor's Launch hook: it runs start, which forks and
// execs the op, on the confined thread, and returns its error.
func (c *confiner) launch(start func() error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.running {
		if err := c.startThread(); err != nil {
			return err
		}
	}
	c.call.Store(&start)
	if err := writeByte(c.req[1]); err != nil {
		return fmt.Errorf("sandbox: module %q: wake the confining thread: %w", c.pol.module, err)
	}
	if err := readByte(c.rep[0]); err != nil {
		return fmt.Errorf("sandbox: module %q: wait for the confining thread: %w", c.pol.module, err)
	}
	return *c.result.Load()
}

// startThread starts the confining thread and waits until it is set up;
// c.mu is held.
func (c *confiner) startThread() error {
	if err := unix.Pipe2(c.req[:], unix.O_CLOEXEC); err != nil {
		return fmt.Errorf("sandbox: pipe: %w", err)
	}
	if err := unix.Pipe2(c.rep[:], unix.O_CLOEXEC); err != nil {
		unix.Close(c.req[0])
		unix.Close(c.req[1])
		return fmt.Errorf("sandbox: pipe: %w", err)
	}
	c.setups++
	ready := make(chan error, 1)
	goLocked(func() { c.serve(ready) })
	if err := <-ready; err != nil {
		c.closePipes()
		return err
	}
	c.running = true
	return nil
}

func (c *confiner) closePipes() {
	for _, fd := range []int{c.req[0], c.req[1], c.rep[0], c.rep[1]} {
		unix.Close(fd)
	}
}

// serve runs on the confined thread: it applies the policy, says so on
// ready, then runs the requests, until the confiner is stale and has been
// idle for idleTimeout; then it returns, locked: the thread exits. When
// the policy cannot be applied it returns at once (the thread, perhaps
// half confined, exits with it), and the next launch tries again on a new
// thread. Nothing sets Pdeathsig on ops: it would fire when this thread
// exits.
func (c *confiner) serve(ready chan<- error) {
	if err := c.pol.apply(); err != nil {
		ready <- err
		return
	}
	ready <- nil
	fds := []unix.PollFd{{Fd: int32(c.req[0]), Events: unix.POLLIN}}
	idle := int(idleTimeout / time.Millisecond)
	for {
		n, err := unix.Poll(fds, idle)
		switch {
		case err == unix.EINTR:
			continue
		case err == nil && n == 0:
			// Idle. A stale confiner's thread goes, unless a launch
			// holds the lock (and so is about to write, or has
			// written, a request).
			if c.stale.Load() && c.mu.TryLock() {
				c.running = false
				c.closePipes()
				c.mu.Unlock()
				return
			}
			continue
		}
		if err := readByte(c.req[0]); err != nil {
			continue // cannot happen: poll said readable
		}
		start := *c.call.Load()
		err = start()
		c.result.Store(&err)
		writeByte(c.rep[1])
	}
}

var oneByte = []byte{1}

func writeByte(fd int) error {
	for {
		_, err := unix.Write(fd, oneByte)
		if err != unix.EINTR {
			return err
		}
	}
}

func readByte(fd int) error {
	var b [1]byte
	for {
		n, err := unix.Read(fd, b[:])
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return err
		case n != 1:
			return errors.New("end of pipe")
		}
		return nil
	}
}

// goLocked runs f in a new goroutine locked to an OS thread that is not
// the main thread, for good: the goroutine never unlocks it, so the thread
// exits with the goroutine and nothing else ever runs on it. (The runtime
// would wedge, not end, a main thread whose goroutine exits locked, and a
// confined main thread would put the thread group leader, which kill(2)
// and /proc/<pid> address, in the ops' Landlock domain.) Threads the
// runtime creates later are cloned from its template thread, not from a
// locked one, so they do not inherit the confinement.
func goLocked(f func()) {
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() != unix.Getpid() {
			f()
			return // locked: the thread exits
		}
		// The main thread. While this goroutine holds it, the new one
		// cannot be scheduled here.
		locked := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			close(locked)
			f()
		}()
		<-locked
		runtime.UnlockOSThread()
	}()
}
