package scenario

// A journal becomes a scenario: svcrun's event journal holds every input
// of the engine and every op's result; a scenario holds the inputs and fake
// services whose ops give those results. FromJournal writes the second
// from the first and checks, by running it, that the scenario makes the
// engine decide what the journal recorded, step by step.

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/fakes"
	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/protocol"
	"github.com/oarbank/svcrun/sim"
)

// JournalWindow is the part of a journal a replayed scenario is about.
// From and To are offsets from the journal's first boot; To 0 is its end.
type JournalWindow struct {
	From, To time.Duration
	Service  string
}

// Unsayable is the error of a journal step the scenario language cannot
// say (or that the scenario does not reproduce): it names the line.
type Unsayable struct {
	Where  string // file:line (event)
	Reason string
}

func (u *Unsayable) Error() string { return u.Where + ": " + u.Reason }

// FromJournal turns the journal's lines, from its first boot, into a
// scenario file with its expected trace. command is the command line that
// made it, for the file's header.
func FromJournal(command string, lines []sim.JournalLine, win JournalWindow) ([]byte, error) {
	first := slices.IndexFunc(lines, func(l sim.JournalLine) bool { _, ok := l.Event.(engine.Boot); return ok })
	if first < 0 {
		return nil, fmt.Errorf("journal: no boot entry: a scenario starts at svcrun's start, and the files hold none (the oldest rotated files may be gone)")
	}
	c := newConverter(lines[first])
	if err := c.boot(lines[first]); err != nil {
		return nil, err
	}
	last := lines[first]
	for i, l := range lines[first+1:] {
		if win.To > 0 && l.Entry.At.Sub(c.t0) > win.To {
			break
		}
		var next *sim.JournalLine
		if j := first + 2 + i; j < len(lines) {
			next = &lines[j]
		}
		if err := c.step(l, next); err != nil {
			return nil, err
		}
		last = l
	}
	if win.Service != "" && !slices.Contains(c.serviceNames(), win.Service) {
		return nil, fmt.Errorf("--service %s: no such service in the journal's modules; they have: %s", win.Service, strings.Join(c.serviceNames(), ", "))
	}
	until := c.now
	if win.To > 0 {
		until = max(until, win.To)
	}
	text, err := c.write(command, lines[first], last, first, win, until)
	if err != nil {
		return nil, err
	}
	sc, err := Parse("replayed scenario", []byte(text))
	if err != nil {
		return nil, fmt.Errorf("the written scenario does not parse (a bug of svcsim replay): %w", err)
	}
	if err := c.sameModules(sc); err != nil {
		return nil, err
	}
	var got []engine.JournalEntry
	var stepErr error
	sc.onStep = func(now time.Time, ev engine.Event, effects []engine.Effect) {
		j, err := engine.NewJournalEntry(now, ev, effects)
		if err != nil && stepErr == nil {
			stepErr = err
		}
		got = append(got, j)
	}
	res, err := sc.Run()
	if err == nil {
		err = stepErr
	}
	if err != nil {
		return nil, fmt.Errorf("the replayed scenario fails: %w", err)
	}
	if err := c.compare(got); err != nil {
		return nil, err
	}
	return sc.Rewritten(res.Trace()), nil
}

// serviceNames are the services of the scenario's modules, at the boot
// and after its reloads.
func (c *converter) serviceNames() []string {
	var out []string
	mods := slices.Clone(c.later)
	for _, m := range c.boot0 {
		mods = append(mods, m.Module)
	}
	for _, m := range mods {
		for _, s := range m.Services {
			out = append(out, s.FullName())
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// opRun is an op the engine started, as the scenario's fake will run it.
type opRun struct {
	target  engine.Target
	op      protocol.Op
	call    int           // the fake's count of this op on this target
	start   time.Duration // virtual time
	timeout time.Duration
	args    []string
	step    int // the journal step that ran it
	seq     int // its completion's place in the scheduling order
	// running is whether the fake daemon ran when the op started: what
	// the fake's op sees, whatever happens while it runs.
	running bool
}

// script is what the scenario says of one op of one fake.
type script struct {
	durations []time.Duration // by call; -1 while the op is in flight
	outcomes  []fakes.Outcome
}

// fingerprintSays is what a fake's fingerprint reports.
type fingerprintSays struct {
	pools   map[string]int64
	memGB   float64
	healthy bool
}

// ownedObject is an object a fake owns: its `object` input, and whether
// it survives destroys without --force.
type ownedObject struct {
	input    int // in converter.inputs
	stubborn bool
}

type timedInput struct {
	at   time.Duration
	seq  int // 2 * its step, and 2 * step - 1 for a change before that step
	text string
}

type converter struct {
	t0    time.Time // the boot's time: the scenario's 0
	cfg   engine.Config
	mods  []engine.ModuleSpec // as the engine has them now
	boot0 []engine.ModuleSpec // at the first boot
	later []*manifest.Module  // `module later` blocks, in reload order

	// The engine stepped on the scenario's virtual time, with the
	// scenario's store: it tells when the simulator fires each timer.
	eng    *engine.Engine
	store  *sim.MemStore
	now    time.Duration
	timers map[engine.TimerKey]time.Duration
	ops    map[engine.OpID]opRun
	// sched numbers what the engine schedules, as the simulator's
	// scheduler will; timerSeq is each pending timer's number; prev
	// describes the last step taken.
	sched    int
	timerSeq map[engine.TimerKey]int
	prev     stepInfo
	// stepAt and stepInput are each step's virtual time and whether it
	// is an input.
	stepAt    []time.Duration
	stepInput []bool

	calls   map[string]map[protocol.Op]int
	scripts map[string]map[protocol.Op]*script
	running map[string]bool // the fake daemons, as the scenario leaves them
	// emptiedAt is when each service's container last emptied.
	emptiedAt map[string]time.Duration
	// looked says which daemons an op has looked at.
	looked map[string]bool
	// lost are the starts and stops a restart lost, by service, until
	// an op looks at the daemon again.
	lost    map[string]opRun
	fp      map[string]fingerprintSays
	fpHead  map[string]fingerprintSays // before the timeline
	runHead map[string]bool            // `running` before the timeline
	objects map[string]map[string]*ownedObject
	inputs  []timedInput
	stored  []string          // `stored` lines: the store at the boot
	want    []sim.JournalLine // the steps the scenario must reproduce
}

func newConverter(boot sim.JournalLine) *converter {
	return &converter{
		t0:        boot.Entry.At,
		timers:    map[engine.TimerKey]time.Duration{},
		timerSeq:  map[engine.TimerKey]int{},
		prev:      stepInfo{input: true},
		ops:       map[engine.OpID]opRun{},
		calls:     map[string]map[protocol.Op]int{},
		scripts:   map[string]map[protocol.Op]*script{},
		running:   map[string]bool{},
		emptiedAt: map[string]time.Duration{},
		lost:      map[string]opRun{},
		looked:    map[string]bool{},
		fp:        map[string]fingerprintSays{},
		fpHead:    map[string]fingerprintSays{},
		runHead:   map[string]bool{},
		objects:   map[string]map[string]*ownedObject{},
	}
}

func unsayable(l sim.JournalLine, format string, args ...any) error {
	return &Unsayable{Where: l.Where(), Reason: fmt.Sprintf(format, args...)}
}

// boot takes the first boot: the node and its modules.
func (c *converter) boot(l sim.JournalLine) error {
	b := l.Event.(engine.Boot)
	c.cfg, c.mods, c.boot0 = b.Config, b.Modules, b.Modules
	c.eng, c.store = engine.New(), sim.NewMemStore()
	// What the store held: written as `stored` lines, and in the
	// scenario's virtual time for its engine.
	var err error
	if c.stored, err = storedText(b.State, c.t0); err != nil {
		return unsayable(l, "%v", err)
	}
	var batch []engine.Effect
	for _, r := range b.State.Leases {
		r.Admitted = c.virtual(r.Admitted)
		if !r.Expires.IsZero() {
			r.Expires = c.virtual(r.Expires)
		}
		batch = append(batch, engine.PutLease{Lease: r})
	}
	for _, r := range b.State.Services {
		if !r.BackoffUntil.IsZero() {
			r.BackoffUntil = c.virtual(r.BackoffUntil)
		}
		batch = append(batch, engine.PutService{Service: r})
	}
	if len(batch) > 0 {
		if err := c.store.Apply(batch); err != nil {
			return unsayable(l, "the store at this boot: %v", err)
		}
	}
	return c.run(l, 0, engine.Boot{Config: b.Config, Modules: b.Modules, State: c.store.State()})
}

// virtual is a time of the journal on the scenario's virtual clock.
func (c *converter) virtual(t time.Time) time.Time { return sim.Epoch.Add(t.Sub(c.t0)) }

// run steps the virtual-time engine and keeps what the scenario needs of
// its effects: timers, ops, the store.
func (c *converter) run(l sim.JournalLine, at time.Duration, ev engine.Event) error {
	if f, ok := ev.(engine.Fire); ok {
		delete(c.timers, f.Timer)
	}
	effects, err := sim.Step(c.eng, sim.Epoch.Add(at), ev)
	if err != nil {
		return unsayable(l, "%v", err)
	}
	// A journal the engine does not replay cannot become a scenario
	// that does.
	got, err := engine.NewJournalEntry(sim.Epoch.Add(at), ev, effects)
	if err != nil {
		return unsayable(l, "%v", err)
	}
	if want, have := timeless(l.Entry.Effects), timeless(got.Effects); !slices.Equal(want, have) {
		return unsayable(l, "the engine decides otherwise than the journal recorded (svcsim replay JOURNAL shows where): the journal has\n    %s\nthe engine now\n    %s",
			strings.Join(want, "\n    "), strings.Join(have, "\n    "))
	}
	var batch []engine.Effect
	for _, f := range effects {
		switch f := f.(type) {
		case engine.SetTimer:
			c.sched++
			c.timers[f.Key] = f.At.Sub(sim.Epoch)
			c.timerSeq[f.Key] = c.sched
		case engine.CancelTimer:
			delete(c.timers, f.Key)
		case engine.RunOp:
			name := f.Target.String()
			if c.calls[name] == nil {
				c.calls[name] = map[protocol.Op]int{}
			}
			c.sched++
			c.ops[f.ID] = opRun{target: f.Target, op: f.Op, call: c.calls[name][f.Op], start: at, timeout: f.Timeout, args: f.Args, step: len(c.want), seq: c.sched, running: c.running[name]}
			c.calls[name][f.Op]++
			c.setDuration(name, f.Op, c.calls[name][f.Op]-1, -1, "")
		case engine.Kill:
			c.running[f.Service.String()] = false
		case engine.PutLease, engine.DeleteLease, engine.PutService:
			batch = append(batch, f)
		}
	}
	if len(batch) > 0 {
		if err := c.store.Apply(batch); err != nil {
			return unsayable(l, "%v", err)
		}
	}
	c.now = at
	c.want = append(c.want, l)
	_, done := ev.(engine.OpDone)
	_, fire := ev.(engine.Fire)
	c.stepAt, c.stepInput = append(c.stepAt, at), append(c.stepInput, !done && !fire)
	return nil
}

// setDuration records the n-th call of op on a fake.
func (c *converter) setDuration(name string, op protocol.Op, n int, d time.Duration, out fakes.Outcome) {
	if c.scripts[name] == nil {
		c.scripts[name] = map[protocol.Op]*script{}
	}
	s := c.scripts[name][op]
	if s == nil {
		s = &script{}
		c.scripts[name][op] = s
	}
	for len(s.durations) <= n {
		s.durations = append(s.durations, -1)
		s.outcomes = append(s.outcomes, fakes.OK)
	}
	s.durations[n] = d
	if out != "" {
		s.outcomes[n] = out
	}
}

func (c *converter) input(at time.Duration, format string, args ...any) {
	c.inputs = append(c.inputs, timedInput{at: at, seq: 2 * len(c.want), text: fmt.Sprintf(format, args...)})
}

// stepInfo is what the simulator's order of a step at an instant depends
// on. At one instant it runs the events due (timers and op completions) in
// the order they were scheduled, then the inputs, each followed by what it
// scheduled for that instant. The converter numbers what its engine
// schedules (RunOp and SetTimer effects, in order) as the simulator's
// scheduler will.
type stepInfo struct {
	index int // in the journal, from the boot
	input bool
	done  bool
	fire  bool
	// A completion: the step that ran the op; a completion or a fire:
	// its place in the scheduling order.
	opStep int
	seq    int
}

// info describes journal line l, the next step.
func (c *converter) info(l sim.JournalLine) stepInfo {
	in := stepInfo{index: len(c.want)}
	switch e := l.Event.(type) {
	case engine.Fire:
		in.fire, in.seq = true, c.timerSeq[e.Timer]
	case engine.OpDone:
		run := c.ops[e.ID]
		in.done, in.opStep, in.seq = true, run.step, run.seq
	default:
		in.input = true
	}
	return in
}

func nextDone(next *sim.JournalLine) (engine.OpDone, bool) {
	if next == nil {
		return engine.OpDone{}, false
	}
	d, ok := next.Event.(engine.OpDone)
	return d, ok
}

// scheduledBefore says whether completion e, at the instant of step p,
// would run before p: against the journal's order.
func scheduledBefore(e, p stepInfo) bool {
	if p.input {
		return e.opStep < p.index // due before the input is played
	}
	return e.seq < p.seq
}

// when is the virtual time of a step. A timer fires at its time in the
// simulator, while svcrun's came a little late (more on a loaded host);
// any other step keeps its time from the boot (an op lasts what it
// lasted), unless a timer that fired after it in production would fire
// first: the step then goes halfway between the step before it and that
// timer, which leaves room for the next steps that came before the timer
// too. A completion that the simulator would run before the step before
// it at the same instant comes a nanosecond later.
func (c *converter) when(l sim.JournalLine, in stepInfo, next *sim.JournalLine) (time.Duration, error) {
	if f, ok := l.Event.(engine.Fire); ok {
		at, set := c.timers[f.Timer]
		if !set {
			return 0, unsayable(l, "a timer %s %s the engine had not set (or had cancelled)", f.Timer.Kind, f.Timer.Subject)
		}
		return max(at, c.now), nil
	}
	lo := c.now
	if in.done && scheduledBefore(in, c.prev) {
		lo += time.Nanosecond
	}
	at := max(l.Entry.At.Sub(c.t0), lo)
	// An input followed at its instant by the completion of an op already
	// running would come after that completion in the simulator: it goes a
	// nanosecond earlier, rather than the completion later (which would
	// move every timer set from it).
	if d, ok := nextDone(next); ok && in.input && next.Entry.At.Equal(l.Entry.At) && at-time.Nanosecond >= lo {
		if run, running := c.ops[d.ID]; running && run.step < in.index {
			at -= time.Nanosecond
		}
	}
	// The step must come before every pending timer: strictly, unless it
	// is a completion scheduled before the timer.
	var first engine.TimerKey
	bound := time.Duration(-1)
	for k, t := range c.timers {
		limit := t
		if in.done && in.seq < c.timerSeq[k] {
			limit = t + time.Nanosecond
		}
		if bound < 0 || limit < bound || limit == bound && k.Slot < first.Slot {
			first, bound = k, limit
		}
	}
	if bound >= 0 && at >= bound {
		if bound <= lo {
			return 0, unsayable(l, "the timer %s %s, due at %v, fired only after this step in production; the simulator fires timers on time, and has no room to put this step before it", first.Kind, first.Subject, c.timers[first])
		}
		at = lo + (bound-lo)/2
	}
	return at, nil
}

// step takes one journal line after the first boot.
func (c *converter) step(l sim.JournalLine, next *sim.JournalLine) error {
	in := c.info(l)
	at, err := c.when(l, in, next)
	if err != nil {
		return err
	}
	defer func() { c.prev = in }()
	ev := l.Event
	switch e := ev.(type) {
	case engine.Boot:
		return c.restart(l, at, e)
	case engine.Reload:
		if err := c.reload(l, at, e); err != nil {
			return err
		}
	case engine.Acquire:
		text, err := acquireText(e)
		if err != nil {
			return unsayable(l, "%v", err)
		}
		c.input(at, "%s", text)
	case engine.Renew:
		if err := plainID(string(e.Lease)); err != nil {
			return unsayable(l, "lease %v", err)
		}
		c.input(at, "renew %s", e.Lease)
	case engine.Release:
		if err := plainID(string(e.Lease)); err != nil {
			return unsayable(l, "lease %v", err)
		}
		c.input(at, "release %s", e.Lease)
	case engine.ContainerEmptied:
		c.input(at, "emptied %s", e.Service)
		c.running[e.Service.String()] = false
		c.emptiedAt[e.Service.String()] = at
	case engine.Doctor:
		if e.Reason == "" || strings.Join(strings.Fields(stripComment(e.Reason)), " ") != e.Reason {
			return unsayable(l, "doctor reason %q: a scenario's doctor reason is words separated by single spaces, without #", e.Reason)
		}
		c.input(at, "doctor %s", e.Reason)
	case engine.MemoryPressure:
		c.input(at, "pressure")
	case engine.Reset:
		c.input(at, "reset %s", e.Service)
	case engine.ReapNow:
		c.input(at, "reap")
	case engine.Fire:
	case engine.OpDone:
		var err error
		if at, err = c.done(l, at, e); err != nil {
			return err
		}
	default:
		return unsayable(l, "the scenario language has no input for a %s event", l.Entry.Event)
	}
	return c.run(l, at, ev)
}

// restart is a later boot: svcrun started again on the same store.
func (c *converter) restart(l sim.JournalLine, at time.Duration, b engine.Boot) error {
	if !reflect.DeepEqual(b.Config, c.cfg) {
		return unsayable(l, "svcrun restarted with another node configuration (%+v, was %+v): a scenario's `restart` keeps the node", b.Config, c.cfg)
	}
	if !sameSpecs(b.Modules, c.mods) {
		return unsayable(l, "svcrun restarted with other modules than it ran: a scenario's `restart` keeps them (a reload of them is `reload MODULE`)")
	}
	if got, want := storeIDs(b.State), storeIDs(c.store.State()); got != want {
		return unsayable(l, "the store at this restart held %s, but the journal before it leaves %s (lines missing from the journal?)", got, want)
	}
	c.input(at, "restart")
	c.eng = engine.New()
	clear(c.timers)
	// The ops in flight are lost with the old svcrun: their completions
	// never come (they last past the end). How a lost start or stop
	// ended, the next look at its daemon tells; until then it counts as
	// ok.
	for _, run := range c.ops {
		name := run.target.String()
		switch run.op {
		case protocol.OpStart:
			c.running[name] = !c.emptiedSince(name, run)
			c.lost[name] = run
		case protocol.OpStop:
			c.running[name] = false
			c.lost[name] = run
		}
	}
	clear(c.ops)
	return c.run(l, at, engine.Boot{Config: c.cfg, Modules: c.mods, State: c.store.State()})
}

func storeIDs(st engine.State) string {
	var parts []string
	for _, l := range st.Leases {
		parts = append(parts, "lease "+string(l.ID))
	}
	for _, s := range st.Services {
		parts = append(parts, fmt.Sprintf("%s failures=%d unhealthy=%v", s.Name, s.Failures, s.Unhealthy))
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

// reload is a configuration reload: one module enabled, disabled,
// removed or given a new manifest, as the scenario's inputs say it.
func (c *converter) reload(l sim.JournalLine, at time.Duration, r engine.Reload) error {
	why := ""
	if r.Reason != "" {
		if strings.Join(strings.Fields(stripComment(r.Reason)), " ") != r.Reason {
			return unsayable(l, "the reload's reason %q: a scenario's reason is words separated by single spaces, without #", r.Reason)
		}
		why = " why: " + r.Reason
	}
	known := map[string]bool{}
	for _, m := range c.boot0 {
		known[m.Module.Name] = true
	}
	old := map[string]engine.ModuleSpec{}
	for _, m := range c.mods {
		old[m.Module.Name] = m
	}
	var changes []string
	seen := map[string]bool{}
	for _, m := range r.Modules {
		name := m.Module.Name
		seen[name] = true
		if !known[name] {
			return unsayable(l, "module %s appears in a reload; a scenario's modules are those of its boot", name)
		}
		o, was := old[name]
		switch {
		case !sameManifest(o.Module, m.Module) && was:
			if o.Enabled != m.Enabled {
				return unsayable(l, "module %s changed its manifest and was %s in one reload: the scenario language says one of the two", name, map[bool]string{true: "enabled", false: "disabled"}[m.Enabled])
			}
			c.later = append(c.later, m.Module)
			changes = append(changes, "reload "+name)
		case !was || o.Enabled != m.Enabled:
			if !was && !sameManifest(c.manifestOf(name), m.Module) {
				return unsayable(l, "module %s came back with another manifest", name)
			}
			changes = append(changes, map[bool]string{true: "enable ", false: "disable "}[m.Enabled]+name)
		}
	}
	for _, m := range c.mods {
		if !seen[m.Module.Name] {
			changes = append(changes, "remove "+m.Module.Name)
		}
	}
	allOff := len(r.Modules) == len(c.mods) && !slices.ContainsFunc(r.Modules, func(m engine.ModuleSpec) bool { return m.Enabled })
	switch {
	case len(changes) > 1 && allOff && !slices.ContainsFunc(changes, func(ch string) bool { return !strings.HasPrefix(ch, "disable ") }):
		// svcrun stopping with --stop-services-on-exit.
		changes = []string{"disable-all"}
	case len(changes) == 0:
		// A reload that changed nothing: enabling an enabled module says it.
		if len(r.Modules) == 0 {
			return unsayable(l, "a reload without any module")
		}
		changes = []string{map[bool]string{true: "enable ", false: "disable "}[r.Modules[0].Enabled] + r.Modules[0].Module.Name}
	case len(changes) > 1:
		return unsayable(l, "one reload changed %d modules (%s): each scenario input changes one, or disables all", len(changes), strings.Join(changes, ", "))
	}
	if why != "" && (strings.HasPrefix(changes[0], "remove ") || strings.HasPrefix(changes[0], "reload ")) {
		return unsayable(l, "a %s with a reason of its own (%q): only enable, disable and disable-all say one", strings.Fields(changes[0])[0], r.Reason)
	}
	if len(r.Modules) > 0 && !sameOrder(r.Modules, c.boot0) {
		return unsayable(l, "the reload lists the modules in another order than the boot: a scenario keeps the boot's order")
	}
	c.input(at, "%s%s", changes[0], why)
	c.mods = r.Modules
	return nil
}

// manifestOf is the last manifest of a module the scenario loaded.
func (c *converter) manifestOf(name string) *manifest.Module {
	for i := len(c.later) - 1; i >= 0; i-- {
		if c.later[i].Name == name {
			return c.later[i]
		}
	}
	for _, m := range c.boot0 {
		if m.Module.Name == name {
			return m.Module
		}
	}
	return nil
}

// sameOrder says whether the modules of a reload keep the boot's order,
// as the scenario's reloads do.
func sameOrder(got, boot []engine.ModuleSpec) bool {
	idx := map[string]int{}
	for i, m := range boot {
		idx[m.Module.Name] = i
	}
	for i := 1; i < len(got); i++ {
		if idx[got[i-1].Module.Name] > idx[got[i].Module.Name] {
			return false
		}
	}
	return true
}

// sameManifest compares what the engine reads of two manifests.
func sameManifest(a, b *manifest.Module) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Name == b.Name && a.Version == b.Version && reflect.DeepEqual(a.Services, b.Services) && reflect.DeepEqual(a.Probes, b.Probes)
}

func sameSpecs(a, b []engine.ModuleSpec) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Enabled != b[i].Enabled || !sameManifest(a[i].Module, b[i].Module) {
			return false
		}
	}
	return true
}

// plainID checks that an id can be written as one word of a scenario.
func plainID(id string) error {
	if id == "" || strings.ContainsAny(id, " \t\n#,=:") {
		return fmt.Errorf("%q: a scenario writes ids as one word without #, comma, = or colon", id)
	}
	return nil
}

func acquireText(a engine.Acquire) (string, error) {
	var b strings.Builder
	b.WriteString("acquire " + string(a.Lease))
	words := []string{string(a.Lease)}
	if a.Attempt != "" {
		fmt.Fprintf(&b, " attempt=%s", a.Attempt)
		words = append(words, a.Attempt)
	}
	if a.Job != "" {
		fmt.Fprintf(&b, " job=%s", a.Job)
		words = append(words, a.Job)
	}
	if len(a.Capabilities) > 0 {
		fmt.Fprintf(&b, " cap=%s", strings.Join(a.Capabilities, ","))
		words = append(words, a.Capabilities...)
	}
	if len(a.Pools) > 0 {
		names := slices.Sorted(func(yield func(string) bool) {
			for n := range a.Pools {
				if !yield(n) {
					return
				}
			}
		})
		pools := make([]string, len(names))
		for i, n := range names {
			pools[i] = fmt.Sprintf("%s:%d", n, a.Pools[n])
		}
		fmt.Fprintf(&b, " pool=%s", strings.Join(pools, ","))
		words = append(words, names...)
	}
	if len(a.NeedsPools) > 0 {
		fmt.Fprintf(&b, " needs=%s", strings.Join(a.NeedsPools, ","))
		words = append(words, a.NeedsPools...)
	}
	for _, w := range words {
		if err := plainID(w); err != nil {
			return "", fmt.Errorf("acquire %s: %v", a.Lease, err)
		}
	}
	if a.Wait > 0 {
		fmt.Fprintf(&b, " wait=%v", a.Wait)
	}
	if a.TTL > 0 {
		fmt.Fprintf(&b, " ttl=%v", a.TTL)
	}
	return b.String(), nil
}

// done takes an op's completion: the outcome and duration the fake must
// give that call of the op, and what the fake must have become before it
// ran (a daemon that died silently, a fingerprint that changed, an object
// that appeared). It returns the step's virtual time, which for an op
// killed at its timeout is the timeout's.
func (c *converter) done(l sim.JournalLine, at time.Duration, d engine.OpDone) (time.Duration, error) {
	run, ok := c.ops[d.ID]
	if !ok {
		return 0, unsayable(l, "the completion of op #%d, which the engine did not start (or which a restart lost)", d.ID)
	}
	delete(c.ops, d.ID)
	name := run.target.String()
	o := d.Outcome
	out := fakes.OK
	switch o.Failure {
	case engine.FailOp:
		out = fakes.Fail
	case engine.FailProtocol:
		out = fakes.Protocol
	case engine.FailTimeout:
		out = fakes.Timeout
		// The fake's op ends at its timeout.
		if t := run.start + run.timeout; t >= c.now {
			at = t
		} else {
			return 0, unsayable(l, "op #%d was killed %v after its start, past its timeout %v, and steps came in between", d.ID, at-run.start, run.timeout)
		}
	case engine.FailSpawn:
		return 0, unsayable(l, "op #%d could not be spawned (%s): the scenario language has no spawn failure", d.ID, o.Message)
	case engine.FailNone:
		var err error
		if out, err = c.result(l, run, o.Result); err != nil {
			return 0, err
		}
	}
	if out == fakes.OK && (run.op == protocol.OpStart || run.op == protocol.OpStop) && o.Result.OpResult == nil {
		return 0, unsayable(l, "a %s op succeeded without a result", run.op)
	}
	// What the fake's op does to its daemon, as it will in the scenario
	// (when it starts: a container that emptied since has the last word).
	switch {
	case run.op == protocol.OpStart && (out == fakes.OK || out == fakes.Timeout):
		c.running[name] = !c.emptiedSince(name, run)
	case run.op == protocol.OpStop && (out == fakes.OK || out == fakes.Escalated):
		c.running[name] = false
	}
	c.setDuration(name, run.op, run.call, at-run.start, out)
	return at, nil
}

// emptiedSince says whether the service's container emptied while the op
// ran.
// untouched says whether nothing before op run could have changed the
// fake daemon: no start or stop ran on it, its container never emptied,
// and no op looked at it. Its state then is the one it began with.
func (c *converter) untouched(name string, run opRun) bool {
	_, emptied := c.emptiedAt[name]
	return !emptied && !c.looked[name] && c.calls[name][protocol.OpStart] == 0 && c.calls[name][protocol.OpStop] == 0
}

func (c *converter) emptiedSince(name string, run opRun) bool {
	at, ok := c.emptiedAt[name]
	return ok && at > run.start
}

// change is an input that changes a fake as late as it can before the
// step that ran op run, so that the op sees it and the ops before it do
// not. An input is played only between the inputs of an instant, after
// all it caused: before the input that led to that step (the step itself,
// or the last input of its instant before it), or else just before the
// instant.
func (c *converter) change(l sim.JournalLine, run opRun, format string, args ...any) error {
	text := fmt.Sprintf(format, args...)
	k := run.step
	at := c.stepAt[k]
	j := k
	for j > 0 && !c.stepInput[j] && c.stepAt[j-1] == at {
		j--
	}
	if !c.stepInput[j] {
		at -= time.Nanosecond
	}
	if j == 0 || at < 0 {
		return unsayable(l, "%s would have to happen before svcrun's boot", text)
	}
	c.inputs = append(c.inputs, timedInput{at: at, seq: 2*j - 1, text: text})
	return nil
}

// observe makes the fake daemon running or not when the op ran, as the op
// found it: a daemon that died silently, or was started by hand.
func (c *converter) observe(l sim.JournalLine, run opRun, running bool) error {
	name := run.target.String()
	defer func() { c.looked[name] = true }()
	if lost, ok := c.lost[name]; ok {
		// A start or stop lost in a restart ended so that its daemon is
		// as this op finds it.
		delete(c.lost, name)
		started := lost.op == protocol.OpStart
		if c.running[name] != running && !c.emptiedSince(name, lost) {
			c.setDuration(name, lost.op, lost.call, -1, map[bool]fakes.Outcome{true: fakes.Fail, false: fakes.OK}[running != started])
			c.running[name] = running
			return nil
		}
	}
	if run.running == running {
		return nil
	}
	if at, ok := c.emptiedAt[name]; ok && at == run.start {
		// The op ran in the step of its container's emptying (a cleanup
		// stop that still found a dying daemon): nothing can come between
		// the two, so the fake answers as it is; the comparison of the
		// steps says whether that matters.
		return nil
	}
	// The fake is made so from just before the op; unless its container
	// emptied since, that is how it still is.
	if !c.emptiedSince(name, run) {
		c.running[name] = running
	}
	if running && c.untouched(name, run) {
		c.runHead[name] = true // running from before svcrun's boot
		return nil
	}
	return c.change(l, run, "%s %s", map[bool]string{true: "owner-start", false: "owner-stop"}[running], name)
}

// result maps a successful op's result to the fake's outcome.
func (c *converter) result(l sim.JournalLine, run opRun, r protocol.Result) (fakes.Outcome, error) {
	name := run.target.String()
	switch run.op {
	case protocol.OpFingerprint:
		fp := r.Fingerprint
		if fp == nil {
			return "", unsayable(l, "a fingerprint without its result")
		}
		if !run.target.Probe {
			if fp.Running == nil {
				return "", unsayable(l, "the fingerprint of service %s does not say whether it runs", name)
			}
			if err := c.observe(l, run, *fp.Running); err != nil {
				return "", err
			}
		}
		says := fingerprintSays{pools: fp.Pools, healthy: fp.Healthy}
		if fp.Reserve != nil {
			says.memGB = fp.Reserve.MemGB
		}
		if run.target.Probe && (len(says.pools) > 0 || says.memGB > 0) {
			return "", unsayable(l, "probe %s reports pools or memory: a scenario's probes report health only", name)
		}
		prev, seen := c.fp[name]
		c.fp[name] = says
		switch {
		case !seen:
			c.fpHead[name] = says
		case !reflect.DeepEqual(prev, says):
			if err := c.change(l, run, "behaviour %s %s", name, says.args()); err != nil {
				return "", err
			}
		}
		return fakes.OK, nil
	case protocol.OpStart:
		if r.OpResult != nil {
			// A start that changed nothing found the daemon running.
			if err := c.observe(l, run, !r.OpResult.Changed); err != nil {
				return "", err
			}
		}
		return fakes.OK, nil
	case protocol.OpStop:
		if r.OpResult == nil {
			return fakes.OK, nil
		}
		if err := c.observe(l, run, r.OpResult.Changed); err != nil {
			return "", err
		}
		if r.OpResult.Escalated {
			return fakes.Escalated, nil
		}
		return fakes.OK, nil
	case protocol.OpStatus, protocol.OpReady:
		st := r.Status
		if st == nil {
			return "", unsayable(l, "a %s op without its status", run.op)
		}
		if st.Ready && !st.Running {
			return "", unsayable(l, "%s said ready but not running: a scenario's fakes are ready only while running", name)
		}
		if err := c.observe(l, run, st.Running); err != nil {
			return "", err
		}
		if st.Running && !st.Ready {
			return fakes.NotReady, nil
		}
		return fakes.OK, nil
	case protocol.OpListOwned:
		return fakes.OK, c.owned(l, run, r.OwnedList)
	case protocol.OpDestroy:
		if r.OpResult == nil || len(run.args) == 0 {
			return "", unsayable(l, "a destroy op without its result or its object")
		}
		name, id := run.target.String(), run.args[0]
		force := slices.Contains(run.args[1:], "--force")
		o := c.objects[name][id]
		switch {
		case o == nil:
		case r.OpResult.Changed && !force && o.stubborn:
			return "", unsayable(l, "object %s of %s went with a destroy without --force, after surviving one: a scenario's object is stubborn or not", id, name)
		case r.OpResult.Changed:
			delete(c.objects[name], id)
		case force:
			return "", unsayable(l, "object %s of %s survived a destroy --force: the scenario language cannot say that", id, name)
		case !o.stubborn:
			// It survives destroys without --force: it was stubborn
			// from the start.
			o.stubborn = true
			c.inputs[o.input].text += " stubborn"
		}
		return fakes.OK, nil
	}
	return "", unsayable(l, "op %s: the scenario's fakes do not run it", run.op)
}

func (f fingerprintSays) isDefault() bool {
	return f.healthy && len(f.pools) == 0 && f.memGB == 0
}

// args writes a fingerprint as behaviour keys.
func (f fingerprintSays) args() string {
	var pools []string
	for _, n := range slices.Sorted(mapKeys(f.pools)) {
		pools = append(pools, fmt.Sprintf("%s:%d", n, f.pools[n]))
	}
	return fmt.Sprintf("pools=%s mem_gb=%v healthy=%v", strings.Join(pools, ","), f.memGB, f.healthy)
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// owned makes the fake own what the list says: an object it did not
// own appears just before the op; one it owned must not vanish unseen.
func (c *converter) owned(l sim.JournalLine, run opRun, list *protocol.OwnedList) error {
	name := run.target.String()
	if list == nil {
		return unsayable(l, "a list_owned op without its list")
	}
	if c.objects[name] == nil {
		c.objects[name] = map[string]*ownedObject{}
	}
	listed := map[string]bool{}
	for _, o := range list.Objects {
		listed[o.ID] = true
		if c.objects[name][o.ID] != nil {
			continue
		}
		text, err := objectText(name, o, c.t0)
		if err != nil {
			return unsayable(l, "%v", err)
		}
		c.objects[name][o.ID] = &ownedObject{input: len(c.inputs)}
		if err := c.change(l, run, "%s", text); err != nil {
			return err
		}
	}
	for id := range c.objects[name] {
		if !listed[id] {
			return unsayable(l, "object %s of %s is gone without a destroy: the scenario language cannot say that", id, name)
		}
	}
	return nil
}

func objectText(service string, o protocol.Object, t0 time.Time) (string, error) {
	if err := plainID(o.ID); err != nil {
		return "", fmt.Errorf("object %v", err)
	}
	parts := []string{"object", service, "id=" + o.ID}
	if o.Kind != "" && o.Kind != protocol.KindOther {
		parts = append(parts, "kind="+o.Kind)
	}
	keys := map[string]string{protocol.LabelAttemptID: "attempt", protocol.LabelNode: "node", protocol.LabelService: "service"}
	for _, k := range slices.Sorted(mapKeys(o.Labels)) {
		key, ok := keys[k]
		if !ok {
			return "", fmt.Errorf("object %s has label %s: a scenario's objects carry only the three oarbank labels", o.ID, k)
		}
		if err := plainID(o.Labels[k]); err != nil {
			return "", fmt.Errorf("object %s label %s %v", o.ID, k, err)
		}
		parts = append(parts, key+"="+o.Labels[k])
	}
	if len(o.Labels) == 0 {
		parts = append(parts, "nolabels")
	}
	if !o.CreatedAt.IsZero() {
		d := o.CreatedAt.Sub(t0)
		if d < 0 {
			return "", fmt.Errorf("object %s was created before the boot: a scenario's objects are created after it", o.ID)
		}
		parts = append(parts, fmt.Sprintf("created=%v", d))
	}
	if o.Busy {
		parts = append(parts, "busy")
	}
	return strings.Join(parts, " "), nil
}

// write writes the scenario's head: node, modules, behaviours, window,
// timeline and run line.
func (c *converter) write(command string, first, last sim.JournalLine, skip int, win JournalWindow, until time.Duration) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "# An incident replayed from svcrun's journal by\n#   %s\n", command)
	fmt.Fprintf(&b, "# from %s:%d (svcrun's boot at %s) to %s:%d.\n", first.File, first.Line, c.t0.UTC().Format(time.RFC3339Nano), last.File, last.Line)
	if skip > 0 {
		fmt.Fprintf(&b, "# The %d line(s) before that boot are left out: no state to replay them from.\n", skip)
	}
	b.WriteString("# Times are from that boot. The fakes do what svcrun's services did: each op\n")
	b.WriteString("# lasts what it lasted and ends as it ended, call by call.\n\n")
	cfg := c.cfg
	fmt.Fprintf(&b, "node id=%s platform=%s budget_gb=%v max_ops=%d status=%v fingerprint=%v reap=%v",
		cfg.NodeID, cfg.Platform, cfg.MemoryBudgetGB, cfg.MaxConcurrentOps, cfg.StatusPeriod, cfg.FingerprintPeriod, cfg.ReapPeriod)
	if cfg.ReadyPoll > 0 {
		fmt.Fprintf(&b, " ready_poll=%v", cfg.ReadyPoll)
	}
	if cfg.DoctorDebounce > 0 {
		fmt.Fprintf(&b, " debounce=%v", cfg.DoctorDebounce)
	}
	if cfg.ForceAfter > 0 {
		fmt.Fprintf(&b, " force_after=%d", cfg.ForceAfter)
	}
	if strings.ContainsAny(cfg.NodeID, " \t#") {
		return "", fmt.Errorf("node id %q: a scenario writes it as one word", cfg.NodeID)
	}
	b.WriteString("\n\n")
	for _, ms := range c.boot0 {
		if ms.Enabled {
			b.WriteString("module\n")
		} else {
			b.WriteString("module disabled\n")
		}
		writeModule(&b, ms.Module)
		b.WriteString("end\n\n")
	}
	for _, m := range c.later {
		b.WriteString("module later\n")
		writeModule(&b, m)
		b.WriteString("end\n\n")
	}
	for _, name := range slices.Sorted(mapKeys(c.allFakes())) {
		var head []string
		if c.runHead[name] {
			head = append(head, "running")
		}
		if fp, ok := c.fpHead[name]; ok && !fp.isDefault() {
			head = append(head, fp.args())
		}
		if len(head) > 0 {
			fmt.Fprintf(&b, "behaviour %s %s\n", name, strings.Join(head, " "))
		}
		for _, op := range protocol.Ops() {
			s := c.scripts[name][op]
			if s == nil {
				continue
			}
			fmt.Fprintf(&b, "behaviour %s op=%s duration=%s", name, op, s.durationList(until))
			if outs := s.outcomeList(); outs != "" {
				fmt.Fprintf(&b, " outcomes=%s", outs)
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("\n")
	if len(c.stored) > 0 {
		b.WriteString("# What svcrun's store held at the boot:\n")
		for _, s := range c.stored {
			b.WriteString(s + "\n")
		}
		b.WriteString("\n")
	}
	if win.From > 0 || win.Service != "" {
		b.WriteString("window")
		if win.From > 0 {
			fmt.Fprintf(&b, " from=%v", win.From)
		}
		if win.Service != "" {
			fmt.Fprintf(&b, " service=%s", win.Service)
		}
		b.WriteString("\n\n")
	}
	sort.SliceStable(c.inputs, func(i, j int) bool {
		a, b := c.inputs[i], c.inputs[j]
		return a.at < b.at || a.at == b.at && a.seq < b.seq
	})
	for _, in := range c.inputs {
		fmt.Fprintf(&b, "at %v %s\n", in.at, in.text)
	}
	fmt.Fprintf(&b, "run %v\n", until)
	return b.String(), nil
}

func (c *converter) allFakes() map[string]bool {
	out := map[string]bool{}
	for n := range c.scripts {
		out[n] = true
	}
	for n := range c.runHead {
		out[n] = true
	}
	for n := range c.fpHead {
		out[n] = true
	}
	return out
}

// durationList writes the durations of the calls; an op still in flight
// at the end (or lost in a restart) lasts past the scenario's end.
func (s *script) durationList(until time.Duration) string {
	ds := make([]string, len(s.durations))
	for i, d := range s.durations {
		if d < 0 {
			d = until + time.Hour
		}
		ds[i] = d.String()
	}
	if len(slices.Compact(slices.Clone(ds))) == 1 {
		return ds[0]
	}
	return strings.Join(ds, ",")
}

// outcomeList writes the outcomes of the calls, or "" when all are ok.
func (s *script) outcomeList() string {
	outs := make([]string, len(s.outcomes))
	all := true
	for i, o := range s.outcomes {
		outs[i] = string(o)
		all = all && o == fakes.OK
	}
	if all {
		return ""
	}
	// The last repeats: trailing copies of it say nothing.
	for len(outs) > 1 && outs[len(outs)-1] == outs[len(outs)-2] {
		outs = outs[:len(outs)-1]
	}
	return strings.Join(outs, ",")
}

// sameModules checks that the modules as written read back as the
// journal's: the engine must see the same manifests.
func (c *converter) sameModules(sc *Scenario) error {
	for i, m := range sc.Modules {
		if !sameManifest(m.Module, c.boot0[i].Module) {
			a, _ := json.Marshal(c.boot0[i].Module.Services)
			b, _ := json.Marshal(m.Module.Services)
			return fmt.Errorf("module %s as a scenario writes it reads back differently (a field the writer lacks):\n  journal  %s\n  scenario %s", m.Module.Name, a, b)
		}
	}
	return nil
}

// compare checks the scenario's steps against the journal's, in order: the
// same events, the same decisions (timers compared without their times,
// which the simulator keeps on the dot).
func (c *converter) compare(got []engine.JournalEntry) error {
	for i, w := range c.want {
		if i >= len(got) {
			return unsayable(w, "the replayed scenario ends before this step (it made %d steps)", len(got))
		}
		g := got[i]
		we, ge := timeless(w.Entry.Effects), timeless(g.Effects)
		if g.Event != w.Entry.Event || !slices.Equal(we, ge) {
			return unsayable(w, "the replayed scenario does not reproduce this step: the journal recorded\n    %s: %s\nthe scenario gives (at %v)\n    %s: %s",
				w.Entry.Event, strings.Join(we, "\n      "), g.At.Sub(sim.Epoch), g.Event, strings.Join(ge, "\n      "))
		}
	}
	return nil
}

// timeless drops the times of timer effects.
func timeless(effects []string) []string {
	out := make([]string, len(effects))
	for i, e := range effects {
		if strings.HasPrefix(e, "timer ") {
			if j := strings.LastIndex(e, " at "); j > 0 {
				e = e[:j]
			}
		}
		out[i] = e
	}
	return out
}
