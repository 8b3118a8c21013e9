package cgroup

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/oarbank/svcrun/internal/procfs"
)

// maxMembers is how many processes of an armed container are watched: the
// oldest, which is the daemon's master, and the next one, for a master
// started under a wrapper that stays (the wrapper is then the oldest).
// More would only add descriptors and statuses for the deaths of workers.
const maxMembers = 2

// members watches the longest-lived processes of armed containers by their
// pidfds, which live in a descriptor table of their own: one locked OS
// thread unshared its table (unshare(CLONE_FILES)) and does every
// pidfd_open, close and epoll_wait there. Every op's fork copies the table
// of the thread that forks, svcrun's, which holds none of them: pidfds in
// svcrun's table made each fork and exec dearer (bench/README.md#pidfds;
// docs/decisions.md). The thread blocks in epoll_wait: nothing runs while
// no watched process exits. It holds at most maxMembers pidfds for each
// container that holds a daemon of several processes, none for a
// single-process daemon.
type members struct {
	// wake is an eventfd in svcrun's table, whose copy the thread's
	// table keeps: a request or Close wakes the thread through it.
	wake  int
	exits chan struct{} // signalled when exited holds exits to tell
	done  chan struct{} // closed when the thread and the teller are gone

	mu     sync.Mutex // taken after a container's mu, never before
	byID   map[int32]*container
	next   int32
	closed bool // the Manager is closing: no new pidfd
	// reqs are for the thread; exited are the exits it saw, for
	// watchMembers to tell.
	reqs   []memberReq
	exited []memberExit
	// pids are the watched processes' pids, each with whether the
	// reaper told its death by a signal (NoteChildExit) before it reaped
	// it: the thread's look at the zombie may come after the reap.
	pids map[int]bool
}

// member is one watched process. start (its start time since boot) tells
// it from a later process that reuses its pid. Its pidfd is the thread's.
type member struct {
	id    int32
	pid   int
	start uint64
}

// memberReq asks the thread to watch pid as id (reply gets whether it
// could), or, with a nil reply, to stop watching id.
type memberReq struct {
	id    int32
	pid   int
	reply chan bool
}

// memberExit is the exit of a watched process: killed says it was
// svcrun's child and died by a signal (CLD_KILLED, CLD_DUMPED).
type memberExit struct {
	id     int32
	killed bool
}

// waitid's si_code of a child's end (asm-generic/siginfo.h).
const (
	cldKilled = 2
	cldDumped = 3
)

// newMembers starts the thread of the pidfds. Where pidfds are missing
// (Support.MemberExits) there is none: containers' emptying is then the
// only death event and status polls see the rest.
func newMembers() (*members, error) {
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("eventfd for the pidfds' thread: %w", err)
	}
	w := &members{wake: wake, exits: make(chan struct{}, 1), done: make(chan struct{}),
		byID: map[int32]*container{}, pids: map[int]bool{}}
	started := make(chan error, 1)
	go w.thread(started)
	if err := <-started; err != nil {
		unix.Close(wake)
		return nil, err
	}
	return w, nil
}

// thread runs the pidfds' goroutine (run) on a thread other than the
// process's first: /proc/self/fd, which the sandbox reads, lists the first
// thread's table, which must stay svcrun's. A goroutine started while
// this one holds the first thread cannot land on it.
func (w *members) thread(started chan<- error) {
	runtime.LockOSThread()
	if unix.Gettid() != unix.Getpid() {
		w.run(started)
		return // locked: the runtime ends the thread
	}
	locked := make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the runtime ends the thread
		close(locked)
		w.run(started)
	}()
	<-locked
	runtime.UnlockOSThread()
}

// run is the goroutine of the pidfds, locked to its OS thread for good:
// the thread, its descriptor table and every pidfd in it end with the
// goroutine, at Close. Only raw system calls touch its pidfds and epoll
// (an os.File would register them with Go's poller, whose epoll knows
// descriptors by their number in svcrun's table).
func (w *members) run(started chan<- error) {
	if err := unix.Unshare(unix.CLONE_FILES); err != nil {
		started <- fmt.Errorf("unshare(CLONE_FILES) for the pidfds' thread: %w", err)
		return
	}
	if err := closeCopies(w.wake); err != nil {
		started <- fmt.Errorf("the pidfds' thread: %w", err)
		return
	}
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err == nil {
		// id 0 is the wake eventfd; members' ids start at 1.
		err = unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, w.wake, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: 0})
	}
	if err != nil {
		started <- fmt.Errorf("epoll for pidfds: %w", err)
		return
	}
	started <- nil
	fds := map[int32]int{} // the thread's own: id -> pidfd
	events := make([]unix.EpollEvent, 64)
	var buf [8]byte
	for {
		n, err := unix.EpollWait(ep, events, -1)
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			break // not seen: epoll_wait fails only on a bad descriptor
		}
		var exited []memberExit
		wakeUp := false
		for _, ev := range events[:n] {
			if ev.Fd == 0 {
				wakeUp = true
				continue
			}
			id := ev.Fd
			fd, ok := fds[id]
			if !ok {
				continue
			}
			exited = append(exited, memberExit{id: id, killed: killedChild(fd)})
			unix.Close(fd) // also leaves the epoll set
			delete(fds, id)
		}
		if len(exited) > 0 {
			w.mu.Lock()
			w.exited = append(w.exited, exited...)
			w.mu.Unlock()
			select {
			case w.exits <- struct{}{}:
			default:
			}
		}
		if !wakeUp {
			continue
		}
		unix.Read(w.wake, buf[:])
		w.mu.Lock()
		reqs, closed := w.reqs, w.closed
		w.reqs = nil
		w.mu.Unlock()
		for _, r := range reqs {
			if r.reply == nil {
				if fd, ok := fds[r.id]; ok {
					unix.Close(fd)
					delete(fds, r.id)
				}
				continue
			}
			fd, err := unix.PidfdOpen(r.pid, 0)
			if err == nil {
				err = unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: r.id})
				if err != nil {
					unix.Close(fd)
				}
			}
			if err == nil {
				fds[r.id] = fd
			}
			r.reply <- err == nil
		}
		if closed {
			break
		}
	}
	close(w.exits)
}

// closeCopies closes, in the thread's own table, the copies of svcrun's
// descriptors that unshare made: a copy holds what it refers to open (the
// write end of an op's pipe, whose reader would never see its end; the
// base's flock past Close). Kept: stdin, stdout, stderr, keep, and every
// epoll and eventfd, which are Go's poller's: the runtime may poll it from
// this thread too (a garbage collection that restarts the world here),
// by the descriptor numbers of svcrun's table.
func closeCopies(keep int) error {
	const dir = "/proc/thread-self/fd"
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("list the copied descriptors: %w", err)
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 || fd == keep {
			continue
		}
		link, err := os.Readlink(dir + "/" + e.Name())
		if err != nil || link == "anon_inode:[eventpoll]" || link == "anon_inode:[eventfd]" {
			continue // gone (ReadDir's own), or the poller's
		}
		unix.Close(fd)
	}
	return nil
}

// killedChild says the process of the pidfd fd, which exited, was svcrun's
// child and died by a signal: waitid peeks at the zombie without reaping
// it, which the reaper does. false when it is not our child, or when the
// reaper reaped it already (NoteChildExit then told).
func killedChild(fd int) bool {
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PIDFD, fd, &info, unix.WEXITED|unix.WNOWAIT|unix.WNOHANG, nil); err != nil {
		return false
	}
	return info.Code == cldKilled || info.Code == cldDumped
}

// wakeThread hands the thread the requests queued; w.mu is held.
func (w *members) wakeThread() {
	var one [8]byte // the eventfd's counter: a native-endian uint64
	binary.NativeEndian.PutUint64(one[:], 1)
	unix.Write(w.wake, one[:])
}

// pickLocked watches the oldest processes of c, up to maxMembers and all
// but the youngest, keeping those already watched. It is called only while none of the service's
// ops runs, so an op's processes are never members: whatever is in the
// container then outlived its op and is the daemon's. c.mu is held.
func (w *members) pickLocked(c *container) {
	if w == nil {
		return
	}
	pids, err := c.procs()
	if err != nil {
		w.dropLocked(c)
		return
	}
	type proc struct {
		pid   int
		start uint64
	}
	procs := make([]proc, 0, len(pids))
	for _, pid := range pids {
		if start, ok := procfs.StartTicks(pid); ok {
			procs = append(procs, proc{pid, start})
		}
	}
	slices.SortFunc(procs, func(a, b proc) int {
		if a.start != b.start {
			return cmpUint(a.start, b.start)
		}
		return a.pid - b.pid
	})
	// The last process's death empties the container, which is the
	// emptied event's: a single-process daemon holds no pidfd.
	procs = procs[:max(0, min(len(procs)-1, maxMembers))]
	keep := c.members[:0]
	for _, mb := range c.members {
		if slices.Contains(procs, proc{mb.pid, mb.start}) {
			keep = append(keep, mb)
		} else {
			w.closeLocked(mb)
		}
	}
	c.members = keep
	for _, p := range procs {
		if slices.ContainsFunc(c.members, func(mb member) bool { return mb.pid == p.pid && mb.start == p.start }) {
			continue
		}
		if mb, ok := w.open(c, p.pid, p.start); ok {
			c.members = append(c.members, mb)
		}
	}
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// open watches pid for c; false when it is gone already or another
// process now (its exit is then the container's business, seen at the
// next pick). c.mu is held: an exit the thread sees before open returns
// waits for it, and then finds the member in c.members.
func (w *members) open(c *container, pid int, start uint64) (member, bool) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return member{}, false
	}
	w.next++
	mb := member{id: w.next, pid: pid, start: start}
	w.byID[mb.id] = c
	w.pids[pid] = false
	reply := make(chan bool, 1)
	w.reqs = append(w.reqs, memberReq{id: mb.id, pid: pid, reply: reply})
	w.wakeThread()
	w.mu.Unlock()
	ok := false
	select {
	case ok = <-reply:
	case <-w.done:
	}
	// The pidfd is of the process read from cgroup.procs only if the pid
	// still has its start time now that the pidfd holds it.
	if ok {
		now, alive := procfs.StartTicks(pid)
		ok = alive && now == start
	}
	if !ok {
		w.closeLocked(mb)
		return member{}, false
	}
	return mb, true
}

// closeLocked stops watching mb. c.mu is held.
func (w *members) closeLocked(mb member) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.byID, mb.id)
	delete(w.pids, mb.pid)
	if !w.closed { // else the thread ends, and its pidfds with it
		w.reqs = append(w.reqs, memberReq{id: mb.id})
		w.wakeThread()
	}
}

// dropLocked stops watching every member of c (emptied, removed, or the
// Manager closed). c.mu is held.
func (w *members) dropLocked(c *container) {
	if w == nil {
		return
	}
	for _, mb := range c.members {
		w.closeLocked(mb)
	}
	c.members = nil
}

// close ends the thread, which closes every pidfd with its table, and
// waits for it and for watchMembers.
func (w *members) close() {
	w.mu.Lock()
	w.closed = true
	w.wakeThread()
	w.mu.Unlock()
	<-w.done
	unix.Close(w.wake)
}

// NoteChildExit is told by svcrun's reaper, before it reaps it, of each
// child of svcrun that ended and whether a signal killed it: a watched
// process that was svcrun's child (a daemon's master, inherited as its
// subreaper) then says so even when the reaper reaped it before the
// pidfds' thread could look.
func (m *Manager) NoteChildExit(pid int, killed bool) {
	w := m.members
	if w == nil || !killed {
		return
	}
	w.mu.Lock()
	if _, ok := w.pids[pid]; ok {
		w.pids[pid] = true
	}
	w.mu.Unlock()
}

// watchMembers tells each exit the thread saw, until Close.
func (m *Manager) watchMembers() {
	w := m.members
	defer close(w.done)
	for range w.exits {
		w.mu.Lock()
		exited := w.exited
		w.exited = nil
		w.mu.Unlock()
		for _, ex := range exited {
			m.memberExited(ex)
		}
	}
}

// memberExited handles the exit of a watched process. While the container
// stays populated the service's daemon lost a process that outlived its
// ops and not all of it died: the master of workers that live on. Outside
// ops that is told at once (OnMemberExited), with whether the process was
// svcrun's child killed by a signal, and the members re-picked; during an
// op it is told when the op ends, since the op (a stop, a restart) may be
// what ended it. An exit that empties the container is the emptied
// event's.
func (m *Manager) memberExited(ex memberExit) {
	w := m.members
	w.mu.Lock()
	c := w.byID[ex.id]
	w.mu.Unlock()
	if c == nil {
		return // closed since the thread saw the exit
	}
	c.mu.Lock()
	i := slices.IndexFunc(c.members, func(mb member) bool { return mb.id == ex.id })
	if i < 0 {
		c.mu.Unlock()
		return
	}
	mb := c.members[i]
	w.mu.Lock()
	killed := ex.killed || w.pids[mb.pid]
	w.mu.Unlock()
	w.closeLocked(mb)
	c.members = slices.Delete(c.members, i, i+1)
	post := c.refreshLocked()
	tell := false
	switch {
	case !c.populated || !c.armed:
		w.dropLocked(c)
	case c.ops > 0:
		c.memberGone = true
	default:
		tell = true
	}
	c.mu.Unlock()
	if post {
		m.emit(c.service)
	}
	if !tell {
		return
	}
	m.emitMemberExited(c.service, killed)
	// Re-picked after the event, which is what waits. An op begun
	// meanwhile leaves it to its OpEnd, which picks while members are
	// missing.
	c.mu.Lock()
	if c.populated && c.armed && c.ops == 0 {
		w.pickLocked(c)
	}
	c.mu.Unlock()
}

// SetOnMemberExited sets the function told about each service whose
// container lost a watched process while others live on in it (see
// memberExited); killed says that process was svcrun's child and a signal
// killed it. It is called from the watcher goroutine or from OpEnd and
// must not block.
func (m *Manager) SetOnMemberExited(f func(service string, killed bool)) {
	if f == nil {
		m.onMemberExited.Store(nil)
		return
	}
	m.onMemberExited.Store(&f)
}

func (m *Manager) emitMemberExited(service string, killed bool) {
	if f := m.onMemberExited.Load(); f != nil {
		(*f)(service, killed)
	}
}

// Members lists the pids of the service's watched processes, for status
// and tests.
func (m *Manager) Members(service string) []int {
	c := m.lookup(service)
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var pids []int
	for _, mb := range c.members {
		pids = append(pids, mb.pid)
	}
	return pids
}
