package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/nodeconfig"
)

// The node's own signals reach the engine as its events: host memory
// pressure (Linux's pressure stall information) as MemoryPressure, a jump
// of the wall clock against the monotonic clock as Doctor. The loop reads
// both every SignalsEvery, from a timer event like any other: the file is
// small, and an event found is stepped at once. At the same tick it looks
// whether the state file and its log are still linked in the data dir
// (checkLinked: two stat calls, whatever the number of services).

// DefaultPressureFile is where Linux reports the memory pressure stall
// information (PSI; kernels from 4.20 with CONFIG_PSI, not booted psi=0).
const DefaultPressureFile = "/proc/pressure/memory"

// SignalsEvery is how often the loop reads the memory pressure and compares
// the clocks.
const SignalsEvery = 2 * time.Second

// ClockJump is the least difference between the wall clock's and the
// monotonic clock's progress since the last reading that counts as a jump:
// more than NTP's steps and slews, less than any sleep worth probing again
// for. Linux's monotonic clock stands still while the node is suspended,
// so a sleep shows as the wall clock jumping forward.
const ClockJump = 10 * time.Second

// pressureRepeat is how often the engine is told again while the pressure
// lasts: services that became idle since the last event are stopped then.
const pressureRepeat = time.Minute

// signalsTick is the loop's turn to read the node's signals.
type signalsTick struct{}

func (signalsTick) EventName() string { return "signals" }

// psi is what a pressure file says: the shares of the last 10 s, in
// percent, in which some task (some) and every non-idle task at once
// (full) waited for memory.
type psi struct{ some, full float64 }

// parsePSI reads a pressure file:
//
//	some avg10=0.00 avg60=0.00 avg300=0.00 total=0
//	full avg10=0.00 avg60=0.00 avg300=0.00 total=0
//
// The full line is missing on kernels before 5.13 for cpu, never for
// memory; it is 0 when missing.
func parsePSI(data []byte) (psi, error) {
	var p psi
	found := false
	for line := range bytes.Lines(data) {
		f := bytes.Fields(line)
		if len(f) == 0 {
			continue
		}
		var dst *float64
		switch string(f[0]) {
		case "some":
			dst, found = &p.some, true
		case "full":
			dst = &p.full
		default:
			return psi{}, fmt.Errorf("line %q: neither some nor full", bytes.TrimSpace(line))
		}
		ok := false
		for _, kv := range f[1:] {
			if v, isAvg := bytes.CutPrefix(kv, []byte("avg10=")); isAvg {
				n, err := strconv.ParseFloat(string(v), 64)
				if err != nil || n < 0 || n > 100 {
					return psi{}, fmt.Errorf("line %q: avg10 %q is not a percentage", bytes.TrimSpace(line), v)
				}
				*dst, ok = n, true
			}
		}
		if !ok {
			return psi{}, fmt.Errorf("line %q: no avg10", bytes.TrimSpace(line))
		}
	}
	if !found {
		return psi{}, errors.New("no some line")
	}
	return p, nil
}

// pressureWatch turns pressure readings into events, edge-triggered with
// hysteresis: the pressure begins when either share reaches its threshold
// and ends when both are below half of theirs; an event when it begins,
// and again every pressureRepeat while it lasts.
type pressureWatch struct {
	limits    nodeconfig.MemoryPressure
	on        bool
	lastEvent time.Time
}

// observe takes a reading; fire says the engine is to get MemoryPressure,
// began and ended that the pressure began or ended with it.
func (w *pressureWatch) observe(now time.Time, p psi) (fire, began, ended bool) {
	switch {
	case !w.on && (p.some >= w.limits.SomeAvg10 || p.full >= w.limits.FullAvg10):
		w.on, w.lastEvent = true, now
		return true, true, false
	case w.on && p.some < w.limits.SomeAvg10/2 && p.full < w.limits.FullAvg10/2:
		w.on = false
		return false, false, true
	case w.on && now.Sub(w.lastEvent) >= pressureRepeat:
		w.lastEvent = now
		return true, false, false
	}
	return false, false, false
}

// clockWatch compares the progress of the wall clock with that of the
// monotonic clock between two readings.
type clockWatch struct {
	wall     func() time.Time // the wall clock, without a monotonic reading
	lastWall time.Time
	lastMono time.Time
}

// check reads both clocks (mono is the scheduler's Now, whose Sub uses the
// monotonic reading) and returns how far the wall clock jumped since the
// last check, 0 when less than ClockJump.
func (c *clockWatch) check(mono time.Time) time.Duration {
	wall := c.wall()
	if c.lastWall.IsZero() {
		c.lastWall, c.lastMono = wall, mono
		return 0
	}
	jump := wall.Sub(c.lastWall) - mono.Sub(c.lastMono)
	c.lastWall, c.lastMono = wall, mono
	if jump.Abs() < ClockJump {
		return 0
	}
	return jump
}

// signals is the loop's state of the node's signals.
type signals struct {
	file     string // the pressure file; "" when not watched
	pressure pressureWatch
	failing  bool // the last read of the file failed (logged once)
	clock    clockWatch
}

// startSignals reads the signals a first time and sets the loop's timer
// for the next reading. On the loop, after the boot step.
func (a *Agent) startSignals() {
	s := &a.signals
	s.clock.wall = a.opts.WallClock
	if s.clock.wall == nil {
		s.clock.wall = func() time.Time { return a.opts.Clock.Now().Round(0) }
	}
	s.file = a.opts.PressureFile
	if s.file == "" {
		s.file = DefaultPressureFile
	}
	lim := a.cfg.MemoryPressure
	s.pressure.limits = lim
	switch _, err := os.Stat(s.file); {
	case !lim.Enabled:
		a.log.Info("host memory pressure is not watched: [memory_pressure] enabled = false")
		s.file = ""
	case errors.Is(err, fs.ErrNotExist):
		a.log.Info("host memory pressure is not watched: this kernel reports no pressure stall information", "file", s.file)
		s.file = ""
	default:
		a.log.Info("watching host memory pressure", "file", s.file, "some_avg10", lim.SomeAvg10,
			"full_avg10", lim.FullAvg10, "every", a.signalsEvery())
	}
	a.readSignals()
}

func (a *Agent) signalsEvery() time.Duration {
	if a.opts.SignalsEvery > 0 {
		return a.opts.SignalsEvery
	}
	return SignalsEvery
}

// readSignals reads the clocks and the pressure file, steps what they
// say, and sets the timer of the next reading. On the loop.
func (a *Agent) readSignals() {
	s := &a.signals
	now := a.sched.Now()
	defer a.sched.At(now.Add(a.signalsEvery()), signalsTick{})
	a.checkLinked()
	if jump := s.clock.check(now).Round(time.Second); jump != 0 {
		a.meters.mu.Lock()
		a.meters.clockJumps++
		a.meters.mu.Unlock()
		a.log.Warn("the wall clock jumped against the monotonic clock (the node slept, or the "+
			"clock was set): the probes run again", "jump", jump)
		if a.step(engine.Doctor{Reason: fmt.Sprintf("the wall clock jumped %v", jump)}) != nil {
			return
		}
	}
	if s.file == "" {
		return
	}
	data, err := os.ReadFile(s.file)
	var p psi
	if err == nil {
		p, err = parsePSI(data)
	}
	if err != nil {
		if !s.failing {
			s.failing = true
			a.log.Warn("host memory pressure cannot be read: it is not watched until it can", "file", s.file, "error", err)
		}
		return
	}
	if s.failing {
		s.failing = false
		a.log.Info("host memory pressure can be read again", "file", s.file)
	}
	fire, began, ended := s.pressure.observe(now, p)
	if began || ended {
		a.meters.mu.Lock()
		a.meters.underPressure = began
		a.meters.mu.Unlock()
	}
	switch {
	case began:
		a.log.Warn("host memory pressure: idle yieldable services are stopped", "some_avg10", p.some, "full_avg10", p.full)
	case ended:
		a.log.Info("host memory pressure is over", "some_avg10", p.some, "full_avg10", p.full)
	}
	if fire {
		a.meters.mu.Lock()
		a.meters.pressureEvents++
		a.meters.mu.Unlock()
		_ = a.step(engine.MemoryPressure{}) // a store failure ends Run (a.fatal)
	}
}
