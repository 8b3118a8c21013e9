package scenario

// Scenario files: a readable script of a simulated node (its modules, how
// the fake services behave, a timeline of inputs) followed by the trace it
// must produce. scenarios/README.md documents the format for people; this
// file parses its structure and dispatches each command to its own file.

import (
	"bytes"
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
	// Window, when set, is the part of the run the trace shows.
	Window *Window
	// Stored is what the store holds at the start (PutLease and
	// PutService effects), from `stored` lines.
	Stored []engine.Effect

	// Head is the file up to and including the separator line (one is
	// added when the file has none); Expected is the text after it.
	Head        []byte
	Expected    string
	HasExpected bool

	// onStep, when set, sees every engine step of a run: a replayed
	// journal is checked against it.
	onStep func(now time.Time, ev engine.Event, effects []engine.Effect)

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
	// Later are its next manifests (`module later`), one for each
	// `reload` of it, in order.
	Later []*manifest.Module
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
	why       string         // enable, disable, disable-all: the reload's reason
	// switchTo is `enable` or `disable` after `reload MODULE`: the new
	// manifest comes with the module enabled or disabled (back if removed).
	switchTo string
	// unknown marks a `reset`, `emptied` or `populated` of a name no manifest holds.
	unknown bool
	// pause is how long a `pause` input stops svcrun.
	pause time.Duration
	// killed: a `member-exited` whose master, svcrun's child, a signal
	// killed.
	killed bool
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

	p := &parser{sc: sc, file: file, reloads: map[string]int{}}
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
				return nil, lineError(file, n,
					"behaviours come before the timeline; use `at T behaviour ...` to change one during the run")
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
				return nil, lineError(file, n, "time %s is before the previous input's %s: the timeline goes forward",
					fields[1], fmtDur(last))
			}
			last = at
			in, err := p.input(n, at, fields[2:])
			if err != nil {
				return nil, err
			}
			if p.pause != nil && at < p.pause.pauseEnd() && in.Name == "pause" {
				return nil, lineError(file, n, "a pause within the pause of line %d", p.pause.Line)
			}
			if in.Name == "pause" {
				pi := in
				p.pause = &pi
			}
			if err := p.checkWhileDown(&in); err != nil {
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
			if p.pause != nil && until < p.pause.pauseEnd() {
				return nil, lineError(file, n, "run until %s ends within the pause of line %d", fields[1], p.pause.Line)
			}
			sc.Until = until
			seenRun = true
		case "stored":
			if seenAt {
				return nil, lineError(file, n, "`stored` says what the store held at the start: it comes before the timeline")
			}
			if err := p.parseStored(n, fields[1:]); err != nil {
				return nil, err
			}
		case "window":
			if seenAt || p.windowLine > 0 {
				return nil, lineError(file, n, "`window` comes once, before the timeline")
			}
			if err := p.parseWindow(n, fields[1:]); err != nil {
				return nil, err
			}
		case "end":
			return nil, lineError(file, n, "`end` without `module`")
		default:
			return nil, lineError(file, n,
				"unknown command %q; commands: node, module ... end, behaviour, stored, window, at TIME ..., run", fields[0])
		}
	}
	if p.down != nil {
		return nil, lineError(file, p.down.Line, "down: no restart follows; svcrun must start again")
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
	for _, st := range p.storedServices {
		if err := p.knownService(st.line, st.name); err != nil {
			return nil, err
		}
	}
	if sc.Window != nil && sc.Window.Service != "" {
		if err := p.knownService(p.windowLine, sc.Window.Service); err != nil {
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
	sc      *Scenario
	file    string
	reloads map[string]int // `reload` inputs checked so far, by module
	// windowLine is the line of the `window` command (0: none).
	windowLine int
	// storedServices are the services of `stored service` lines, checked
	// once every module is known.
	storedServices []storedAt
	// down is the `down` input whose restart has not come yet (nil:
	// svcrun runs).
	down *Input
	// pause is the latest `pause` input.
	pause *Input
}

type storedAt struct {
	line int
	name string
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

func (p *parser) knownName(line int, name string) error {
	if p.sc.names[name] {
		return nil
	}
	return lineError(p.file, line, "no service or probe %q; the modules have: %s", name,
		strings.Join(slices.Sorted(maps.Keys(p.sc.names)), ", "))
}

func (p *parser) knownService(line int, name string) error {
	if p.sc.services[name] {
		return nil
	}
	return lineError(p.file, line, "no service %q; the modules have: %s", name,
		strings.Join(slices.Sorted(maps.Keys(p.sc.services)), ", "))
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

// input parses one timeline input (`at T` and its fields f). Each input
// has a file of its own with its parser (parseX) and what it does in a run
// (playX); inputs that only send their event need no play of their own.
func (p *parser) input(line int, at time.Duration, f []string) (Input, error) {
	in := Input{Line: line, At: at, Name: f[0], Text: strings.Join(f, " ")}
	args := f[1:]
	var err error
	switch f[0] {
	case "acquire":
		err = p.parseAcquire(&in, args)
	case "release":
		err = p.parseRelease(&in, args)
	case "renew":
		err = p.parseRenew(&in, args)
	case "crash":
		err = p.parseCrash(&in, args)
	case "emptied":
		err = p.parseEmptied(&in, args)
	case "populated":
		err = p.parsePopulated(&in, args)
	case "member-exited":
		err = p.parseMemberExited(&in, args)
	case "pause":
		err = p.parsePause(&in, args)
	case "owner-start", "owner-stop":
		err = p.parseOwner(&in, args)
	case "reset":
		err = p.parseReset(&in, args)
	case "enable", "disable", "remove", "disable-all":
		err = p.parseModuleSwitch(&in, args)
	case "reload":
		err = p.parseReload(&in, args)
	case "restart":
		err = p.parseRestart(&in, args)
	case "down":
		err = p.nargs(&in, args, 0, "down")
	case "doctor":
		err = p.parseDoctor(&in, args)
	case "pressure":
		err = p.parsePressure(&in, args)
	case "reap":
		err = p.parseReap(&in, args)
	case "object":
		err = p.parseObject(&in, args)
	case "behaviour", "behavior":
		err = p.parseBehaviourInput(&in, args)
	default:
		err = lineError(p.file, line,
			"unknown input %q; inputs: acquire, release, renew, crash, emptied, populated, member-exited, pause, "+
				"owner-start, owner-stop, object, down, restart, doctor, pressure, reap, reset, enable, disable, "+
				"disable-all, remove, reload, behaviour", f[0])
	}
	return in, err
}

// nargs checks that an input has exactly n arguments.
func (p *parser) nargs(in *Input, args []string, n int, usage string) error {
	if len(args) != n {
		return lineError(p.file, in.Line, "usage: at T %s", usage)
	}
	return nil
}

// checkInput checks the names an input refers to, once every module is
// known.
func (p *parser) checkInput(in Input) error {
	switch in.Name {
	case "reset", "emptied", "populated":
		return p.checkService(in)
	case "crash", "member-exited", "object", "owner-start", "owner-stop":
		return p.knownService(in.Line, in.target)
	case "behaviour":
		return p.knownName(in.Line, in.target)
	case "enable", "disable", "remove", "reload":
		i, ok := p.sc.modNames[in.target]
		if !ok {
			return lineError(p.file, in.Line, "no module %q; modules: %s", in.target,
				strings.Join(slices.Sorted(maps.Keys(p.sc.modNames)), ", "))
		}
		if in.Name == "reload" {
			return p.checkReload(in, &p.sc.Modules[i])
		}
	}
	return nil
}

// Rewritten is the scenario file with trace as its expected part.
func (sc *Scenario) Rewritten(trace string) []byte {
	var b bytes.Buffer
	b.Write(sc.Head)
	b.WriteString(trace)
	return b.Bytes()
}
