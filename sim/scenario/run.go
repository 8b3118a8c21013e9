package scenario

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/fakes"
	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/sim"
)

// maxSteps bounds the engine steps of one scenario, so that a
// livelock of the engine (ops at the same instant forever) ends with an
// error instead of hanging.
const maxSteps = 500_000

// Result is one run of a scenario.
type Result struct {
	Scenario *Scenario
	Records  []Record
	Until    time.Duration
}

// Trace is the run's trace text.
func (r *Result) Trace() string { return Trace(r.Records) }

// recorder turns the world's steps into records.
type recorder struct {
	records []Record
	ops     map[engine.OpID]OpInfo
}

func (rec *recorder) add(r Record) { rec.records = append(rec.records, r) }

func (rec *recorder) observe(now time.Time, ev engine.Event, effects []engine.Effect) {
	at := now.Sub(sim.Epoch)
	switch ev := ev.(type) {
	case engine.Boot:
		// A new engine numbers its ops from the start again; completions
		// of the old one's ops are lost with it.
		rec.ops = map[engine.OpID]OpInfo{}
	case *engine.OpDone:
		info, known := rec.ops[ev.ID]
		delete(rec.ops, ev.ID)
		// The fake executor reuses the completion once the step is over:
		// the record keeps its own.
		kept := *ev
		rec.add(Record{At: at, Kind: RecEvent, Text: formatDone(info, known, kept), Event: &kept, Op: info})
	case engine.ContainerEmptied:
		rec.add(Record{At: at, Kind: RecEvent, Text: "process container of " + ev.Service.String() + " emptied", Event: ev})
	case engine.ContainerPopulated:
		rec.add(Record{At: at, Kind: RecEvent,
			Text: "process container of " + ev.Service.String() + " holds its daemon", Event: ev})
	case engine.MemberExited:
		text := "a long-lived process of " + ev.Service.String() + " exited, its container still populated"
		if ev.Killed {
			text = "the master of " + ev.Service.String() +
				", svcrun's child, was killed by a signal, its container still populated"
		}
		rec.add(Record{At: at, Kind: RecEvent, Text: text, Event: ev})
	case engine.Paused:
		rec.add(Record{At: at, Kind: RecEvent, Text: "svcrun runs again after a pause of " + fmtDur(ev.Length), Event: ev})
	}
	for _, f := range effects {
		var info OpInfo
		if r, ok := f.(*engine.RunOp); ok {
			info = OpInfo{ID: r.ID, Target: r.Target, Op: r.Op, Args: append([]string(nil), r.Args...)}
			rec.ops[r.ID] = info
			// The engine's next step writes over it: the record keeps
			// its own.
			kept := *r
			f = &kept
		}
		if traced(f) {
			rec.add(Record{At: at, Kind: RecEffect, Text: formatTraceEffect(f), Effect: f, Op: info})
		}
	}
}

// specs is the module set with the given manifests and enabled flags,
// without the modules removed from the configuration.
func specs(mods []*manifest.Module, enabled, removed []bool) []engine.ModuleSpec {
	out := make([]engine.ModuleSpec, 0, len(mods))
	for i, m := range mods {
		if !removed[i] {
			out = append(out, engine.ModuleSpec{Module: m, Enabled: enabled[i]})
		}
	}
	return out
}

// Run plays the scenario in a new World and records its trace. Inputs at
// time T happen after every event due at or before T, and everything they
// cause at T happens before the next input. Errors name the file and line.
func (sc *Scenario) Run() (*Result, error) {
	enabled := make([]bool, len(sc.Modules))
	removed := make([]bool, len(sc.Modules))
	mods := make([]*manifest.Module, len(sc.Modules))
	var names []string
	for i, m := range sc.Modules {
		enabled[i], mods[i] = m.Enabled, m.Module
		n := m.Module.Name
		if !m.Enabled {
			n += " (disabled)"
		}
		names = append(names, n)
	}
	specs := specs(mods, enabled, removed)
	behaviours := sc.behaviourSet()
	rec := &recorder{ops: map[engine.OpID]OpInfo{}}
	res := &Result{Scenario: sc, Until: sc.Until}

	w := sim.Build(sc.Config, specs, behaviours)
	boot := fmt.Sprintf("boot node %s (%s): modules %s", sc.Config.NodeID, sc.Config.Platform, strings.Join(names, ", "))
	if len(sc.Stored) > 0 {
		if err := w.Store.Apply(sc.Stored); err != nil {
			return nil, lineError(sc.File, 1, "stored: %v", err)
		}
		boot += " (store: " + storeSummary(w.Store.State()) + ")"
	}
	rec.add(Record{Kind: RecInput, Text: boot})
	w.Observe = rec.observe
	if sc.onStep != nil {
		w.Observe = func(now time.Time, ev engine.Event, effects []engine.Effect) {
			rec.observe(now, ev, effects)
			sc.onStep(now, ev, effects)
		}
	}
	steps := 0
	w.Check = func(*sim.World) error {
		if steps++; steps > maxSteps {
			return fmt.Errorf("more than %d engine steps: the engine does not settle", maxSteps)
		}
		return nil
	}
	w.Boot()
	pl := &player{sc: sc, w: w, rec: rec, behaviours: behaviours, mods: mods, reloads: make([]int, len(mods)),
		enabled: enabled, removed: removed}
	fail := func(err error) (*Result, error) {
		res.Records = sc.Window.filter(rec.records)
		return res, err
	}
	if err := pl.stopped(nil); err != nil {
		return fail(err)
	}
	for i := range sc.Inputs {
		in := &sc.Inputs[i]
		if pl.pause != nil && in.At < pl.pause.pauseEnd() {
			pl.held = append(pl.held, in)
			continue
		}
		if err := pl.resume(); err != nil {
			return fail(err)
		}
		w.RunFor(sim.Epoch.Add(in.At).Sub(w.Now()))
		if err := pl.stopped(in); err != nil {
			return fail(err)
		}
		if err := pl.play(in); err != nil {
			return fail(err)
		}
	}
	if err := pl.resume(); err != nil {
		return fail(err)
	}
	w.RunFor(sim.Epoch.Add(sc.Until).Sub(w.Now()))
	if err := pl.stopped(nil); err != nil {
		return fail(err)
	}
	res.Records = sc.Window.filter(rec.records)
	return res, nil
}

// player plays a scenario's inputs in its world.
type player struct {
	sc         *Scenario
	w          *sim.World
	rec        *recorder
	behaviours map[string]*fakes.Behaviour
	// Per module of the scenario: its manifest now, how many of its
	// later manifests were loaded, and its flags.
	mods             []*manifest.Module
	reloads          []int
	enabled, removed []bool
	// down: svcrun is down until the next restart; module edits only
	// change what it reads then.
	down bool
	// pause is the pause in progress, if any, and held the inputs sent
	// during it.
	pause *Input
	held  []*Input
}

// playPause begins a pause: svcrun stands still until resume.
func (pl *player) playPause(in *Input) error {
	pl.record(in, fmt.Sprintf("%s (svcrun stands still until %s)", in.Text, fmtDur(in.pauseEnd())), nil)
	pl.pause = in
	return nil
}

// resume ends the pause in progress, if any: time moves to its end with
// nothing delivered, the engine hears of the pause, then what fell due
// meanwhile, then the inputs held, each at the pause's end.
func (pl *player) resume() error {
	p := pl.pause
	if p == nil {
		return nil
	}
	pl.pause = nil
	pl.w.Pause(p.pause)
	if err := pl.stopped(p); err != nil {
		return err
	}
	held := pl.held
	pl.held = nil
	for _, in := range held {
		late := *in
		late.At = p.pauseEnd()
		late.Text = fmt.Sprintf("%s (sent at %s, during the pause)", in.Text, fmtDur(in.At))
		if err := pl.play(&late); err != nil {
			return err
		}
	}
	return nil
}

// play does what an input does to the world.
func (pl *player) play(in *Input) error {
	switch in.Name {
	case "crash":
		return pl.playCrash(in)
	case "member-exited":
		return pl.playMemberExited(in)
	case "pause":
		return pl.playPause(in)
	case "emptied":
		return pl.playEmptied(in)
	case "owner-start", "owner-stop":
		return pl.playOwner(in)
	case "object":
		return pl.playObject(in)
	case "behaviour":
		return pl.playBehaviour(in)
	case "down":
		return pl.playDown(in)
	case "restart":
		return pl.playRestart(in)
	case "enable", "disable", "remove", "disable-all":
		return pl.playModuleSwitch(in)
	case "reload":
		return pl.playReload(in)
	}
	return pl.input(in, in.Text, in.ev)
}

// record adds an input to the trace, with the event it sends, if any.
func (pl *player) record(in *Input, text string, ev engine.Event) {
	pl.rec.add(Record{At: in.At, Kind: RecInput, Text: text, Input: in, Event: ev})
}

// input records an input and sends its event (if any) to the engine.
func (pl *player) input(in *Input, text string, ev engine.Event) error {
	pl.record(in, text, ev)
	if ev != nil {
		pl.w.Do(ev)
	}
	return pl.stopped(in)
}

// stopped is the error of a world that stopped, at the input's line (at
// the first line before the timeline or after it).
func (pl *player) stopped(in *Input) error {
	if pl.w.Err() == nil {
		return nil
	}
	line := 1
	if in != nil {
		line = in.Line
	}
	return lineError(pl.sc.File, line, "the world stopped: %v", pl.w.Err())
}

// Outcome of checking one scenario file.
type Check struct {
	File     string
	Scenario *Scenario
	Result   *Result
	// Diff is empty when the trace matches the expected one.
	Diff string
	// Rewritten is set when the file was rewritten.
	Rewritten bool
}

// CheckFile runs a scenario file and compares its trace with the
// expected one; with rewrite, it writes the trace into the file instead
// (only when it differs).
func CheckFile(file string, rewrite bool) (*Check, error) {
	sc, err := ParseFile(file)
	if err != nil {
		return nil, err
	}
	res, err := sc.Run()
	if err != nil {
		return nil, err
	}
	c := &Check{File: file, Scenario: sc, Result: res}
	got := res.Trace()
	if got == sc.Expected && sc.HasExpected {
		return c, nil
	}
	if rewrite {
		info, err := os.Stat(file)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(file, sc.Rewritten(got), info.Mode().Perm()); err != nil {
			return nil, err
		}
		c.Rewritten = true
		return c, nil
	}
	if !sc.HasExpected {
		c.Diff = fmt.Sprintf("%s: no expected trace (no %q line); run with -rewrite to record it\n", file, separator)
		return c, nil
	}
	c.Diff = unifiedDiff(sc.Expected, got, file+" (expected)", "actual trace", 3, 80)
	return c, nil
}
