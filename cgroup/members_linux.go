package cgroup

import (
	"fmt"
	"os"
	"slices"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/oarbank/svcrun/internal/procfs"
)

// maxMembers is how many processes of an armed container are watched: the
// oldest, which is the daemon's master, and the next one, for a master
// started under a wrapper that stays (the wrapper is then the oldest).
// More would only add descriptors that every op's fork copies.
const maxMembers = 2

// members watches the longest-lived processes of armed containers by their
// pidfds in one epoll descriptor, which Go's poller waits on: nothing runs
// while no watched process exits. Its descriptors are the only ones the
// Manager holds per container: at most maxMembers for each container that
// holds a daemon of several processes, none for a single-process daemon.
// Every op's fork copies them (see container), which is why they are few.
type members struct {
	ep   *os.File // epoll, non-blocking, registered with Go's poller
	epFD int
	done chan struct{}

	mu     sync.Mutex // taken after a container's mu, never before
	byID   map[int32]*container
	next   int32
	closed bool // the Manager is closing: no new pidfd
}

// member is one watched process. start (its start time since boot) tells
// it from a later process that reuses its pid.
type member struct {
	id    int32
	pid   int
	start uint64
	fd    int
}

// newMembers makes the epoll descriptor of the pidfds. Where pidfds are
// missing (Support.MemberExits) there is none: containers' emptying is
// then the only death event and status polls see the rest.
func newMembers() (*members, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll for pidfds: %w", err)
	}
	if err := unix.SetNonblock(ep, true); err != nil {
		unix.Close(ep)
		return nil, fmt.Errorf("epoll for pidfds: %w", err)
	}
	return &members{ep: os.NewFile(uintptr(ep), "pidfd-epoll"), epFD: ep, byID: map[int32]*container{}, done: make(chan struct{})}, nil
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

// open watches pid; false when it is gone already or another process
// now (its exit is then the container's business, seen at the next pick).
func (w *members) open(c *container, pid int, start uint64) (member, bool) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return member{}, false
	}
	// The pidfd is of the process read from cgroup.procs only if the pid
	// still has its start time now that the pidfd holds it.
	if now, ok := procfs.StartTicks(pid); !ok || now != start {
		unix.Close(fd)
		return member{}, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		unix.Close(fd)
		return member{}, false
	}
	w.next++
	mb := member{id: w.next, pid: pid, start: start, fd: fd}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: mb.id}
	if err := unix.EpollCtl(w.epFD, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		unix.Close(fd)
		return member{}, false
	}
	w.byID[mb.id] = c
	return mb, true
}

// closeLocked stops watching mb. c.mu is held.
func (w *members) closeLocked(mb member) {
	w.mu.Lock()
	delete(w.byID, mb.id)
	w.mu.Unlock()
	unix.EpollCtl(w.epFD, unix.EPOLL_CTL_DEL, mb.fd, nil)
	unix.Close(mb.fd)
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

// watchMembers waits on the pidfds until Close and hands each exit to
// memberExited.
func (m *Manager) watchMembers() {
	w := m.members
	defer close(w.done)
	rc, err := w.ep.SyscallConn()
	if err != nil {
		return
	}
	events := make([]unix.EpollEvent, 64)
	for {
		var ids []int32
		err := rc.Read(func(fd uintptr) bool {
			n, err := unix.EpollWait(int(fd), events, 0)
			if err != nil || n == 0 {
				return err != nil && err != unix.EINTR && err != unix.EAGAIN
			}
			for _, ev := range events[:n] {
				ids = append(ids, ev.Fd)
			}
			return true
		})
		if err != nil {
			return // the only error of a raw read: the descriptor closed
		}
		for _, id := range ids {
			m.memberExited(id)
		}
	}
}

// memberExited handles the exit of the watched process id. While the
// container stays populated the service's daemon lost a process that
// outlived its ops and not all of it died: the master of workers that live
// on. Outside ops that is told at once (OnMemberExited) and the members
// re-picked; during an op it is told when the op ends, since the op (a
// stop, a restart) may be what ended it. An exit that empties the
// container is the emptied event's.
func (m *Manager) memberExited(id int32) {
	w := m.members
	w.mu.Lock()
	c := w.byID[id]
	w.mu.Unlock()
	if c == nil {
		return // closed since the event was read
	}
	c.mu.Lock()
	i := slices.IndexFunc(c.members, func(mb member) bool { return mb.id == id })
	if i < 0 {
		c.mu.Unlock()
		return
	}
	w.closeLocked(c.members[i])
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
	m.emitMemberExited(c.service)
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
// memberExited). It is called from the watcher goroutine or from OpEnd and
// must not block.
func (m *Manager) SetOnMemberExited(f func(service string)) {
	if f == nil {
		m.onMemberExited.Store(nil)
		return
	}
	m.onMemberExited.Store(&f)
}

func (m *Manager) emitMemberExited(service string) {
	if f := m.onMemberExited.Load(); f != nil {
		(*f)(service)
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
