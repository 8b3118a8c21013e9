package scenario

// A journal becomes a scenario: svcrun's event journal holds every input
// of the engine and every op's result; a scenario holds the inputs and fake
// services whose ops give those results. FromJournal writes the second
// from the first and checks, by running it, that the scenario makes the
// engine decide what the journal recorded, step by step. This file holds
// the conversion's walk through the journal; journal_order.go the times of
// the steps, journal_fakes.go what the fakes do, journal_write.go the file.

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/oarbank/svcrun/engine"
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
		return nil, fmt.Errorf(
			"journal: no boot entry: a scenario starts at svcrun's start, and the files hold none (the oldest " +
				"rotated files may be gone)")
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
		return nil, fmt.Errorf("--service %s: no such service in the journal's modules; they have: %s", win.Service,
			strings.Join(c.serviceNames(), ", "))
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

type timedInput struct {
	at   time.Duration
	seq  int // 2 * its step, and 2 * step - 1 for a change before that step
	text string
	// service is the service of a `reset` or `emptied`: one no manifest
	// of the scenario holds is written `unknown`.
	service string
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
	// emptiedStep is the step at which each service's container last
	// emptied.
	emptiedStep map[string]int
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
		t0:          boot.Entry.At,
		timers:      map[engine.TimerKey]time.Duration{},
		timerSeq:    map[engine.TimerKey]int{},
		prev:        stepInfo{input: true},
		ops:         map[engine.OpID]opRun{},
		calls:       map[string]map[protocol.Op]int{},
		scripts:     map[string]map[protocol.Op]*script{},
		running:     map[string]bool{},
		emptiedStep: map[string]int{},
		lost:        map[string]opRun{},
		looked:      map[string]bool{},
		fp:          map[string]fingerprintSays{},
		fpHead:      map[string]fingerprintSays{},
		runHead:     map[string]bool{},
		objects:     map[string]map[string]*ownedObject{},
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
		return unsayable(l, "the engine decides otherwise than the journal recorded (svcsim replay JOURNAL shows "+
			"where): the journal has\n    %s\nthe engine now\n    %s",
			strings.Join(want, "\n    "), strings.Join(have, "\n    "))
	}
	var batch []engine.Effect
	for _, f := range effects {
		switch f := f.(type) {
		case *engine.SetTimer:
			c.sched++
			c.timers[f.Key] = f.At.Sub(sim.Epoch)
			c.timerSeq[f.Key] = c.sched
		case *engine.CancelTimer:
			delete(c.timers, f.Key)
		case *engine.RunOp:
			name := f.Target.String()
			if c.calls[name] == nil {
				c.calls[name] = map[protocol.Op]int{}
			}
			c.sched++
			c.ops[f.ID] = opRun{target: f.Target, op: f.Op, call: c.calls[name][f.Op], start: at, timeout: f.Timeout,
				args: f.Args, step: len(c.want), seq: c.sched, running: c.running[name]}
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
	_, done := ev.(*engine.OpDone)
	_, fire := ev.(engine.Fire)
	c.stepAt, c.stepInput = append(c.stepAt, at), append(c.stepInput, !done && !fire)
	return nil
}

func (c *converter) input(at time.Duration, format string, args ...any) {
	c.inputs = append(c.inputs, timedInput{at: at, seq: 2 * len(c.want), text: fmt.Sprintf(format, args...)})
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
		var err error
		if ev, err = c.reload(l, at, e); err != nil {
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
		c.inputs[len(c.inputs)-1].service = e.Service.String()
		c.running[e.Service.String()] = false
		c.emptiedStep[e.Service.String()] = len(c.want)
	case engine.ContainerPopulated:
		c.input(at, "populated %s", e.Service)
		c.inputs[len(c.inputs)-1].service = e.Service.String()
	case engine.Doctor:
		if e.Reason == "" || strings.Join(strings.Fields(stripComment(e.Reason)), " ") != e.Reason {
			return unsayable(l, "doctor reason %q: a scenario's doctor reason is words separated by single spaces, "+
				"without #", e.Reason)
		}
		c.input(at, "doctor %s", e.Reason)
	case engine.MemoryPressure:
		c.input(at, "pressure")
	case engine.Reset:
		c.input(at, "reset %s", e.Service)
		c.inputs[len(c.inputs)-1].service = e.Service.String()
	case engine.ReapNow:
		c.input(at, "reap")
	case engine.MemberExited:
		if e.Killed {
			c.input(at, "member-exited %s killed", e.Service)
		} else {
			c.input(at, "member-exited %s", e.Service)
		}
		c.inputs[len(c.inputs)-1].service = e.Service.String()
		c.running[e.Service.String()] = false
	case engine.Paused:
		// What fell due during a pause was taken late, in an order the
		// simulator's on-time timers cannot be fitted to step by step.
		return unsayable(l, "svcrun paused for %v: the scenario language replays no pause from a journal", e.Length)
	case engine.Fire:
	case *engine.OpDone:
		var err error
		if at, err = c.done(l, at, *e); err != nil {
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
		return unsayable(l, "svcrun restarted with another node configuration (%+v, was %+v): a scenario's "+
			"`restart` keeps the node", b.Config, c.cfg)
	}
	if got, want := storeIDs(b.State), storeIDs(c.store.State()); got != want {
		return unsayable(l, "the store at this restart held %s, but the journal before it leaves %s (lines "+
			"missing from the journal?)", got, want)
	}
	if !sameSpecs(b.Modules, c.mods) {
		// Its configuration was edited while it was down.
		changes, r, err := c.moduleChanges(l, engine.Reload{Modules: b.Modules})
		if err != nil {
			return err
		}
		if len(r.Modules) > 0 && !sameOrder(r.Modules, c.boot0) {
			return unsayable(l, "the restart lists the modules in another order than the boot: a scenario keeps the "+
				"boot's order")
		}
		c.input(at, "down")
		for _, ch := range changes {
			c.input(at, "%s", ch)
		}
		c.mods = r.Modules
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
		if run.op == protocol.OpStart || run.op == protocol.OpStop {
			c.setDuration(name, run.op, run.call, lostDuration(run), "")
		}
	}
	clear(c.ops)
	return c.run(l, at, engine.Boot{Config: c.cfg, Modules: c.mods, State: c.store.State()})
}

// lostDuration is how long the fake's start or stop lost in a restart
// lasts: its timeout, which the restart came before (the restart drops
// its completion). Longer, the fake would make it a timeout, which stops
// no daemon; an op without a timeout lasts past the end.
func lostDuration(run opRun) time.Duration {
	if run.timeout > 0 {
		return run.timeout
	}
	return -1
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
// removed or given a new manifest, as the scenario's inputs say it. It
// returns the reload as the scenario plays it: a module whose manifest did
// not change keeps the one the engine has, as `enable` and `disable` give
// it, where the journal's decoded copy would make the engine read it again.
func (c *converter) reload(l sim.JournalLine, at time.Duration, r engine.Reload) (engine.Reload, error) {
	why := ""
	if r.Reason != "" {
		if strings.Join(strings.Fields(stripComment(r.Reason)), " ") != r.Reason {
			return r, unsayable(l,
				"the reload's reason %q: a scenario's reason is words separated by single spaces, without #", r.Reason)
		}
		why = " why: " + r.Reason
	}
	changes, r, err := c.moduleChanges(l, r)
	if err != nil {
		return r, err
	}
	allOff := len(r.Modules) == len(c.mods) &&
		!slices.ContainsFunc(r.Modules, func(m engine.ModuleSpec) bool { return m.Enabled })
	switch {
	case len(changes) > 1 && allOff &&
		!slices.ContainsFunc(changes, func(ch string) bool { return !strings.HasPrefix(ch, "disable ") }):
		// svcrun stopping with --stop-services-on-exit.
		changes = []string{"disable-all"}
	case len(changes) == 0:
		// A reload that changed nothing: enabling an enabled module says it.
		// With every module removed, removing one again says it.
		if len(r.Modules) == 0 {
			if len(c.boot0) == 0 {
				return r, unsayable(l, "a reload without any module, in a scenario without modules")
			}
			changes = []string{"remove " + c.boot0[0].Module.Name}
			break
		}
		changes = []string{map[bool]string{true: "enable ",
			false: "disable "}[r.Modules[0].Enabled] + r.Modules[0].Module.Name}
	case len(changes) > 1:
		return r, unsayable(l,
			"one reload changed %d modules (%s): each scenario input changes one, or disables all", len(changes),
			strings.Join(changes, ", "))
	}
	if why != "" && (strings.HasPrefix(changes[0], "remove ") || strings.HasPrefix(changes[0], "reload ")) {
		return r, unsayable(l, "a %s with a reason of its own (%q): only enable, disable and disable-all say one",
			strings.Fields(changes[0])[0], r.Reason)
	}
	if len(r.Modules) > 0 && !sameOrder(r.Modules, c.boot0) {
		return r, unsayable(l,
			"the reload lists the modules in another order than the boot: a scenario keeps the boot's order")
	}
	c.input(at, "%s%s", changes[0], why)
	c.mods = r.Modules
	return r, nil
}

// moduleChanges is what turns the module set the scenario runs into
// r's, as scenario inputs (one per module that changed), and r with each
// module's manifest the scenario's own where it is the same.
func (c *converter) moduleChanges(l sim.JournalLine, r engine.Reload) ([]string, engine.Reload, error) {
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
	r.Modules = slices.Clone(r.Modules)
	for i, m := range r.Modules {
		name := m.Module.Name
		seen[name] = true
		if !known[name] {
			return nil, r, unsayable(l, "module %s appears in a reload; a scenario's modules are those of its boot", name)
		}
		o, was := old[name]
		prev := o.Module
		if !was {
			prev = c.manifestOf(name)
		}
		if was && sameManifest(prev, m.Module) {
			r.Modules[i].Module = prev
		}
		onOff := map[bool]string{true: "enable", false: "disable"}[m.Enabled]
		switch {
		case !sameManifest(prev, m.Module):
			c.later = append(c.later, m.Module)
			if was && o.Enabled == m.Enabled {
				changes = append(changes, "reload "+name)
			} else {
				changes = append(changes, "reload "+name+" "+onOff)
			}
		case !was || o.Enabled != m.Enabled:
			changes = append(changes, onOff+" "+name)
		}
	}
	for _, m := range c.mods {
		if !seen[m.Module.Name] {
			changes = append(changes, "remove "+m.Module.Name)
		}
	}
	return changes, r, nil
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
	return a.Name == b.Name && a.Version == b.Version && reflect.DeepEqual(a.Services, b.Services) &&
		reflect.DeepEqual(a.Probes, b.Probes)
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

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
