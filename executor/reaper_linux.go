package executor

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/oarbank/svcrun/internal/procfs"
)

// The reaper. A child subreaper (prctl PR_SET_CHILD_SUBREAPER) inherits the
// orphans of its descendants: the daemon a start op forks and abandons
// becomes our child, and our zombie when it dies. The reaper waits for those
// and only those.
//
// It is one goroutine blocked in waitid(P_ALL, WEXITED|WNOWAIT), which
// returns a zombie child without reaping it; under Main, on the main
// thread and for that thread's children only (below). No signal is involved: a
// SIGCHLD handler interrupts the thread of the op that just ended and wakes
// two goroutines, a cost the op's bench row would show
// (bench/README.md#op).
//
// The zombie is reaped only if it is not in the in-flight set of the
// children Spawn and StartCmd wait for themselves. A child enters that set
// under spawnMu, read-locked by every spawn from before the fork until the
// child is in the set; the reaper write-locks spawnMu to check the set and
// reap, so it never sees a child of ours that is not yet in the set. When
// the zombie is in flight, the reaper waits for its owner to take it (the
// owner is about to: the same exit woke it), since waitid shows one zombie
// at a time.
//
// With no child at all waitid fails at once; the reaper then parks until an
// owner, having reaped its child, finds that children are left (orphans, or
// other ops). Waking it at every spawn instead would be a hand-off between
// threads at every op (bench/README.md#op). So an
// orphan that dies while its op's parent is still running waits, as a
// zombie, for the end of the next op.
var (
	spawnMu  sync.RWMutex
	flightMu sync.Mutex
	inflight = map[int]struct{}{}
	// untracks is closed, and replaced, whenever a child leaves the
	// in-flight set: ReapOrphans waits on it for an owner.
	untracks = make(chan struct{})

	reaperOnce sync.Once
	// reaperWakes counts the reaper's returns from waitid (tests).
	reaperWakes atomic.Int64
	// parked says the reaper waits on wake because it found no child.
	parked atomic.Bool
	wake   = make(chan struct{}, 1)

	// orphanExits are told the process group of each orphan reaped
	// (subscribeOrphanExits), orphanDeaths each orphan's pid and whether
	// a signal killed it, before it is reaped (subscribeOrphanDeaths).
	exitMu    sync.Mutex
	exitSubs  = map[int]func(pgid int){}
	deathSubs = map[int]func(pid int, killed bool){}
	exitSubID int
)

// subscribeOrphanDeaths calls fn with the pid of every orphan the reaper
// is about to reap and whether a signal killed it (CLD_KILLED,
// CLD_DUMPED), until cancel is called: the container watch's word that a
// daemon's master, which svcrun inherits as subreaper, was killed, should
// the reap come before its own look. fn runs with spawnMu held and must
// not block.
func subscribeOrphanDeaths(fn func(pid int, killed bool)) (cancel func()) {
	exitMu.Lock()
	defer exitMu.Unlock()
	exitSubID++
	id := exitSubID
	deathSubs[id] = fn
	return func() {
		exitMu.Lock()
		delete(deathSubs, id)
		exitMu.Unlock()
	}
}

// notifyOrphanDeath tells the zombie pid's end to subscribeOrphanDeaths.
func notifyOrphanDeath(pid int) {
	exitMu.Lock()
	defer exitMu.Unlock()
	if len(deathSubs) == 0 {
		return
	}
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT|unix.WNOHANG, nil); err != nil {
		return
	}
	const cldKilled, cldDumped = 2, 3 // asm-generic/siginfo.h
	killed := info.Code == cldKilled || info.Code == cldDumped
	for _, fn := range deathSubs {
		fn(pid, killed)
	}
}

// subscribeOrphanExits calls fn with the process group of every orphan the
// reaper reaps (a daemon an op left, dead), until cancel is called: the
// crash events of the process-group fallback. fn runs on the reaper's
// goroutine and must not block.
func subscribeOrphanExits(fn func(pgid int)) (cancel func()) {
	exitMu.Lock()
	defer exitMu.Unlock()
	exitSubID++
	id := exitSubID
	exitSubs[id] = fn
	return func() {
		exitMu.Lock()
		delete(exitSubs, id)
		exitMu.Unlock()
	}
}

func notifyOrphanExits(pgids []int) {
	if len(pgids) == 0 {
		return
	}
	exitMu.Lock()
	defer exitMu.Unlock()
	for _, fn := range exitSubs {
		for _, g := range pgids {
			fn(g)
		}
	}
}

// reapOrphan reaps the zombie pid and returns its process group (0 when
// /proc did not say).
func reapOrphan(pid int) (pgid int, reaped bool) {
	_, pgid, _, _ = procStatGroup(pid) // a zombie keeps its stat
	notifyOrphanDeath(pid)
	return pgid, reap(pid)
}

// startTracked starts a process that the reaper leaves alone until untrack is
// called, after its Wait returned.
func startTracked(path string, argv []string, attr *os.ProcAttr) (*os.Process, func(), error) {
	spawnMu.RLock()
	defer spawnMu.RUnlock()
	p, err := os.StartProcess(path, argv, attr)
	if err != nil {
		return nil, nil, err
	}
	return p, track(p.Pid), nil
}

// forkTracked is startTracked for syscall.ForkExec.
func forkTracked(path string, argv []string, attr *syscall.ProcAttr) (int, func(), error) {
	spawnMu.RLock()
	defer spawnMu.RUnlock()
	pid, err := syscall.ForkExec(path, argv, attr)
	if err != nil {
		return 0, nil, err
	}
	return pid, track(pid), nil
}

// StartCmd starts cmd so that the reaper never takes its exit status. In a
// process that called BecomeSubreaper every child that is not an op must be
// started this way; call done after cmd.Wait returned.
func StartCmd(cmd *exec.Cmd) (done func(), err error) {
	spawnMu.RLock()
	defer spawnMu.RUnlock()
	if err := cmd.Start(); err != nil {
		return func() {}, err
	}
	return track(cmd.Process.Pid), nil
}

// RunCmd runs cmd to its end, started as StartCmd starts it.
func RunCmd(cmd *exec.Cmd) error {
	done, err := StartCmd(cmd)
	if err == nil {
		err = cmd.Wait()
	}
	done()
	return err
}

// track adds pid to the in-flight set; the caller holds spawnMu.
func track(pid int) func() {
	flightMu.Lock()
	inflight[pid] = struct{}{}
	flightMu.Unlock()
	return func() {
		flightMu.Lock()
		delete(inflight, pid)
		close(untracks)
		untracks = make(chan struct{})
		flightMu.Unlock()
		if parked.Load() && hasChildren() && parked.CompareAndSwap(true, false) {
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	}
}

// BecomeSubreaper makes this process the child subreaper of its descendants
// and starts the reaper, which waits for the zombies of orphans re-parented
// to us, and for no child that Spawn or StartCmd started. Call it once at
// startup, before starting ops; later calls only repeat the prctl. From then
// on every child of the process must be started through Spawn or StartCmd.
func BecomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("executor: prctl(PR_SET_CHILD_SUBREAPER): %w", err)
	}
	reaperOnce.Do(func() {
		if mainOffered.Load() {
			mainThread <- func() { reaper(true) }
		} else {
			go reaper(false)
		}
	})
	return nil
}

// The main thread, for the reaper. The kernel re-parents an orphan to the
// subreaper's first live thread, its main thread, and wakes a waitid of
// any of its threads at the exit of any child, each op's included; the
// waitid then looks at every child again: the daemons, one per running
// service, twice an op (13% of svcrun's CPU at 1,000 services idle,
// bench/HISTORY.md, the idle figure on a PVM guest). Waiting on the main
// thread with __WNOTHREAD, the reaper sees, and is woken by, that
// thread's children only: the orphans. Ops are forked on other threads,
// since the main thread is the reaper's for good.
var (
	mainOffered atomic.Bool
	mainThread  = make(chan func())
)

// Main runs prog on a new goroutine and exits the process with its code.
// The caller must be the main goroutine locked to the main thread
// (runtime.LockOSThread in an init function of package main), which Main
// gives to the reaper should BecomeSubreaper be called; elsewhere it just
// runs prog, and the reaper waits on any thread, as without Main.
func Main(prog func() int) {
	if unix.Gettid() != unix.Getpid() {
		os.Exit(prog())
	}
	mainOffered.Store(true)
	done := make(chan int, 1)
	go func() { done <- prog() }()
	select {
	case code := <-done:
		os.Exit(code)
	case run := <-mainThread:
		go func() { os.Exit(<-done) }()
		run()
	}
}

// Bounds of the reaper's wait for the owner of an in-flight zombie; past
// them it reaps the orphans behind that zombie by a scan of /proc.
const (
	ownerWaitMin = 50 * time.Millisecond
	ownerWaitMax = 5 * time.Second
)

// reaper waits for the zombies of orphans and reaps them; onMain, it runs
// on the main thread and waits for that thread's children only.
func reaper(onMain bool) {
	ownerWait := ownerWaitMin
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	flags := unix.WEXITED | unix.WNOWAIT
	if onMain {
		flags |= unix.WNOTHREAD
	}
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_ALL, 0, &info, flags, nil)
		reaperWakes.Add(1)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.ECHILD:
			// No child (on the main thread: no orphan). Park, then look
			// again: an owner that checked before parked was set did
			// not wake us.
			parked.Store(true)
			if hasChildrenFlags(flags) {
				parked.Store(false)
				continue
			}
			<-wake
			continue
		case err != nil:
			// Not expected from waitid; do not spin.
			time.Sleep(time.Second)
			continue
		}
		pid := siginfoPid(&info)
		if isInflight(pid) {
			// Its owner takes it; no lock needed to leave it alone.
			if awaitUntrack(pid, ownerWait, timer) {
				ownerWait = ownerWaitMin
				continue
			}
			// A slow owner (a StartCmd caller that has not called
			// Wait yet): reap what it hides, then wait longer for it.
			reapScan()
			ownerWait = min(2*ownerWait, ownerWaitMax)
			continue
		}
		spawnMu.Lock()
		pgid, reaped := 0, false
		if !isInflight(pid) { // it may have been a spawn not yet in the set
			pgid, reaped = reapOrphan(pid)
		}
		spawnMu.Unlock()
		if reaped && pgid > 0 {
			notifyOrphanExits([]int{pgid})
		}
	}
}

// hasChildren reports whether this process has any child.
func hasChildren() bool { return hasChildrenFlags(0) }

// hasChildrenFlags is hasChildren with the reaper's flags: with
// __WNOTHREAD, whether the calling thread has any child.
func hasChildrenFlags(flags int) bool {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_ALL, 0, &info, flags|unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return err != unix.ECHILD
		}
	}
}

// ReapOrphans reaps, at once, every zombie child of this process that no Spawn
// or StartCmd is waiting for, and returns how many. The reaper does this by
// itself; calling it is harmless. It runs before every start, beside the
// other ops and one live daemon per running service: spawnMu is taken
// only to reap a zombie, never to look, and a zombie in flight (which
// hides those behind it from waitid) is first left to its owner, which is
// reaping it, for up to ownerWaitMin; only then are the children scanned.
// Looking under spawnMu held up every other op's spawn, and scanning at
// once made the boot cost O(n^2) (bench/HISTORY.md, svcrun beside
// supervisord, s6 and runit: the reaper's scans).
func ReapOrphans() int {
	reaped := 0
	var waited time.Duration
	for {
		pid := peekZombie()
		if pid == 0 {
			return reaped
		}
		if owned, ok := inflightUntrack(pid); ok {
			if waited >= ownerWaitMin {
				return reaped + reapScan()
			}
			t0 := time.Now()
			select {
			case <-owned:
			case <-time.After(ownerWaitMin - waited):
			}
			waited += time.Since(t0)
			continue
		}
		spawnMu.Lock()
		pgid, ok := 0, false
		// A spawn not yet in the set when we looked is in it now.
		if !isInflight(pid) {
			pgid, ok = reapOrphan(pid)
		}
		spawnMu.Unlock()
		if !ok {
			// In flight after all, or gone meanwhile: the scan finds
			// what is left.
			return reaped + reapScan()
		}
		if pgid > 0 {
			notifyOrphanExits([]int{pgid})
		}
		reaped++
	}
}

// inflightUntrack says whether pid is in flight and returns, then, the
// channel closed at the next untrack.
func inflightUntrack(pid int) (<-chan struct{}, bool) {
	flightMu.Lock()
	defer flightMu.Unlock()
	_, ok := inflight[pid]
	return untracks, ok
}

// awaitUntrack waits until pid leaves the in-flight set, at most d, with the
// reaper's stopped timer t.
func awaitUntrack(pid int, d time.Duration, t *time.Timer) bool {
	t.Reset(d)
	defer t.Stop()
	for {
		owned, ok := inflightUntrack(pid)
		if !ok {
			return true
		}
		select {
		case <-owned: // some child left the set: pid, or another
		case <-t.C:
			return false
		}
	}
}

// peekZombie returns a zombie child without reaping it, or 0.
func peekZombie() int {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0 // ECHILD: no children at all
		}
		return siginfoPid(&info)
	}
}

// reapScan reaps every zombie child not in flight, found in /proc. The
// children are mostly live daemons, one per running service: they are
// listed and each asked whether it exited (one waitid, no file) without
// spawnMu, which only a zombie takes, to be checked against the in-flight
// set and reaped. Reading the stat of every child under spawnMu made each
// start cost O(services) and stalled every spawn meanwhile (bench/HISTORY.md,
// svcrun beside supervisord, s6 and runit: the reaper's scans).
func reapScan() int {
	var pgids []int
	reaped := 0
	for _, pid := range children() {
		if !exited(pid) {
			continue
		}
		spawnMu.Lock()
		g, ok := 0, false
		if !isInflight(pid) {
			g, ok = reapOrphan(pid)
		}
		spawnMu.Unlock()
		if ok {
			reaped++
			if g > 0 {
				pgids = append(pgids, g)
			}
		}
	}
	notifyOrphanExits(pgids)
	return reaped
}

// exited reports whether the child pid is a zombie, without reaping it.
func exited(pid int) bool {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		if err == unix.EINTR {
			continue
		}
		return err == nil && siginfoPid(&info) == pid
	}
}

func isInflight(pid int) bool {
	flightMu.Lock()
	_, ok := inflight[pid]
	flightMu.Unlock()
	return ok
}

// reap waits for pid if it is a zombie.
func reap(pid int) bool {
	var ws unix.WaitStatus
	for {
		got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		if err == unix.EINTR {
			continue
		}
		return err == nil && got == pid
	}
}

// siginfoPid reads si_pid of a SIGCHLD siginfo (x/sys/unix exposes the
// union as raw bytes). The union follows si_signo, si_errno and si_code,
// aligned to a pointer; si_pid is its first field. waitid with WNOHANG
// leaves it zero when no child has changed state.
func siginfoPid(info *unix.Siginfo) int {
	const ptr = unsafe.Sizeof(uintptr(0))
	const off = (12 + ptr - 1) &^ (ptr - 1)
	return int(*(*int32)(unsafe.Add(unsafe.Pointer(info), off)))
}

// children lists this process's children: /proc/self/task/*/children
// (orphans are re-parented to one of our threads), or, where the kernel
// lacks that file, every /proc/<pid>/stat whose parent is us.
func children() []int {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil
	}
	var pids []int
	for _, t := range tasks {
		data, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if err != nil {
			return childrenByStat()
		}
		for _, f := range bytes.Fields(data) {
			if pid, err := strconv.Atoi(string(f)); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

func childrenByStat() []int {
	self := os.Getpid()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, _, ok := procStat(pid); ok && ppid == self {
			pids = append(pids, pid)
		}
	}
	return pids
}

// procStat returns the parent and the state of pid from /proc/<pid>/stat.
func procStat(pid int) (ppid int, state byte, ok bool) {
	ppid, _, state, ok = procStatGroup(pid)
	return ppid, state, ok
}

// procStatGroup returns the parent, the process group and the state of pid.
func procStatGroup(pid int) (ppid, pgrp int, state byte, ok bool) {
	f, ok := procfs.Fields(pid)
	if !ok {
		return 0, 0, 0, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgrp, err2 := strconv.Atoi(string(f[2]))
	return ppid, pgrp, f[0][0], err1 == nil && err2 == nil
}

// living drops the zombies (and the processes gone) from pids: a cgroup
// lists its zombies until their parent reaps them.
func living(pids []int) []int {
	var out []int
	for _, pid := range pids {
		if _, _, state, ok := procStatGroup(pid); ok && state != 'Z' && state != 'X' {
			out = append(out, pid)
		}
	}
	return out
}

// groupMembers scans /proc for the processes of the groups that are not
// zombies.
func groupMembers(groups []int) []int {
	if len(groups) == 0 {
		return nil
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, pg, state, ok := procStatGroup(pid); ok && slices.Contains(groups, pg) && state != 'Z' && state != 'X' {
			pids = append(pids, pid)
		}
	}
	return pids
}

// groupHasLiveMember scans /proc for a process of group pgid that is not a
// zombie. It runs only while an op that overran its timeout is being
// killed, and only when kill(2) still finds its group: zombies of the group
// waiting for a slow init must not hold the op for the whole grace.
func groupHasLiveMember(pgid int) bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, pg, state, ok := procStatGroup(pid); ok && pg == pgid && state != 'Z' && state != 'X' {
			return true
		}
	}
	return false
}
