package scenario

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/oarbank/svcrun/fakes"
	"github.com/oarbank/svcrun/protocol"
)

// behaviourArgs reads the arguments of `behaviour MODULE/NAME key=value...`;
// timeline says it is an `at T behaviour` input.
func (p *parser) behaviourArgs(line int, args []string, timeline bool) (string, []kv, error) {
	if len(args) < 2 {
		return "", nil, lineError(p.file, line, "usage: behaviour MODULE/NAME key=value...")
	}
	if strings.Contains(args[0], "=") || !strings.Contains(args[0], "/") {
		return "", nil, lineError(p.file, line,
			"behaviour: the first argument is a service or probe as module/name, got %q", args[0])
	}
	kvs := parseKVs(args[1:])
	if timeline {
		for _, a := range kvs {
			if a.Key == "running" || a.Key == "stray" {
				return "", nil, lineError(p.file, line,
					"behaviour: running= only says how a service begins; use crash, or start it through a lease")
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
		if a.Flag && a.Key != "stop_ignored" && a.Key != "contained" && a.Key != "running" && a.Key != "healthy" &&
			a.Key != "stray" {
			return fmt.Errorf("%q needs a value (key=value)", a.Key)
		}
		switch a.Key {
		case "op":
		case "duration", "outcomes":
			if script == nil {
				return fmt.Errorf("%s= needs op= on the same line (op=start duration=2s outcomes=fail,ok)", a.Key)
			}
			if a.Key == "duration" {
				err = parseDurations(script, a.Value)
				break
			}
			script.Outcomes = nil
			for _, o := range strings.Split(a.Value, ",") {
				switch out := fakes.Outcome(o); out {
				case fakes.OK, fakes.Fail, fakes.Protocol, fakes.Timeout, fakes.Hang, fakes.NotReady, fakes.Escalated,
					fakes.Prepare, fakes.Exited:
					script.Outcomes = append(script.Outcomes, out)
				default:
					return fmt.Errorf("outcome %q: use ok, fail, protocol, timeout, hang, not-ready, escalated, prepare or exited", o)
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
		case "contained":
			b.Contained, err = boolOf(a)
		case "running":
			b.Running, err = boolOf(a)
		case "stray":
			b.Stray, err = boolOf(a)
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
			return fmt.Errorf("unknown key %q; keys: ready_after_polls, ready_after, crash_after, stop_ignored, "+
				"contained, running, stray, healthy, pools, mem_gb, attrs, op, duration, outcomes", a.Key)
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

// parseDurations reads `duration=D` (every call lasts D) or
// `duration=D1,D2,...` (the calls in turn, the last repeating).
func parseDurations(script *fakes.OpScript, v string) error {
	list := strings.Split(v, ",")
	ds := make([]time.Duration, len(list))
	for i, x := range list {
		d, err := parseDuration(x)
		if err != nil {
			return fmt.Errorf("%q: %v", x, err)
		}
		ds[i] = d
	}
	script.Duration, script.Durations = ds[0], nil
	if len(ds) > 1 {
		script.Durations = ds
	}
	return nil
}

// parseBehaviourInput reads `at T behaviour MODULE/NAME key=value...`: a
// change of how a fake service or probe behaves from then on.
func (p *parser) parseBehaviourInput(in *Input, args []string) error {
	name, kvs, err := p.behaviourArgs(in.Line, args, true)
	if err != nil {
		return err
	}
	if err := applyBehaviour(&fakes.Behaviour{}, kvs); err != nil {
		return lineError(p.file, in.Line, "behaviour %s: %v", name, err)
	}
	in.Name = "behaviour"
	in.target, in.behaviour = name, kvs
	return nil
}

func (pl *player) playBehaviour(in *Input) error {
	if err := applyBehaviour(pl.behaviours[in.target], in.behaviour); err != nil {
		return lineError(pl.sc.File, in.Line, "%v", err)
	}
	return pl.input(in, in.Text, nil)
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
