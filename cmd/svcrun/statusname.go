package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/oarbank/svcrun/api"
	"github.com/oarbank/svcrun/errdefs"
	"github.com/oarbank/svcrun/internal/cli"
)

// detail is `svcrun status NAME`'s subject: exactly one of Service, Probe
// and Lease, with what is known around it.
type detail struct {
	Service   *api.ServiceStatus `json:"service,omitempty"`
	Probe     *api.ProbeStatus   `json:"probe,omitempty"`
	Lease     *api.LeaseStatus   `json:"lease,omitempty"`
	Processes []api.Process      `json:"processes,omitempty"` // a service's, in its container
	Pools     []api.PoolStatus   `json:"pools,omitempty"`     // a service's
	Leases    []api.LeaseStatus  `json:"leases,omitempty"`    // on a service, or with a probe's capability
	Events    []api.Record       `json:"events"`              // the latest kept ones that name it
}

// recentEvents is how many of a subject's latest events status NAME shows.
const recentEvents = 10

// detailOf finds name among the services, probes and leases of st, and
// gathers the rest from svcrun.
func detailOf(ctx context.Context, c *api.Client, st api.Status, name string) (detail, error) {
	var d detail
	for i, s := range st.Services {
		if s.Name == name {
			d.Service = &st.Services[i]
		}
	}
	for i, p := range st.Probes {
		if p.Name == name {
			d.Probe = &st.Probes[i]
		}
	}
	for i, l := range st.Leases {
		if l.ID == name {
			d.Lease = &st.Leases[i]
		}
	}
	switch {
	case d.Service != nil:
		ps, err := c.Processes(ctx, name)
		if err != nil {
			return d, err
		}
		d.Processes = ps
		for _, p := range st.Pools {
			if p.Service == name {
				d.Pools = append(d.Pools, p)
			}
		}
		for _, l := range st.Leases {
			if slices.Contains(l.Services, name) {
				d.Leases = append(d.Leases, l)
			}
		}
	case d.Probe != nil:
		for _, l := range st.Leases {
			if slices.Contains(l.Capabilities, d.Probe.Capability) {
				d.Leases = append(d.Leases, l)
			}
		}
	case d.Lease == nil:
		return d,
			&cli.Failure{Err: errdefs.ErrNotFound, Msg: fmt.Sprintf("no service, probe or lease %q; %s", name, knownNames(st)),
				Code: api.CodeNotFound}
	}
	ev, err := c.Events(ctx, api.EventsQuery{Since: time.Unix(0, 0).UTC(), NoFollow: true})
	if err != nil {
		return d, err
	}
	defer ev.Close()
	d.Events = []api.Record{}
	for {
		r, err := ev.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return d, fmt.Errorf("the events of %s: %w", name, err)
		}
		if mentions(r.Text, name) {
			d.Events = append(d.Events, r)
		}
	}
	if len(d.Events) > recentEvents {
		d.Events = d.Events[len(d.Events)-recentEvents:]
	}
	return d, nil
}

// mentions tells whether an event's text names name as a whole word
// ("demo/kv: ready", "admitted lease-1 (demo/kv)"), not as part of a
// longer name (demo/kv2).
func mentions(text, name string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], name)
		if j < 0 {
			return false
		}
		end := i + j + len(name)
		if end == len(text) || strings.IndexByte(":, )", text[end]) >= 0 {
			return true
		}
		i = end
	}
}

// knownNames lists what status NAME takes, for an unknown name.
func knownNames(st api.Status) string {
	var names []string
	for _, s := range st.Services {
		names = append(names, s.Name)
	}
	for _, p := range st.Probes {
		names = append(names, p.Name)
	}
	msg := "services and probes: " + dash(strings.Join(names, ", "))
	if len(st.Leases) > 0 {
		msg += fmt.Sprintf("; or one of the %d lease ids svcrun status lists", len(st.Leases))
	}
	return msg
}

func printDetail(out io.Writer, st api.Status, d detail) {
	now := st.Now
	field := func(k, v string) { fmt.Fprintf(out, "  %-13s %s\n", k+":", v) }
	since := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return fmt.Sprintf(" since %s (%s ago)", t.Local().Format("15:04:05"), ago(now, t))
	}
	switch {
	case d.Service != nil:
		s := d.Service
		ready := "not ready"
		if s.Ready {
			ready = "ready"
		}
		fmt.Fprintf(out, "%s: %s%s, %s\n", s.Name, s.State, since(s.StateSince), ready)
		field("lifecycle", fmt.Sprintf("%s, module %s (%s)", s.Lifecycle, s.Module, enabledText(s.Enabled)))
		container := dash(s.Container)
		if s.Contained {
			container += ", holding the daemon: a crash is seen as it empties"
		}
		field("container", container)
		var procs []string
		for _, p := range d.Processes {
			procs = append(procs, fmt.Sprintf("%d %s", p.PID, dash(p.Command)))
		}
		field("processes", dash(strings.Join(procs, ", ")))
		fails := fmt.Sprintf("%d", s.Failures)
		if s.Reason != "" {
			fails += ", last: " + s.Reason
		}
		if s.Unhealthy {
			fails += " (UNHEALTHY: svcrun reset " + s.Name + ")"
		}
		field("failures", fails)
		for _, f := range serviceFacts(now, *s) {
			if f.value == "" {
				f.value = "yes"
			}
			field(f.key, f.value)
		}
		var pools []string
		for _, p := range d.Pools {
			pools = append(pools, fmt.Sprintf("%s %d reserved of %d offered", p.Name, p.Reserved, p.Offered))
		}
		field("pools", dash(strings.Join(pools, ", ")))
		field("capabilities", dash(strings.Join(s.Capabilities, ", ")))
		mem := fmt.Sprintf("reserves %g GB", s.MemGB)
		if s.Charged {
			mem += ", charged against the budget"
		}
		field("memory", mem)
	case d.Probe != nil:
		p := d.Probe
		fmt.Fprintf(out, "%s: probe of capability %s, %s\n", p.Name, p.Capability, probeResult(*p))
		if !p.CheckedAt.IsZero() {
			field("checked", p.CheckedAt.Local().Format("15:04:05")+" ("+ago(now, p.CheckedAt)+" ago)")
		}
		field("message", dash(p.Message))
		field("attrs", dash(attrsText(p.Attrs)))
	default:
		l := d.Lease
		state := "waiting"
		if l.Admitted {
			state = "admitted"
		}
		fmt.Fprintf(out, "%s: %s\n", l.ID, state)
		field("job", dash(l.Job))
		field("attempt", l.Attempt)
		field("services", dash(strings.Join(l.Services, ", ")))
		field("needs", dash(needs(*l)))
		if !l.Expires.IsZero() {
			field("expires",
				fmt.Sprintf("%s (in %s)", l.Expires.Local().Format("15:04:05"), l.Expires.Sub(now).Round(time.Second)))
		}
		for _, line := range leaseLines(now, *l) {
			field("waiting", line)
		}
	}
	if d.Service != nil || d.Probe != nil {
		var ls []string
		for _, l := range d.Leases {
			state := "waiting"
			if l.Admitted {
				state = "admitted"
			}
			ls = append(ls, l.ID+" ("+state+")")
		}
		field("leases", dash(strings.Join(ls, ", ")))
	}
	fmt.Fprintln(out, "\nrecent events:")
	for _, r := range d.Events {
		fmt.Fprintf(out, "  %s %s\n", r.At.Local().Format("15:04:05.000"), r.Text)
	}
	if len(d.Events) == 0 {
		fmt.Fprintln(out, "  (none kept)")
	}
}

func enabledText(on bool) string {
	if on {
		return "enabled"
	}
	return "disabled"
}
