package clockwork

import (
	"sync"
	"time"

	"github.com/benbjohnson/clock"
)

// Pauses notices when the whole process stopped running: SIGSTOP, a VM
// paused, a host suspended, a debugger, a stalled page-in. The monotonic
// clock goes on meanwhile, so every deadline that fell due during the pause
// fires at once when the process runs again, before the requests and the
// op completions that waited in the kernel meanwhile are taken; a pause of
// svcrun would be charged to a lease holder or to a module. Pauses lets the
// shell tell the engine (Take, through Real.Next) and stretch its own
// deadlines (AfterFunc) by the time the process did not run.
//
// A beat runs every Every; the process is seen running at every beat and
// at every Take, Total or AfterFunc. A gap between two sightings longer
// than Every+Late is a pause, counted whole: the process may have stopped
// right after it was last seen, so the length is an over-estimate by at
// most Every, which errs on the side of whoever holds a deadline. Shorter
// gaps (scheduling delays of a loaded machine) are not pauses.
//
// A nil *Pauses notices nothing: its AfterFunc is the clock's.
type Pauses struct {
	clock clock.Clock
	now   func() time.Time // clock.Now; a test's own
	every time.Duration
	late  time.Duration

	mu     sync.Mutex
	seen   time.Time     // when the process was last seen running
	total  time.Duration // every pause so far
	untold time.Duration // pauses not yet taken by Take
	beat   *clock.Timer
	wake   func() // called when a pause is noticed; must not block
}

// Default beat and tolerance of svcrun's Pauses: one wake-up a second,
// and a pause is at least three seconds long.
const (
	PauseBeat = time.Second
	PauseLate = 2 * time.Second
)

// NewPauses returns a Pauses on c that notices nothing until Start.
func NewPauses(c clock.Clock, every, late time.Duration) *Pauses {
	return &Pauses{clock: c, now: c.Now, every: every, late: late}
}

// Start begins the beats: from now on a gap is a pause.
func (p *Pauses) Start() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.beat != nil {
		return
	}
	p.seen = p.now()
	p.beat = p.clock.AfterFunc(p.every, p.onBeat)
}

// Stop ends the beats.
func (p *Pauses) Stop() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.beat != nil {
		p.beat.Stop()
	}
}

func (p *Pauses) onBeat() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sightLocked()
	p.beat.Reset(p.every)
}

// sightLocked records that the process runs now, counting the gap since
// the last sighting if it was a pause.
func (p *Pauses) sightLocked() {
	if p.beat == nil {
		return // not started: gaps between sightings are not pauses
	}
	now := p.now()
	if gap := now.Sub(p.seen); gap > p.every+p.late {
		p.total += gap
		p.untold += gap
		if p.wake != nil {
			p.wake()
		}
	}
	p.seen = now
}

// onNotice sets what is called, at once, when a pause is noticed.
func (p *Pauses) onNotice(wake func()) {
	p.mu.Lock()
	p.wake = wake
	p.mu.Unlock()
}

// Take returns the length of the pauses noticed since the last Take (0 if
// none).
func (p *Pauses) Take() time.Duration {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sightLocked()
	d := p.untold
	p.untold = 0
	return d
}

// Total returns the length of every pause noticed so far.
func (p *Pauses) Total() time.Duration {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sightLocked()
	return p.total
}

// Stopper is a timer that can be stopped: Stop reports whether it stopped
// it before f ran.
type Stopper interface{ Stop() bool }

// AfterFunc runs f once d of the process's own running time has passed:
// when the clock's timer fires after a pause, it is set again for the
// pause's length instead of running f. The deadline of an op or of a grace
// thus never ends during a pause, nor at the instant the process runs
// again, when what happened meanwhile (the op's exit) is still to be
// taken.
func (p *Pauses) AfterFunc(d time.Duration, f func()) Stopper {
	if p == nil {
		return time.AfterFunc(d, f)
	}
	t := &pauseTimer{p: p, f: f, base: p.Total()}
	t.mu.Lock()
	t.t = p.clock.AfterFunc(d, t.fire)
	t.mu.Unlock()
	return t
}

type pauseTimer struct {
	p    *Pauses
	f    func()
	mu   sync.Mutex
	t    *clock.Timer
	base time.Duration // p.Total() when last (re)armed
	done bool
}

func (t *pauseTimer) fire() {
	total := t.p.Total()
	t.mu.Lock()
	if t.done {
		t.mu.Unlock()
		return
	}
	if paused := total - t.base; paused > 0 {
		t.base = total
		t.t.Reset(paused)
		t.mu.Unlock()
		return
	}
	t.done = true
	t.mu.Unlock()
	t.f()
}

func (t *pauseTimer) Stop() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return false
	}
	t.done = true
	t.t.Stop()
	return true
}
