package cgroup

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Manager owns the per-service containers under one base cgroup and
// watches them (see the package doc). Its methods are safe for concurrent
// use.
type Manager struct {
	sup       Support
	err       error // why containers do not work; nil when they do
	onEmptied atomic.Pointer[func(string)]
	// onArmed is told each service whose container becomes armed.
	onArmed atomic.Pointer[func(string)]
	// onMemberExited is told each service whose container lost a watched
	// process while others live on (members_linux.go).
	onMemberExited atomic.Pointer[func(string, bool)]
	members        *members // nil without pidfds
	log            *slog.Logger
	lockFD         int // the base's flock, held until Close; -1 without

	mu      sync.Mutex
	closed  bool
	modules map[string]*moduleDir
	svcs    map[string]*container
	wds     map[int32]*container
	ino     *os.File // inotify, non-blocking, read by watch
	inoFD   int
	done    chan struct{}
}

// moduleDir is <base>/<module>; limits says why a controller is not
// enabled for its services ("" when it is).
type moduleDir struct {
	memory, pids string
}

// container is one service's cgroup.
type container struct {
	service, dir string
	// dir and cgroup.events are known by their inodes, recorded when the
	// container is opened: a descriptor handed out (openDir) or a re-read
	// of cgroup.events (openEvents) is of this directory, never of one
	// re-created at the same path. No descriptor is held: every op's
	// fork copies svcrun's descriptor table and its exec closes it, in
	// the one confining thread of the module, so one descriptor per
	// service slowed every spawn of a node of 1,000 services
	// (bench/HISTORY.md, svcrun beside supervisord, s6 and runit: what is
	// left is the module's spawn; bench/README.md#pidfds for the pidfds).
	// open is false once it is removed or the Manager closed.
	open        bool
	dirID, evID fileID
	wd          int32
	mod         *moduleDir

	mu        sync.Mutex
	ops       int
	armed     bool
	populated bool
	frozen    bool
	killed    bool     // received cgroup.kill: replaced before its next op
	members   []member // its oldest processes, watched while armed
	// memberGone says a member exited while an op ran: told at its end
	// if the container is still populated then.
	memberGone bool
	changed    chan struct{} // closed and replaced at every re-read
	limits     *[2]float64   // memGB, pids last applied
	memory     string
	pids       string
}

// New probes the host (ProbeWith), creates the base cgroup and starts the
// watcher. It always returns a Manager: when containers do not work, Err
// says why, every method that needs one fails with it, and svcrun falls
// back to process groups.
func New(o Options) *Manager {
	m := &Manager{
		modules: map[string]*moduleDir{}, svcs: map[string]*container{}, wds: map[int32]*container{}, inoFD: -1, lockFD: -1,
		log: o.Logger}
	if m.log == nil {
		m.log = slog.Default()
	}
	if o.OnEmptied != nil {
		m.SetOnEmptied(o.OnEmptied)
	}
	m.sup, _ = probe(o)
	if !m.sup.Containers.OK {
		m.err = fmt.Errorf("cgroup v2 process containers: %s", m.sup.Containers.Reason)
		return m
	}
	// Before any container is touched: a second svcrun on this base would
	// replace the first one's empty containers under it.
	if m.lockFD, m.err = lockBase(o, m.sup.Base); m.err != nil {
		m.sup.Containers = Feature{Reason: m.err.Error()}
		return m
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		m.err = fmt.Errorf("cgroup v2 process containers: inotify: %w", err)
		m.sup.Containers = Feature{Reason: fmt.Sprintf("inotify (to watch cgroup.events): %v", err)}
		return m
	}
	m.inoFD = fd
	m.ino = os.NewFile(uintptr(fd), "inotify") // pollable: Close wakes the reader
	m.done = make(chan struct{})
	go m.watch()
	if m.sup.MemberExits.OK {
		if m.members, err = newMembers(); err != nil {
			m.sup.MemberExits = Feature{Reason: err.Error()}
		} else {
			go m.watchMembers()
		}
	}
	return m
}

// Support is what the probe found.
func (m *Manager) Support() Support { return m.sup }

// Err says why containers do not work here; nil when they do.
func (m *Manager) Err() error { return m.err }

// Base is the base cgroup directory.
func (m *Manager) Base() string { return m.sup.Base }

// SetOnEmptied sets the function told about emptied armed containers.
func (m *Manager) SetOnEmptied(f func(service string)) {
	if f == nil {
		m.onEmptied.Store(nil)
		return
	}
	m.onEmptied.Store(&f)
}

// SetOnArmed sets the function told about each container that becomes
// armed (an op ended and left a process there: the service's daemon), so
// that its emptying will be reported. It is called from OpEnd and must not
// block.
func (m *Manager) SetOnArmed(f func(service string)) {
	if f == nil {
		m.onArmed.Store(nil)
		return
	}
	m.onArmed.Store(&f)
}

func (m *Manager) emit(service string) {
	if f := m.onEmptied.Load(); f != nil {
		(*f)(service)
	}
}

func (m *Manager) emitArmed(service string) {
	if f := m.onArmed.Load(); f != nil {
		(*f)(service)
	}
}

// Path is the container directory of a service (whether or not it exists).
func (m *Manager) Path(service string) (string, error) {
	_, dir, err := m.dirOf(service)
	if err != nil {
		return "", err
	}
	if m.sup.Base == "" {
		return "", m.err
	}
	return dir, nil
}

// dirOf is the one mapping of a service's name to its container:
// <base>/<module>/<name>, and the module whose directory holds it. Strays
// reads it back.
func (m *Manager) dirOf(service string) (module, dir string, err error) {
	module, name, err := splitService(service)
	if err != nil {
		return "", "", err
	}
	return module, filepath.Join(m.sup.Base, module, name), nil
}

// Create makes the service's container if needed and returns a new
// descriptor of its directory, for SysProcAttr.UseCgroupFD/CgroupFD, which
// the caller closes once the op is cloned. A container left frozen (by an
// earlier svcrun) is thawed, so that ops can run in it. A container
// removed under the Manager (ErrRemoved) is for Recover.
func (m *Manager) Create(service string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, err := m.createLocked(service)
	if err != nil {
		return -1, err
	}
	return c.openDir()
}

// OpStart creates the container if needed, counts an op of the service as
// running, and returns a new descriptor to clone the op into, which the
// caller closes once the op is cloned. Every OpStart that succeeds or
// fails with ErrRemoved must be followed by OpEnd once the op's process
// has exited: the op stays counted, and Recover gives the descriptor of
// the re-created container.
func (m *Manager) OpStart(service string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, err := m.createLocked(service)
	if err != nil {
		return -1, err
	}
	fd, err := c.openDir()
	if err != nil && !errors.Is(err, ErrRemoved) {
		return -1, err
	}
	c.mu.Lock()
	c.ops++
	c.mu.Unlock()
	return fd, err
}

// OpEnd says an op of the service ended (its process exited). If the
// container is still populated and no other op of it runs, a process
// outlived the op: the container is armed. An armed container found empty
// here is reported as emptied.
func (m *Manager) OpEnd(service string) {
	c := m.lookup(service)
	if c == nil {
		return
	}
	c.mu.Lock()
	if c.ops > 0 {
		c.ops--
	}
	post := c.refreshLocked()
	armed := c.populated && c.ops == 0 && !c.armed
	if armed {
		c.armed = true
	}
	memberExited := false
	switch {
	case !c.populated:
		m.members.dropLocked(c)
		c.memberGone = false
	case c.ops == 0 && c.armed:
		memberExited, c.memberGone = c.memberGone, false
		// The oldest processes change only when one of them exits.
		if memberExited || len(c.members) < maxMembers {
			m.members.pickLocked(c)
		}
	}
	c.mu.Unlock()
	if post {
		m.emit(c.service)
	}
	if armed {
		m.emitArmed(c.service)
	}
	if memberExited {
		// The op may be what ended it: no word of a kill.
		m.emitMemberExited(c.service, false)
	}
}

func (m *Manager) lookup(service string) *container {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.svcs[service]
}

func (m *Manager) createLocked(service string) (*container, error) {
	if m.err != nil {
		return nil, m.err
	}
	if m.closed {
		return nil, errors.New("cgroup: manager closed")
	}
	if c := m.svcs[service]; c != nil {
		c.mu.Lock()
		stale := c.killed && !c.populated && c.ops == 0
		c.mu.Unlock()
		if !stale {
			return c, nil
		}
		// A cgroup that received cgroup.kill SIGKILLs every process cloned
		// into it afterwards (seen on Linux 6.18): the next op gets a fresh
		// container, or the service could never start again.
		m.dropLocked(c)
	}
	modName, dir, err := m.dirOf(service)
	if err != nil {
		return nil, err
	}
	mod, err := m.moduleLocked(modName)
	if err != nil {
		return nil, err
	}
	c := &container{service: service, dir: dir, wd: -1, mod: mod, changed: make(chan struct{})}
	// An empty container left by an earlier svcrun may have been killed:
	// replace it. A populated one holds a daemon to adopt: keep it.
	_ = unix.Rmdir(c.dir)
	if err := unix.Mkdir(c.dir, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
		return nil, fmt.Errorf("cgroup: create %s: %w", c.dir, err)
	}
	if err := m.openLocked(c); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.refreshLocked()
	frozen := c.frozen
	c.mu.Unlock()
	if frozen {
		m.setFrozen(c, false)
	}
	m.svcs[service] = c
	return c, nil
}

// openLocked records the inodes of the container's directory and of its
// cgroup.events, and watches the latter. m.mu is held.
func (m *Manager) openLocked(c *container) error {
	fail := func(what string, err error) error {
		c.markClosed()
		return fmt.Errorf("cgroup: %s %s: %w", what, c.dir, err)
	}
	var err error
	if c.dirID, err = statID(c.dir); err != nil {
		return fail("open", err)
	}
	events := filepath.Join(c.dir, fileEvents)
	if c.evID, err = statID(events); err != nil {
		return fail("open "+fileEvents+" of", err)
	}
	c.open = true
	fd, err := c.openEvents() // readable, as every re-read needs
	if err != nil {
		return fail("open "+fileEvents+" of", err)
	}
	unix.Close(fd)
	wd, err := unix.InotifyAddWatch(m.inoFD, events, unix.IN_MODIFY)
	if err != nil {
		return fail("watch "+fileEvents+" of", err)
	}
	c.wd = int32(wd)
	m.wds[c.wd] = c
	return nil
}

// Recover is for an op whose clone into the service's container failed
// before anything of it ran, or whose OpStart said ErrRemoved, and returns
// a new descriptor to clone it into (the caller's to close); the op stays
// counted. A container removed under this Manager (by another svcrun with
// the same node_id, or by hand) fails the clone with ENOENT, which reads as
// if the op's executable were missing: Recover tells it by the container's
// directory, gone or replaced by another one, re-creates the container
// (same path, same limits), logs the removal at WARN, and returns a
// descriptor of the new one. An intact container is left as it is, and its
// descriptor returned: another op of the service may have re-created it
// since this one's clone. -1 and an error naming the removal mean it could
// not be re-created; -1 and nil, that the service has no container here.
func (m *Manager) Recover(service string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.svcs[service]
	if c == nil || m.closed {
		return -1, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// openDir fails (ErrRemoved) for a directory gone or replaced.
	if fd, err := c.openDir(); err == nil {
		return fd, nil
	}
	removed := fmt.Errorf(
		"the process container %s of %s was removed (by another svcrun with the same node_id?)", c.dir, service)
	if c.wd >= 0 {
		unix.InotifyRmWatch(m.inoFD, uint32(c.wd))
		delete(m.wds, c.wd)
		c.wd = -1
	}
	m.members.dropLocked(c)
	c.markClosed()
	if err := m.recreateLocked(c); err != nil {
		return -1, fmt.Errorf("%w; re-create it: %w", removed, err)
	}
	c.armed, c.killed = false, false
	c.refreshLocked()
	if c.limits != nil {
		// A failed write shows in the container's status, as with Limits.
		c.applyLimitsLocked(c.limits[0], int64(c.limits[1]))
	}
	m.log.Warn(removed.Error()+": re-created; the op runs in it", "service", service, "container", c.dir)
	fd, err := c.openDir()
	if err != nil {
		return -1, fmt.Errorf("%w; re-created: %w", removed, err)
	}
	return fd, nil
}

// fileID is what tells a file from another at the same path.
type fileID struct{ dev, ino uint64 }

func statID(path string) (fileID, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fileID{}, err
	}
	return fileID{uint64(st.Dev), st.Ino}, nil
}

// openChecked opens path and checks that it is the file of id: ErrRemoved
// when the path is gone or names another file now.
func openChecked(path string, flags int, id fileID) (int, error) {
	var fd int
	var err error
	for {
		if fd, err = unix.Open(path, flags|unix.O_CLOEXEC, 0); err != unix.EINTR {
			break
		}
	}
	if errors.Is(err, unix.ENOENT) {
		return -1, fmt.Errorf("%w: %s", ErrRemoved, path)
	}
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if (fileID{uint64(st.Dev), st.Ino}) != id {
		unix.Close(fd)
		return -1, fmt.Errorf("%w: %s is another directory now", ErrRemoved, path)
	}
	return fd, nil
}

// openDir opens the container's directory (O_PATH), for CgroupFD.
func (c *container) openDir() (int, error) {
	if !c.open {
		return -1, fmt.Errorf("%w: %s", ErrRemoved, c.dir)
	}
	return openChecked(c.dir, unix.O_PATH|unix.O_DIRECTORY, c.dirID)
}

// recreateLocked makes a removed container's directory again (its
// module's too, with the limit controllers, if that went with it) and
// opens it. m.mu and c.mu are held.
func (m *Manager) recreateLocked(c *container) error {
	modName, _, _ := splitService(c.service) // checked when c was made
	if _, err := os.Stat(filepath.Dir(c.dir)); errors.Is(err, os.ErrNotExist) {
		delete(m.modules, modName)
	}
	mod, err := m.moduleLocked(modName)
	if err != nil {
		return err
	}
	c.mod = mod
	if err := unix.Mkdir(c.dir, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("cgroup: create %s: %w", c.dir, err)
	}
	return m.openLocked(c)
}

// moduleLocked makes <base>/<module>, with the limit controllers enabled
// for its services.
func (m *Manager) moduleLocked(module string) (*moduleDir, error) {
	if md := m.modules[module]; md != nil {
		return md, nil
	}
	dir := filepath.Join(m.sup.Base, module)
	if err := unix.Mkdir(dir, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
		return nil, fmt.Errorf("cgroup: create %s: %w", dir, err)
	}
	md := &moduleDir{}
	for _, lc := range limitControllers {
		f, why := m.sup.Memory, &md.memory
		if lc.name == "pids" {
			f, why = m.sup.Pids, &md.pids
		}
		switch {
		case !f.OK:
			*why = f.Reason
		default:
			if err := enableIn(dir, lc.name); err != nil {
				*why = fmt.Sprintf("enable %s in %s: %v", lc.name, filepath.Join(dir, fileSubtree), err)
			}
		}
	}
	m.modules[module] = md
	return md, nil
}

// openEvents opens the container's cgroup.events, checked to be this
// container's, so that a directory re-created at the same path is never
// read for this one.
func (c *container) openEvents() (int, error) {
	return openChecked(filepath.Join(c.dir, fileEvents), unix.O_RDONLY, c.evID)
}

// markClosed marks the container closed: removed, or the Manager closed.
func (c *container) markClosed() { c.open = false }

// refreshLocked re-reads cgroup.events, wakes the waiters, and reports
// whether the container is to be reported emptied (armed, empty, no op
// running), disarming it then. c.mu is held.
func (c *container) refreshLocked() (post bool) {
	if !c.open { // removed, or the Manager closed
		return false
	}
	fd, err := c.openEvents()
	if err != nil {
		return false
	}
	var buf [128]byte
	n, err := unix.Read(fd, buf[:])
	for err == unix.EINTR {
		n, err = unix.Read(fd, buf[:])
	}
	unix.Close(fd)
	if err != nil || n <= 0 {
		return false
	}
	c.populated, c.frozen = parseEvents(buf[:n], c.populated, c.frozen)
	close(c.changed)
	c.changed = make(chan struct{})
	if !c.populated && c.armed && c.ops == 0 {
		c.armed = false
		return true
	}
	return false
}

// parseEvents reads "populated 0|1" and "frozen 0|1" of cgroup.events;
// keys that are absent keep their previous value.
func parseEvents(data []byte, populated, frozen bool) (bool, bool) {
	for line := range strings.SplitSeq(string(data), "\n") {
		k, v, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		switch k {
		case "populated":
			populated = v == "1"
		case "frozen":
			frozen = v == "1"
		}
	}
	return populated, frozen
}

// watch reads the inotify events until Close and re-reads the cgroup.events
// of the containers they name.
func (m *Manager) watch() {
	defer close(m.done)
	buf := make([]byte, 64*1024)
	var touched []*container
	for {
		n, err := m.ino.Read(buf)
		if err != nil {
			if errors.Is(err, os.ErrClosed) {
				return
			}
			if errors.Is(err, syscall.EINTR) || errors.Is(err, syscall.EAGAIN) {
				continue
			}
			return // cannot happen on a valid inotify descriptor
		}
		touched = touched[:0]
		overflow := false
		m.mu.Lock()
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			off += unix.SizeofInotifyEvent + int(ev.Len)
			switch {
			case ev.Mask&unix.IN_Q_OVERFLOW != 0:
				overflow = true
			case ev.Mask&unix.IN_IGNORED != 0:
				if c := m.wds[ev.Wd]; c != nil {
					delete(m.wds, ev.Wd)
				}
			case ev.Mask&unix.IN_MODIFY != 0:
				if c := m.wds[ev.Wd]; c != nil {
					touched = append(touched, c)
				}
			}
		}
		if overflow {
			touched = touched[:0]
			for _, c := range m.svcs {
				touched = append(touched, c)
			}
		}
		m.mu.Unlock()
		for i, c := range touched {
			if i > 0 && touched[i-1] == c {
				continue
			}
			c.mu.Lock()
			post := c.refreshLocked()
			c.mu.Unlock()
			if post {
				m.emit(c.service)
			}
		}
	}
}

// rereadEvery is how often waitFor re-reads cgroup.events on its own.
const rereadEvery = 20 * time.Millisecond

// waitFor waits until cond (called with c.mu held, after a re-read of
// cgroup.events) holds, at most bound. The watcher's re-reads wake it; it
// re-reads itself every rereadEvery in case no notification comes.
func (m *Manager) waitFor(c *container, bound time.Duration, cond func(*container) bool) bool {
	deadline := time.Now().Add(bound)
	for {
		c.mu.Lock()
		ch := c.changed
		post := c.refreshLocked()
		ok := cond(c)
		c.mu.Unlock()
		if post {
			m.emit(c.service)
		}
		if ok {
			return true
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		t := time.NewTimer(min(left, rereadEvery))
		select {
		case <-ch:
		case <-t.C:
		}
		t.Stop()
	}
}

// Kill ends every process of the service's container: cgroup.kill, or
// where it is missing, SIGKILL to every pid of cgroup.procs (frozen first
// where cgroup.freeze works, so nothing forks away meanwhile), repeated
// until it is empty. With wait > 0 it waits that long at most for the
// container to be empty, and fails if it is not. A service without a
// container has nothing to kill.
func (m *Manager) Kill(service string, wait time.Duration) error {
	c, err := m.existing(service)
	if c == nil {
		return err
	}
	m.forgetMembers(c)
	if m.sup.Kill.OK {
		if err := writeFile(filepath.Join(c.dir, fileKill), "1"); err == nil {
			c.mu.Lock()
			c.killed = true
			c.mu.Unlock()
			if wait > 0 && !m.waitFor(c, wait, func(c *container) bool { return !c.populated }) {
				return fmt.Errorf("cgroup: %s still populated %v after cgroup.kill", c.dir, wait)
			}
			return nil
		}
	}
	// The fallback: signal each process, repeatedly.
	bound := max(wait, 200*time.Millisecond)
	deadline := time.Now().Add(bound)
	if m.sup.Freeze.OK {
		writeFile(filepath.Join(c.dir, fileFreeze), "1")
		defer writeFile(filepath.Join(c.dir, fileFreeze), "0")
	}
	for {
		pids, err := c.procs()
		if errors.Is(err, os.ErrNotExist) {
			return nil // the container is gone: nothing left to kill
		}
		if err != nil {
			return fmt.Errorf("cgroup: kill %s: %w", c.dir, err)
		}
		if len(pids) == 0 {
			return nil
		}
		for _, pid := range pids {
			unix.Kill(pid, unix.SIGKILL)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup: %s: %d processes survived SIGKILL for %v", c.dir, len(pids), bound)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// forgetMembers stops watching the container's processes before they
// are ended on purpose: their exits are not a death to tell.
func (m *Manager) forgetMembers(c *container) {
	c.mu.Lock()
	m.members.dropLocked(c)
	c.mu.Unlock()
}

// Strays lists, sorted, the services that have a container under the
// base but are not in known: left by an earlier svcrun whose
// configuration had them. Directories whose names are not service names
// are not svcrun's and are not listed.
func (m *Manager) Strays(known map[string]bool) ([]string, error) {
	if m.err != nil {
		return nil, nil
	}
	mods, err := os.ReadDir(m.sup.Base)
	if err != nil {
		return nil, fmt.Errorf("cgroup: strays: %w", err)
	}
	var out []string
	for _, md := range mods {
		if !md.IsDir() {
			continue
		}
		svcs, err := os.ReadDir(filepath.Join(m.sup.Base, md.Name()))
		if err != nil {
			return nil, fmt.Errorf("cgroup: strays: %w", err)
		}
		for _, sd := range svcs {
			service := md.Name() + "/" + sd.Name() // dirOf read back
			if _, _, err := splitService(service); sd.IsDir() && err == nil && !known[service] {
				out = append(out, service)
			}
		}
	}
	return out, nil
}

// Terminate ends the processes of the service's container without an op
// (whose executable may be gone): SIGTERM to each, and when the container
// is not empty within grace, Kill. killed says whether the kill was
// needed. A service without a container has nothing to end.
func (m *Manager) Terminate(service string, grace time.Duration) (killed bool, err error) {
	c, err := m.existing(service) // thawed, if it was frozen
	if c == nil {
		return false, err
	}
	m.forgetMembers(c)
	pids, err := c.procs()
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("cgroup: terminate %s: %w", c.dir, err)
	}
	for _, pid := range pids {
		if !m.sup.Freeze.OK {
			unix.Kill(pid, unix.SIGCONT) // stopped by the freeze fallback, it would take no signal
		}
		unix.Kill(pid, unix.SIGTERM)
	}
	if m.waitFor(c, grace, func(c *container) bool { return !c.populated }) {
		return false, nil
	}
	return true, m.Kill(service, grace)
}

// Freeze stops every process of the container (cgroup.freeze 1; fallback
// SIGSTOP to each). With wait > 0 it waits at most that long for
// cgroup.events to say "frozen 1".
func (m *Manager) Freeze(service string, wait time.Duration) error {
	return m.freezeThaw(service, true, wait)
}

// Thaw resumes a frozen container (cgroup.freeze 0; fallback SIGCONT to
// each process). With wait > 0 it waits at most that long for "frozen 0".
func (m *Manager) Thaw(service string, wait time.Duration) error {
	return m.freezeThaw(service, false, wait)
}

func (m *Manager) freezeThaw(service string, freeze bool, wait time.Duration) error {
	c, err := m.existing(service)
	if c == nil {
		return err
	}
	if !m.sup.Freeze.OK {
		sig := unix.SIGCONT
		if freeze {
			sig = unix.SIGSTOP
		}
		pids, err := c.procs()
		for _, pid := range pids {
			unix.Kill(pid, sig)
		}
		return err
	}
	if err := m.setFrozen(c, freeze); err != nil {
		return err
	}
	if wait > 0 && !m.waitFor(c, wait, func(c *container) bool { return c.frozen == freeze }) {
		return fmt.Errorf("cgroup: %s not %s after %v", c.dir, map[bool]string{true: "frozen", false: "thawed"}[freeze], wait)
	}
	return nil
}

func (m *Manager) setFrozen(c *container, freeze bool) error {
	v := "0"
	if freeze {
		v = "1"
	}
	if err := writeFile(filepath.Join(c.dir, fileFreeze), v); err != nil {
		return fmt.Errorf("cgroup: write %s of %s: %w", fileFreeze, c.dir, err)
	}
	return nil
}

// existing returns the service's container, creating it if it exists on
// disk (left by an earlier svcrun); nil with a nil error when there is
// none.
func (m *Manager) existing(service string) (*container, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.svcs[service]; c != nil {
		return c, nil
	}
	if m.err != nil {
		return nil, m.err
	}
	p, err := m.Path(service)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(p); err != nil {
		return nil, nil
	}
	return m.createLocked(service)
}

// procs lists the pids of cgroup.procs.
func (c *container) procs() ([]int, error) {
	data, err := os.ReadFile(filepath.Join(c.dir, fileProcs))
	if err != nil {
		return nil, err
	}
	var pids []int
	for f := range strings.FieldsSeq(string(data)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// Procs lists the processes in the service's container.
func (m *Manager) Procs(service string) ([]int, error) {
	c, err := m.existing(service)
	if c == nil {
		return nil, err
	}
	return c.procs()
}

// Limits sets memory.max (memGB GiB, 0 for no cap) and pids.max (0 for
// no cap) of the service's container, where those files exist; where they
// do not, the status records them missing and no error is returned. The
// same limits again are not rewritten.
func (m *Manager) Limits(service string, memGB float64, pids int64) (LimitsStatus, error) {
	m.mu.Lock()
	c, err := m.createLocked(service)
	m.mu.Unlock()
	if err != nil {
		return LimitsStatus{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	want := [2]float64{memGB, float64(pids)}
	if c.limits != nil && *c.limits == want {
		return LimitsStatus{Memory: c.memory, Pids: c.pids}, nil
	}
	return c.applyLimitsLocked(memGB, pids)
}

// applyLimitsLocked writes the limits; c.mu is held.
func (c *container) applyLimitsLocked(memGB float64, pids int64) (LimitsStatus, error) {
	want := [2]float64{memGB, float64(pids)}
	var err error
	var errs []error
	memValue := "max"
	if memGB > 0 {
		memValue = strconv.FormatInt(int64(memGB*(1<<30)), 10)
	}
	pidsValue := "max"
	if pids > 0 {
		pidsValue = strconv.FormatInt(pids, 10)
	}
	c.memory, err = c.setLimit(fileMemoryMax, memValue, c.mod.memory)
	errs = append(errs, err)
	c.pids, err = c.setLimit(filePidsMax, pidsValue, c.mod.pids)
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return LimitsStatus{Memory: c.memory, Pids: c.pids}, err
	}
	c.limits = &want
	return LimitsStatus{Memory: c.memory, Pids: c.pids}, nil
}

// setLimit writes value to file, and returns what the status shows.
func (c *container) setLimit(file, value, missing string) (string, error) {
	path := filepath.Join(c.dir, file)
	if _, err := os.Stat(path); err != nil {
		if missing == "" {
			missing = fmt.Sprintf("%s has no %s", c.dir, file)
		}
		if value == "max" {
			return "none (" + file + " missing: " + missing + ")", nil
		}
		return "missing: " + missing, nil
	}
	if err := writeFile(path, value); err != nil {
		return "error: " + err.Error(), fmt.Errorf("cgroup: write %s=%s: %w", path, value, err)
	}
	return value, nil
}

// Status is the state of the service's container; false when it has none
// in this Manager.
func (m *Manager) Status(service string) (Status, bool) {
	c := m.lookup(service)
	if c == nil {
		return Status{}, false
	}
	c.mu.Lock()
	post := c.refreshLocked()
	st := Status{
		Service: c.service, Path: c.dir, Populated: c.populated, Frozen: c.frozen, Armed: c.armed, Ops: c.ops,
		Memory: c.memory, Pids: c.pids}
	c.mu.Unlock()
	if post {
		m.emit(c.service)
	}
	return st, true
}

// Services lists the services that have a container in this Manager.
func (m *Manager) Services() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.svcs))
	for s := range m.svcs {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// dropLocked forgets a container and removes its directory (best effort: it
// is empty when called).
func (m *Manager) dropLocked(c *container) {
	if c.wd >= 0 && m.ino != nil && !m.closed {
		unix.InotifyRmWatch(m.inoFD, uint32(c.wd))
		delete(m.wds, c.wd)
	}
	c.mu.Lock()
	m.members.dropLocked(c)
	c.mu.Unlock()
	c.markClosed()
	delete(m.svcs, c.service)
	_ = unix.Rmdir(c.dir)
}

// Remove deletes the service's container, which must be empty with no op
// running (ErrBusy otherwise), and its module's directory if that is
// empty then. A container that does not exist is removed already.
func (m *Manager) Remove(service string) error {
	p, err := m.Path(service)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.svcs[service]
	if c != nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.ops > 0 {
			return fmt.Errorf("%w: %s has %d ops running", ErrBusy, service, c.ops)
		}
	}
	if err := unix.Rmdir(p); err != nil && !errors.Is(err, unix.ENOENT) {
		if errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("%w: %s is not empty", ErrBusy, p)
		}
		return fmt.Errorf("cgroup: remove %s: %w", p, err)
	}
	if c != nil {
		if c.wd >= 0 && m.ino != nil && !m.closed {
			unix.InotifyRmWatch(m.inoFD, uint32(c.wd))
			delete(m.wds, c.wd)
		}
		m.members.dropLocked(c)
		c.markClosed()
		delete(m.svcs, service)
	}
	// The module's directory goes when its last service did.
	mod := filepath.Dir(p)
	if err := unix.Rmdir(mod); err == nil {
		delete(m.modules, filepath.Base(mod))
	}
	return nil
}

// Close stops the watcher and closes the descriptors. The containers stay,
// with whatever runs in them: the next svcrun adopts them.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	var err error
	if m.ino != nil {
		err = m.ino.Close()
	}
	if w := m.members; w != nil {
		w.mu.Lock()
		w.closed = true
		w.mu.Unlock()
		for _, c := range m.svcs {
			m.forgetMembers(c)
		}
	}
	m.mu.Unlock()
	if m.done != nil {
		<-m.done
	}
	if m.members != nil {
		m.members.close()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.svcs {
		c.mu.Lock()
		c.markClosed()
		c.mu.Unlock()
	}
	if m.lockFD >= 0 {
		unix.Close(m.lockFD)
		m.lockFD = -1
	}
	return err
}
