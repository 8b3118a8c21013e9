package scenario

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/sim"
)

// parseStored reads `stored lease ID key=value...` and `stored service
// MODULE/NAME failures=N [unhealthy] [backoff_until=T] [last_used=T] [reason: TEXT]`:
// what svcrun's store held when the scenario's svcrun started (a journal
// replayed from a restart on an older data dir). Times are offsets from
// the start, negative for the past.
func (p *parser) parseStored(line int, args []string) error {
	usage := "usage: stored lease ID attempt=A admitted=T [job=J] [cap=C,...] [pool=NAME:N,...] " +
		"[needs=POOL,...] [ttl=D expires=T], or stored service MODULE/NAME failures=N [unhealthy] " +
		"[backoff_until=T] [last_used=T] [reason: TEXT]"
	if len(args) < 2 || strings.Contains(args[1], "=") {
		return lineError(p.file, line, "%s", usage)
	}
	switch args[0] {
	case "lease":
		r, err := storedLease(args[1], args[2:])
		if err != nil {
			return lineError(p.file, line, "stored lease %s: %v", args[1], err)
		}
		p.sc.Stored = append(p.sc.Stored, engine.PutLease{Lease: r})
	case "service":
		r, err := storedService(args[1], args[2:])
		if err != nil {
			return lineError(p.file, line, "stored service %s: %v", args[1], err)
		}
		p.storedServices = append(p.storedServices, storedAt{line, args[1]})
		p.sc.Stored = append(p.sc.Stored, engine.PutService{Service: r})
	default:
		return lineError(p.file, line, "%s", usage)
	}
	return nil
}

func storedLease(id string, args []string) (engine.LeaseRecord, error) {
	r := engine.LeaseRecord{ID: engine.LeaseID(id)}
	admitted := false
	for _, x := range parseKVs(args) {
		if x.Flag {
			return r, fmt.Errorf("%q needs a value (key=value)", x.Key)
		}
		var err error
		switch x.Key {
		case "attempt":
			r.Attempt = x.Value
		case "job":
			r.Job = x.Value
		case "cap":
			r.Capabilities = append(r.Capabilities, splitList(x.Value)...)
		case "needs":
			r.NeedsPools = append(r.NeedsPools, splitList(x.Value)...)
		case "pool":
			r.Pools, err = parsePools(x.Value)
		case "ttl":
			r.TTL, err = parseDuration(x.Value)
		case "expires":
			r.Expires, err = parseInstant(x.Value)
		case "admitted":
			r.Admitted, err = parseInstant(x.Value)
			admitted = true
		default:
			return r, fmt.Errorf("unknown key %q; keys: attempt, job, cap, pool, needs, ttl, expires, admitted", x.Key)
		}
		if err != nil {
			return r, fmt.Errorf("%s=%s: %v", x.Key, x.Value, err)
		}
	}
	switch {
	case !admitted:
		return r, fmt.Errorf("admitted= is required: a stored lease was admitted")
	case (r.TTL > 0) != !r.Expires.IsZero():
		return r, fmt.Errorf("ttl= and expires= go together")
	}
	return r, nil
}

func storedService(name string, args []string) (engine.ServiceRecord, error) {
	r := engine.ServiceRecord{Name: name}
	if _, err := engine.ServiceTarget(name); err != nil {
		return r, err
	}
	for i, a := range args {
		if a == "reason:" {
			r.Reason = strings.Join(args[i+1:], " ")
			args = args[:i]
			break
		}
	}
	for _, x := range parseKVs(args) {
		var err error
		switch {
		case x.Key == "unhealthy" && x.Flag:
			r.Unhealthy = true
		case x.Key == "failures" && !x.Flag:
			r.Failures, err = strconv.Atoi(x.Value)
		case x.Key == "backoff_until" && !x.Flag:
			r.BackoffUntil, err = parseInstant(x.Value)
		case x.Key == "last_used" && !x.Flag:
			r.LastUsed, err = parseInstant(x.Value)
		default:
			return r, fmt.Errorf(
				"unknown argument %q; arguments: failures=N, unhealthy, backoff_until=T, last_used=T, reason: TEXT (last)", x.Key)
		}
		if err != nil {
			return r, fmt.Errorf("%s=%s: %v", x.Key, x.Value, err)
		}
	}
	return r, nil
}

// parseInstant reads an offset from the start, which may be negative.
func parseInstant(s string) (time.Time, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("not a duration from the start (-1h2m, 500ms)")
	}
	return sim.Epoch.Add(d), nil
}

// storedText writes a store's records as `stored` lines, times as offsets
// from t0.
func storedText(st engine.State, t0 time.Time) ([]string, error) {
	var out []string
	for _, l := range st.Leases {
		a := engine.Acquire{Lease: l.ID, Attempt: l.Attempt, Job: l.Job, Requirements: l.Requirements}
		text, err := acquireText(a)
		if err != nil {
			return nil, err
		}
		line := "stored lease" + strings.TrimPrefix(text, "acquire") + fmt.Sprintf(" admitted=%v", l.Admitted.Sub(t0))
		if l.TTL > 0 {
			line += fmt.Sprintf(" ttl=%v expires=%v", l.TTL, l.Expires.Sub(t0))
		}
		out = append(out, line)
	}
	for _, s := range st.Services {
		line := fmt.Sprintf("stored service %s failures=%d", s.Name, s.Failures)
		if s.Unhealthy {
			line += " unhealthy"
		}
		if !s.BackoffUntil.IsZero() {
			line += fmt.Sprintf(" backoff_until=%v", s.BackoffUntil.Sub(t0))
		}
		if !s.LastUsed.IsZero() {
			line += fmt.Sprintf(" last_used=%v", s.LastUsed.Sub(t0))
		}
		if s.Reason != "" {
			if strings.Join(strings.Fields(stripComment(s.Reason)), " ") != s.Reason {
				return nil, fmt.Errorf(
					"stored service %s: its reason %q is not words separated by single spaces without #", s.Name, s.Reason)
			}
			line += " reason: " + s.Reason
		}
		out = append(out, line)
	}
	return out, nil
}
