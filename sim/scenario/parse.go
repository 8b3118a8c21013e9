package scenario

// Scenario files: a readable script of a simulated node (its modules, how
// the fake services behave, a timeline of inputs) followed by the trace it
// must produce. scenarios/README.md documents the format for people; this
// file parses it.

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/fakes"
	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/protocol"
)

// separator is the line between a scenario's commands and its expected
// trace.
const separator = "----"

// Scenario is a parsed scenario file.
type Scenario struct {
	File    string
	Config  engine.Config
	Modules []Module
	// Inputs are the timeline, in order of time (ties in file order).
	Inputs []Input
	// Until is the virtual time (from Epoch) the scenario runs to.
	Until time.Duration

	// Head is the file up to and including the separator line (one is
	// added when the file has none); Expected is the text after it.
	Head        []byte
	Expected    string
	HasExpected bool

	behaviours []behaviourLine  // before the timeline, in file order
	names      map[string]bool  // services and probes, by full name
	services   map[string]bool  // services only
	modNames   map[string]int   // module name -> index in Modules
	lines      map[string][]int // where each behaviour name was set, for messages
}

// Module is one embedded module.toml.
type Module struct {
	Module  *manifest.Module
	Enabled bool
	Line    int
}

// Input is one timeline command: `at T command args...`.
type Input struct {
	Line int
	At   time.Duration
	Text string // the command and its arguments, as written (spaces collapsed)
	Name string // the command

	ev        engine.Event   // acquire, release, renew, doctor, pressure, reap, reset
	target    string         // crash, object, behaviour: a service or probe; enable, disable, remove: a module
	object    fakes.Object   // object
	createdAt *time.Duration // object: created= (nil: the input's time)
	behaviour []kv           // behaviour
}

type behaviourLine struct {
	line int
	name string
	kvs  []kv
}

// kv is one `key=value` argument, or a bare flag (Flag true, Value "").
type kv struct {
	Key, Value string
	Flag       bool
}

// ParseFile reads and parses a scenario file.
func ParseFile(file string) (*Scenario, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return Parse(file, data)
}

// lineError is an error at a line of a scenario file.
func lineError(file string, line int, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", file, line, fmt.Sprintf(format, args...))
}

// Parse parses a scenario. Every error names the file and the line.
func Parse(file string, data []byte) (*Scenario, error) {
	sc := &Scenario{
		File:     file,
		Config:   engine.Config{NodeID: "n1", Platform: "linux", MemoryBudgetGB: 16},
		names:    map[string]bool{},
		services: map[string]bool{},
		modNames: map[string]int{},
		lines:    map[string][]int{},
	}
	text := string(data)
	lines := strings.SplitAfter(text, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	head := len(lines)
	for i, l := range lines {
		if strings.TrimRight(l, "\r\n") == separator {
			head = i
			break
		}
	}
	if head < len(lines) {
		sc.HasExpected = true
		sc.Head = []byte(strings.Join(lines[:head+1], ""))
		sc.Expected = strings.Join(lines[head+1:], "")
	} else {
		h := strings.Join(lines, "")
		if h != "" && !strings.HasSuffix(h, "\n") {
			h += "\n"
		}
		sc.Head = []byte(h + separator + "\n")
	}

	p := &parser{sc: sc, file: file}
	seenNode, seenRun, seenAt := false, false, false
	var last time.Duration
	for i := 0; i < head; i++ {
		n := i + 1
		raw := strings.TrimRight(lines[i], "\r\n")
		fields := strings.Fields(stripComment(raw))
		if len(fields) == 0 {
			continue
		}
		if seenRun {
			return nil, lineError(file, n, "nothing may follow `run`: it ends the timeline")
		}
		switch fields[0] {
		case "node":
			if seenNode {
				return nil, lineError(file, n, "a second `node` line: one node per scenario")
			}
			if len(sc.Modules) > 0 || seenAt {
				return nil, lineError(file, n, "`node` comes first, before modules and the timeline")
			}
			seenNode = true
			if err := p.node(n, fields[1:]); err != nil {
				return nil, err
			}
		case "module":
			if seenAt {
				return nil, lineError(file, n, "modules come before the timeline (`at` lines)")
			}
			end, err := p.module(n, fields[1:], lines[i+1:head])
			if err != nil {
				return nil, err
			}
			i += end + 1
		case "behaviour", "behavior":
			if seenAt {
				return nil, lineError(file, n, "behaviours come before the timeline; use `at T behaviour ...` to change one during the run")
			}
			name, kvs, err := p.behaviourArgs(n, fields[1:], false)
			if err != nil {
				return nil, err
			}
			sc.behaviours = append(sc.behaviours, behaviourLine{line: n, name: name, kvs: kvs})
		case "at":
			seenAt = true
			if len(fields) < 3 {
				return nil, lineError(file, n, "usage: at TIME COMMAND [ARGS...]")
			}
			at, err := parseDuration(fields[1])
			if err != nil {
				return nil, lineError(file, n, "time %q: %v", fields[1], err)
			}
			if at < last {
				return nil, lineError(file, n, "time %s is before the previous input's %s: the timeline goes forward", fields[1], fmtDur(last))
			}
			last = at
			in, err := p.input(n, at, fields[2:])
			if err != nil {
				return nil, err
			}
			sc.Inputs = append(sc.Inputs, in)
		case "run":
			if len(fields) != 2 {
				return nil, lineError(file, n, "usage: run UNTIL (a time from the start, such as 5m)")
			}
			until, err := parseDuration(fields[1])
			if err != nil {
				return nil, lineError(file, n, "time %q: %v", fields[1], err)
			}
			if until < last {
				return nil, lineError(file, n, "run until %s is before the last input at %s", fields[1], fmtDur(last))
			}
			sc.Until = until
			seenRun = true
		case "end":
			return nil, lineError(file, n, "`end` without `module`")
		default:
			return nil, lineError(file, n, "unknown command %q; commands: node, module ... end, behaviour, at TIME ..., run", fields[0])
		}
	}
	if len(sc.Modules) == 0 {
		return nil, lineError(file, 1, "no module: embed at least one module.toml between `module` and `end`")
	}
	if !seenRun {
		return nil, lineError(file, head, "no `run UNTIL` line: say how long the scenario runs")
	}
	if err := p.checkSet(); err != nil {
		return nil, err
	}
	// Behaviour names must be services or probes of the modules; check
	// them now that every module is known, and check the values once.
	for _, b := range sc.behaviours {
		if err := p.knownName(b.line, b.name); err != nil {
			return nil, err
		}
		if err := applyBehaviour(&fakes.Behaviour{}, b.kvs); err != nil {
			return nil, lineError(file, b.line, "behaviour %s: %v", b.name, err)
		}
	}
	for _, in := range sc.Inputs {
		if err := p.checkInput(in); err != nil {
			return nil, err
		}
	}
	return sc, nil
}

// stripComment drops a `#` comment that starts the line or follows a space.
func stripComment(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '#' && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t') {
			return s[:i]
		}
	}
	return s
}

type parser struct {
	sc   *Scenario
	file string
}

func parseKVs(args []string) []kv {
	out := make([]kv, 0, len(args))
	for _, a := range args {
		if k, v, ok := strings.Cut(a, "="); ok {
			out = append(out, kv{Key: k, Value: v})
		} else {
			out = append(out, kv{Key: a, Flag: true})
		}
	}
	return out
}

func (p *parser) node(line int, args []string) error {
	c := &p.sc.Config
	for _, a := range parseKVs(args) {
		if a.Flag {
			return lineError(p.file, line, "node: %q needs a value (key=value)", a.Key)
		}
		var err error
		switch a.Key {
		case "id":
			c.NodeID = a.Value
		case "platform":
			c.Platform = a.Value
			if a.Value != "linux" && a.Value != "macos" && a.Value != "windows" {
				err = fmt.Errorf("use linux, macos or windows")
			}
		case "budget_gb":
			c.MemoryBudgetGB, err = strconv.ParseFloat(a.Value, 64)
		case "max_ops":
			c.MaxConcurrentOps, err = strconv.Atoi(a.Value)
		case "status":
			c.StatusPeriod, err = parseDuration(a.Value)
		case "fingerprint":
			c.FingerprintPeriod, err = parseDuration(a.Value)
		case "reap":
			c.ReapPeriod, err = parseDuration(a.Value)
		case "ready_poll":
			c.ReadyPoll, err = parseDuration(a.Value)
		case "debounce":
			c.DoctorDebounce, err = parseDuration(a.Value)
		case "force_after":
			c.ForceAfter, err = strconv.Atoi(a.Value)
		default:
			return lineError(p.file, line, "node: unknown key %q; keys: id, platform, budget_gb, max_ops, status, fingerprint, reap, ready_poll, debounce, force_after", a.Key)
		}
		if err != nil {
			return lineError(p.file, line, "node %s=%s: %v", a.Key, a.Value, err)
		}
	}
	return nil
}

// module parses an embedded manifest from the lines after `module` up to
// `end`, and returns the index of the `end` line within rest.
func (p *parser) module(line int, args []string, rest []string) (int, error) {
	enabled := true
	for _, a := range args {
		switch a {
		case "disabled":
			enabled = false
		case "enabled":
		default:
			return 0, lineError(p.file, line, "module: unknown flag %q; use `module` or `module disabled`", a)
		}
	}
	end := -1
	for j, l := range rest {
		if strings.TrimSpace(strings.TrimRight(l, "\r\n")) == "end" {
			end = j
			break
		}
	}
	if end < 0 {
		return 0, lineError(p.file, line, "`module` without its `end` line")
	}
	// Blank lines in front keep the manifest's line numbers those of the
	// scenario file, so its errors point into the file.
	toml := strings.Repeat("\n", line) + strings.Join(rest[:end], "")
	m, err := manifest.Parse(p.file, []byte(toml))
	if err != nil {
		// Errors without a position (about the whole manifest) stand at
		// the `module` line.
		lines := strings.Split(err.Error(), "\n")
		for i, l := range lines {
			if rest, ok := strings.CutPrefix(l, p.file+": "); ok {
				lines[i] = fmt.Sprintf("%s:%d: %s", p.file, line, rest)
			}
		}
		return 0, errors.New(strings.Join(lines, "\n"))
	}
	if _, dup := p.sc.modNames[m.Name]; dup {
		return 0, lineError(p.file, line, "module %q is embedded twice", m.Name)
	}
	p.sc.modNames[m.Name] = len(p.sc.Modules)
	p.sc.Modules = append(p.sc.Modules, Module{Module: m, Enabled: enabled, Line: line})
	for _, s := range m.Services {
		p.sc.names[s.FullName()] = true
		p.sc.services[s.FullName()] = true
	}
	for _, pr := range m.Probes {
		p.sc.names[m.Name+"/"+pr.Name] = true
	}
	return end, nil
}

func (p *parser) checkSet() error {
	var mods []*manifest.Module
	for _, m := range p.sc.Modules {
		mods = append(mods, m.Module)
	}
	// Every module may be enabled at some point of the timeline: the
	// node-wide names must not clash among any of them.
	return manifest.CheckSet(mods)
}

func (p *parser) knownName(line int, name string) error {
	if p.sc.names[name] {
		return nil
	}
	return lineError(p.file, line, "no service or probe %q; the modules have: %s", name, strings.Join(slices.Sorted(maps.Keys(p.sc.names)), ", "))
}

func (p *parser) knownService(line int, name string) error {
	if p.sc.services[name] {
		return nil
	}
	return lineError(p.file, line, "no service %q; the modules have: %s", name, strings.Join(slices.Sorted(maps.Keys(p.sc.services)), ", "))
}

func (p *parser) behaviourArgs(line int, args []string, timeline bool) (string, []kv, error) {
	if len(args) < 2 {
		return "", nil, lineError(p.file, line, "usage: behaviour MODULE/NAME key=value...")
	}
	if strings.Contains(args[0], "=") || !strings.Contains(args[0], "/") {
		return "", nil, lineError(p.file, line, "behaviour: the first argument is a service or probe as module/name, got %q", args[0])
	}
	kvs := parseKVs(args[1:])
	if timeline {
		for _, a := range kvs {
			if a.Key == "running" {
				return "", nil, lineError(p.file, line, "behaviour: running= only says how a service begins; use crash, or start it through a lease")
			}
		}
	}
	return args[0], kvs, nil
}

// applyBehaviour sets the keys on b.
func applyBehaviour(b *fakes.Behaviour, kvs []kv) error {
	var op protocol.Op
	var script *fakes.OpScript
	for _, a := range kvs {
		if a.Key == "op" {
			o, err := protocol.ParseOp(a.Value)
			if err != nil {
				return err
			}
			op = o
			if b.Ops == nil {
				b.Ops = map[protocol.Op]fakes.OpScript{}
			}
			s := b.Ops[op]
			script = &s
		}
	}
	boolOf := func(a kv) (bool, error) {
		if a.Flag {
			return true, nil
		}
		return strconv.ParseBool(a.Value)
	}
	for _, a := range kvs {
		var err error
		if a.Flag && a.Key != "stop_ignored" && a.Key != "running" && a.Key != "healthy" {
			return fmt.Errorf("%q needs a value (key=value)", a.Key)
		}
		switch a.Key {
		case "op":
		case "duration", "outcomes":
			if script == nil {
				return fmt.Errorf("%s= needs op= on the same line (op=start duration=2s outcomes=fail,ok)", a.Key)
			}
			if a.Key == "duration" {
				script.Duration, err = parseDuration(a.Value)
				break
			}
			script.Outcomes = nil
			for _, o := range strings.Split(a.Value, ",") {
				switch out := fakes.Outcome(o); out {
				case fakes.OK, fakes.Fail, fakes.Protocol, fakes.Timeout, fakes.Hang, fakes.NotReady, fakes.Escalated:
					script.Outcomes = append(script.Outcomes, out)
				default:
					return fmt.Errorf("outcome %q: use ok, fail, protocol, timeout, hang, not-ready or escalated", o)
				}
			}
		case "ready_after_polls":
			b.ReadyAfterPolls, err = strconv.Atoi(a.Value)
		case "ready_after":
			b.ReadyAfter, err = parseDuration(a.Value)
		case "crash_after":
			b.CrashAfter, err = parseDuration(a.Value)
		case "stop_ignored":
			b.StopIgnored, err = boolOf(a)
		case "running":
			b.Running, err = boolOf(a)
		case "healthy":
			var h bool
			h, err = boolOf(a)
			b.Healthy = &h
		case "mem_gb":
			b.MemGB, err = strconv.ParseFloat(a.Value, 64)
		case "pools":
			b.Pools, err = parsePools(a.Value)
		case "attrs":
			b.Attrs = map[string]string{}
			for _, pair := range splitList(a.Value) {
				k, v, ok := strings.Cut(pair, ":")
				if !ok {
					return fmt.Errorf("attrs: %q is not name:value", pair)
				}
				b.Attrs[k] = v
			}
		default:
			return fmt.Errorf("unknown key %q; keys: ready_after_polls, ready_after, crash_after, stop_ignored, running, healthy, pools, mem_gb, attrs, op, duration, outcomes", a.Key)
		}
		if err != nil {
			return fmt.Errorf("%s=%s: %v", a.Key, a.Value, err)
		}
	}
	if script != nil {
		b.Ops[op] = *script
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}

func parsePools(s string) (map[string]int64, error) {
	out := map[string]int64{}
	for _, pair := range splitList(s) {
		name, n, ok := strings.Cut(pair, ":")
		if !ok {
			return nil, fmt.Errorf("%q is not pool:count", pair)
		}
		v, err := strconv.ParseInt(n, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("pool %s: %v", name, err)
		}
		out[name] = v
	}
	return out, nil
}

// parseDuration reads a Go duration ("90s", "1m30s", "500ms", "0").
func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("not a duration (use 500ms, 10s, 1m30s, 2h)")
	}
	if d < 0 {
		return 0, fmt.Errorf("must not be negative")
	}
	return d, nil
}

func (p *parser) input(line int, at time.Duration, f []string) (Input, error) {
	in := Input{Line: line, At: at, Name: f[0], Text: strings.Join(f, " ")}
	args := f[1:]
	nargs := func(n int, usage string) error {
		if len(args) != n {
			return lineError(p.file, line, "usage: at T %s", usage)
		}
		return nil
	}
	switch f[0] {
	case "acquire":
		if len(args) < 1 || strings.Contains(args[0], "=") {
			return in, lineError(p.file, line, "usage: at T acquire LEASE attempt=A [job=J] [cap=C,...] [pool=NAME:N,...] [needs=POOL,...] [wait=D] [ttl=D]")
		}
		a := engine.Acquire{Lease: engine.LeaseID(args[0])}
		for _, x := range parseKVs(args[1:]) {
			if x.Flag {
				return in, lineError(p.file, line, "acquire: %q needs a value (key=value)", x.Key)
			}
			var err error
			switch x.Key {
			case "attempt":
				a.Attempt = x.Value
			case "job":
				a.Job = x.Value
			case "cap":
				a.Capabilities = append(a.Capabilities, splitList(x.Value)...)
			case "needs":
				a.NeedsPools = append(a.NeedsPools, splitList(x.Value)...)
			case "pool":
				var ps map[string]int64
				ps, err = parsePools(x.Value)
				for k, v := range ps {
					if a.Pools == nil {
						a.Pools = map[string]int64{}
					}
					a.Pools[k] += v
				}
			case "wait":
				a.Wait, err = parseDuration(x.Value)
			case "ttl":
				a.TTL, err = parseDuration(x.Value)
			default:
				return in, lineError(p.file, line, "acquire: unknown key %q; keys: attempt, job, cap, pool, needs, wait, ttl", x.Key)
			}
			if err != nil {
				return in, lineError(p.file, line, "acquire %s=%s: %v", x.Key, x.Value, err)
			}
		}
		in.ev = a
	case "release":
		if err := nargs(1, "release LEASE"); err != nil {
			return in, err
		}
		in.ev = engine.Release{Lease: engine.LeaseID(args[0])}
	case "renew":
		if err := nargs(1, "renew LEASE"); err != nil {
			return in, err
		}
		in.ev = engine.Renew{Lease: engine.LeaseID(args[0])}
	case "crash":
		if err := nargs(1, "crash MODULE/SERVICE"); err != nil {
			return in, err
		}
		in.target = args[0]
	case "owner-start", "owner-stop":
		// The owner starts or stops a service by hand (a manual one): no
		// op and no event; the engine finds out by fingerprint.
		if err := nargs(1, f[0]+" MODULE/SERVICE"); err != nil {
			return in, err
		}
		in.target = args[0]
	case "reset":
		if err := nargs(1, "reset MODULE/SERVICE"); err != nil {
			return in, err
		}
		in.target = args[0]
		// A name that is no service's gives the zero target, which
		// checkInput refuses.
		t, _ := engine.ServiceTarget(args[0])
		in.ev = engine.Reset{Service: t}
	case "enable", "disable", "remove":
		if err := nargs(1, f[0]+" MODULE"); err != nil {
			return in, err
		}
		in.target = args[0]
	case "restart":
		if err := nargs(0, "restart"); err != nil {
			return in, err
		}
	case "doctor":
		reason := "explicit request"
		if len(args) > 0 {
			reason = strings.Join(args, " ")
		}
		in.ev = engine.Doctor{Reason: reason}
	case "pressure":
		if err := nargs(0, "pressure"); err != nil {
			return in, err
		}
		in.ev = engine.MemoryPressure{}
	case "reap":
		if err := nargs(0, "reap"); err != nil {
			return in, err
		}
		in.ev = engine.ReapNow{}
	case "object":
		return p.objectInput(in, args)
	case "behaviour", "behavior":
		name, kvs, err := p.behaviourArgs(line, args, true)
		if err != nil {
			return in, err
		}
		if err := applyBehaviour(&fakes.Behaviour{}, kvs); err != nil {
			return in, lineError(p.file, line, "behaviour %s: %v", name, err)
		}
		in.Name = "behaviour"
		in.target, in.behaviour = name, kvs
	default:
		return in, lineError(p.file, line, "unknown input %q; inputs: acquire, release, renew, crash, owner-start, owner-stop, object, restart, doctor, pressure, reap, reset, enable, disable, remove, behaviour", f[0])
	}
	return in, nil
}

func (p *parser) objectInput(in Input, args []string) (Input, error) {
	usage := "usage: at T object MODULE/SERVICE id=ID [attempt=A] [node=N] [service=S] [kind=K] [created=T] [busy] [stubborn] [nolabels]"
	if len(args) < 1 || strings.Contains(args[0], "=") {
		return in, lineError(p.file, in.Line, "%s", usage)
	}
	in.target = args[0]
	o := fakes.Object{}
	labels := map[string]string{}
	nolabels := false
	for _, x := range parseKVs(args[1:]) {
		if x.Flag {
			switch x.Key {
			case "busy":
				o.Busy = true
			case "stubborn":
				o.Stubborn = true
			case "nolabels":
				nolabels = true
			default:
				return in, lineError(p.file, in.Line, "object: unknown flag %q; flags: busy, stubborn, nolabels", x.Key)
			}
			continue
		}
		switch x.Key {
		case "id":
			o.ID = x.Value
		case "kind":
			o.Kind = x.Value
		case "attempt":
			labels[protocol.LabelAttemptID] = x.Value
		case "node":
			labels[protocol.LabelNode] = x.Value
		case "service":
			labels[protocol.LabelService] = x.Value
		case "created":
			d, err := parseDuration(x.Value)
			if err != nil {
				return in, lineError(p.file, in.Line, "object created=%s: %v", x.Value, err)
			}
			in.createdAt = &d
		default:
			return in, lineError(p.file, in.Line, "object: unknown key %q; keys: id, kind, attempt, node, service, created", x.Key)
		}
	}
	switch {
	case o.ID == "":
		return in, lineError(p.file, in.Line, "object: id= is required")
	case nolabels && len(labels) > 0:
		return in, lineError(p.file, in.Line, "object: nolabels and label keys (attempt, node, service) exclude each other")
	case !nolabels && len(labels) == 0:
		return in, lineError(p.file, in.Line, "object: give its labels (attempt=, node=, service=) or say nolabels")
	}
	if !nolabels {
		o.Labels = labels
	}
	in.object = o
	return in, nil
}

// checkInput checks the names an input refers to, once every module is
// known.
func (p *parser) checkInput(in Input) error {
	switch in.Name {
	case "crash", "object", "reset":
		return p.knownService(in.Line, in.target)
	case "behaviour":
		return p.knownName(in.Line, in.target)
	case "enable", "disable", "remove":
		if _, ok := p.sc.modNames[in.target]; !ok {
			return lineError(p.file, in.Line, "no module %q; modules: %s", in.target, strings.Join(slices.Sorted(maps.Keys(p.sc.modNames)), ", "))
		}
	}
	return nil
}

// behaviourSet builds fresh behaviours for one run: every service and probe
// gets one, so that `at T behaviour` can change any of them.
func (sc *Scenario) behaviourSet() map[string]*fakes.Behaviour {
	out := make(map[string]*fakes.Behaviour, len(sc.names))
	for n := range sc.names {
		out[n] = &fakes.Behaviour{}
	}
	for _, b := range sc.behaviours {
		// Checked by Parse.
		_ = applyBehaviour(out[b.name], b.kvs)
	}
	return out
}

// Rewritten is the scenario file with trace as its expected part.
func (sc *Scenario) Rewritten(trace string) []byte {
	var b bytes.Buffer
	b.Write(sc.Head)
	b.WriteString(trace)
	return b.Bytes()
}
