package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/oarbank/svcrun/api"
	"github.com/oarbank/svcrun/internal/cli"
)

const statusSynopsis = `[--json] [--socket PATH | --config FILE] [NAME]

Without NAME: the node, its services, probes, leases and memory. With NAME
(a service MODULE/SERVICE, a probe, or a lease id) that one in detail, as
systemctl status does: its state and since when, the processes in its
container, failures and the last reason, its latest fingerprint, pools and
leases, and its recent events.

Flags:`

// runStatus is `svcrun status [--json] [NAME]`.
func runStatus(ctx context.Context, m *cli.Env, args []string) error {
	fs := m.FlagSet("status", statusSynopsis)
	sock := addSocketFlags(m, fs)
	asJSON := m.JSONFlag(fs,
		"print the status as JSON (the API's GET /v1/status; with NAME, that one's part, its processes and events)")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return cli.Usagef("unexpected argument %q: svcrun status takes at most one NAME", fs.Arg(1))
	}
	c, err := sock.dial()
	if err != nil {
		return err
	}
	defer c.Close()
	st, err := c.Status(ctx)
	if err != nil {
		return err
	}
	if fs.NArg() == 1 {
		d, err := detailOf(ctx, c, st, fs.Arg(0))
		if err != nil {
			return err
		}
		if *asJSON {
			return cli.PrintJSON(m.Stdout, d)
		}
		printDetail(m.Stdout, st, d)
		return nil
	}
	if *asJSON {
		return cli.PrintJSON(m.Stdout, st)
	}
	printStatus(m.Stdout, st)
	return nil
}

func printStatus(out io.Writer, st api.Status) {
	up := ""
	if !st.StartedAt.IsZero() {
		up = fmt.Sprintf(", up %s", ago(st.Now, st.StartedAt))
	}
	fmt.Fprintf(out, "node %s (%s)%s\nconfig %s, socket %s\n", st.NodeID, st.Platform, up, st.Config, st.Socket)
	// The sandbox in one line per module; `svcrun sandbox` has the details.
	fmt.Fprintf(out, "sandbox %s: %s\n", st.Sandbox, sandboxNote(st.Sandbox))
	for _, line := range sandboxLines(st.SandboxMissing) {
		fmt.Fprintf(out, "  %s\n", line)
	}
	if st.Containers != "" {
		fmt.Fprintf(out, "containers: %s\n", containersLine(st.Containers))
	}
	if st.StoreUnlinked != "" {
		fmt.Fprintf(out, "state: REFUSING WRITES: %s\n", st.StoreUnlinked)
	} else if st.StoreFull != "" {
		fmt.Fprintf(out, "state: REFUSING NEW AND RENEWED LEASES: %s\n", st.StoreFull)
	}
	fmt.Fprintf(out, "memory budget: %.2f of %g GB reserved by running services; %d op(s) in flight\n",
		st.Memory.UsedGB, st.Memory.BudgetGB, st.OpsInFlight)

	pools := map[string][]api.PoolStatus{}
	for _, p := range st.Pools {
		pools[p.Service] = append(pools[p.Service], p)
	}
	// Each service is a row of short columns, then its indented lines: the
	// latest fingerprint (health, message, attrs) and notes, which may be
	// long, so that the table stays within 100 columns.
	fmt.Fprintln(out)
	var rows []string
	var below [][]string
	for _, s := range st.Services {
		var ps []string
		for _, p := range pools[s.Name] {
			ps = append(ps, fmt.Sprintf("%s %d/%d", p.Name, p.Reserved, p.Offered))
		}
		rows = append(rows,
			fmt.Sprintf("%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s", s.Name, s.Lifecycle, stateCell(s), yesNo(s.Ready), s.Refs,
				s.Failures, dash(strings.Join(ps, ", ")), dash(strings.Join(s.Capabilities, ","))))
		below = append(below, serviceLines(st.Now, s))
	}
	printRows(out, "SERVICE\tLIFECYCLE\tSTATE\tREADY\tREFS\tFAILS\tPOOLS (RES/OFFER)\tCAPABILITIES", rows, below)

	fmt.Fprintln(out)
	rows, below = rows[:0], below[:0]
	for _, p := range st.Probes {
		res := probeResult(p)
		checked := "-"
		if !p.CheckedAt.IsZero() {
			checked = ago(st.Now, p.CheckedAt) + " ago"
		}
		rows = append(rows, fmt.Sprintf("%s\t%s\t%s\t%s", p.Name, p.Capability, res, checked))
		var lines []string
		if p.Message != "" {
			lines = append(lines, "message: "+p.Message)
		}
		if a := attrsText(p.Attrs); a != "" {
			lines = append(lines, "attrs: "+a)
		}
		below = append(below, lines)
	}
	printRows(out, "PROBE\tCAPABILITY\tLAST RESULT\tCHECKED", rows, below)

	fmt.Fprintln(out)
	rows, below = rows[:0], below[:0]
	for _, l := range st.Leases {
		state := "waiting"
		if l.Admitted {
			state = "admitted"
		}
		exp := "-"
		if !l.Expires.IsZero() {
			exp = fmt.Sprintf("%s (in %s)", l.Expires.Local().Format("15:04:05"), l.Expires.Sub(st.Now).Round(time.Second))
		}
		rows = append(rows,
			fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s",
				l.ID, dash(l.Job), l.Attempt, state, dash(strings.Join(l.Services, ",")), dash(needs(l)), exp))
		below = append(below, leaseLines(st.Now, l))
	}
	printRows(out, "LEASE\tJOB\tATTEMPT\tSTATE\tSERVICES\tNEEDS\tEXPIRES", rows, below)
	if len(st.Skipped) > 0 {
		fmt.Fprintf(out, "\nnot loaded on %s: %s\n", st.Platform, strings.Join(st.Skipped, ", "))
	}
}

func sandboxNote(mode string) string {
	switch mode {
	case "require":
		return "an op whose sandbox cannot be applied whole is refused (details: svcrun sandbox)"
	case "best_effort":
		return "ops run with the layers this host can apply (details: svcrun sandbox)"
	}
	return "unknown mode"
}

// printRows prints a table, header and rows of tab-separated cells, each
// row followed by its lines from below, indented. The rows are aligned
// first: tabwriter would end a column at every line without cells.
func printRows(out io.Writer, header string, rows []string, below [][]string) {
	var buf strings.Builder
	tw := tabwriter.NewWriter(&buf, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprintln(tw, r)
	}
	tw.Flush()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	for i, l := range lines {
		fmt.Fprintln(out, strings.TrimRight(l, " "))
		if i > 0 && i <= len(below) {
			for _, b := range below[i-1] {
				fmt.Fprintln(out, "    "+b)
			}
		}
	}
	if len(rows) == 0 {
		fmt.Fprintln(out, "(none)")
	}
}

// serviceLines are the lines under a service's row: its latest
// fingerprint, then its notes.
func serviceLines(now time.Time, s api.ServiceStatus) []string {
	var lines []string
	for _, f := range serviceFacts(now, s) {
		lines = append(lines, f.line())
	}
	return lines
}

// fact is one thing known of a service, for its lines under the table
// (key, sep, value: "fingerprint 4s ago: healthy", "attrs: a=1") and for
// status NAME's fields (key and value; a flag such as frozen has none).
type fact struct{ key, sep, value string }

func (f fact) line() string { return f.key + f.sep + f.value }

// serviceFacts are a service's latest fingerprint, then its notes.
func serviceFacts(now time.Time, s api.ServiceStatus) []fact {
	var facts []fact
	switch {
	case s.FingerprintedAt.IsZero():
		facts = append(facts, fact{"fingerprint", ": ", "none yet"})
	case s.Healthy:
		facts = append(facts, fact{"fingerprint", " ", fmt.Sprintf("%s ago: healthy", ago(now, s.FingerprintedAt))})
	default:
		facts = append(facts,
			fact{"fingerprint", " ", fmt.Sprintf("%s ago: UNHEALTHY: %s", ago(now, s.FingerprintedAt), dash(s.Message))})
	}
	if s.Healthy && s.Message != "" {
		facts[0].value += ": " + s.Message
	}
	if a := attrsText(s.Attrs); a != "" {
		facts = append(facts, fact{"attrs", ": ", a})
	}
	if s.BackoffUntil.After(now) {
		facts = append(facts,
			fact{"backoff until", " ",
				fmt.Sprintf("%s (in %s)", s.BackoffUntil.Local().Format("15:04:05"), s.BackoffUntil.Sub(now).Round(time.Second))})
	}
	if s.Frozen {
		facts = append(facts, fact{"frozen", "", ""})
	}
	if n := serviceNote(s); n != "" {
		facts = append(facts, fact{"note", ": ", n})
	}
	return facts
}

// attrsText is attrs as key=value, sorted by key; strings unquoted unless
// empty or holding a space or a comma.
func attrsText(attrs map[string]any) string {
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		v := fmt.Sprint(attrs[k])
		if s, ok := attrs[k].(string); ok && (s == "" || strings.ContainsAny(s, " ,\"")) {
			v = strconv.Quote(s)
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, ", ")
}

// stateCell is a service's STATE in the table: unhealthy for one marked
// so, which svcrun does not start until a reset (as systemctl shows
// failed), rather than the stopped of an idle one.
func stateCell(s api.ServiceStatus) string {
	if s.Unhealthy {
		return "unhealthy"
	}
	return s.State
}

func serviceNote(s api.ServiceStatus) string {
	var n []string
	if !s.Enabled {
		n = append(n, "module disabled")
	}
	if s.Unhealthy {
		n = append(n, "UNHEALTHY: "+s.Reason+" (svcrun reset "+s.Name+")")
	} else if s.Reason != "" && s.Failures > 0 {
		n = append(n, "last failure: "+s.Reason)
	}
	if s.OpInFlight != "" {
		n = append(n, "running "+s.OpInFlight)
	}
	if s.StopReason != "" {
		n = append(n, "stopping: "+s.StopReason)
	}
	if s.Waiting > 0 {
		n = append(n, fmt.Sprintf("%d waiting", s.Waiting))
	}
	if strings.HasPrefix(s.Container, "process-group") {
		n = append(n, s.Container)
	}
	return strings.Join(n, "; ")
}

func needs(l api.LeaseStatus) string {
	var n []string
	names := make([]string, 0, len(l.Pools))
	for p := range l.Pools {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		n = append(n, fmt.Sprintf("%s=%d", p, l.Pools[p]))
	}
	n = append(n, l.NeedsPools...)
	n = append(n, l.Capabilities...)
	return strings.Join(n, ",")
}

func ago(now, t time.Time) string {
	d := now.Sub(t)
	if d < time.Minute {
		return d.Round(time.Second).String()
	}
	return d.Round(time.Minute).String()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// leaseLines are the lines under a waiting lease's row: since when it
// waits, until when it may, and what for.
func leaseLines(now time.Time, l api.LeaseStatus) []string {
	if l.Admitted {
		return nil
	}
	var when []string
	if !l.AskedAt.IsZero() {
		when = append(when, fmt.Sprintf("waiting %s (since %s)", ago(now, l.AskedAt), l.AskedAt.Local().Format("15:04:05")))
	}
	if !l.WaitUntil.IsZero() {
		when = append(when,
			fmt.Sprintf("may wait until %s (in %s)",
				l.WaitUntil.Local().Format("15:04:05"), l.WaitUntil.Sub(now).Round(time.Second)))
	}
	lines := []string{strings.Join(when, ", ")}
	if l.Waiting != "" {
		lines = append(lines, "waiting: "+l.Waiting)
	}
	return lines
}

// sandboxLines gives, for each module with layers missing, one line naming
// them: "module demo lacks run_as, unix-sockets". The missing list has one
// entry per layer, "module M: runs without LAYER: why".
func sandboxLines(missing []string) []string {
	if len(missing) == 0 {
		return []string{"every module runs with every layer of its sandbox"}
	}
	var order []string
	layers := map[string][]string{}
	for _, m := range missing {
		rest, ok := strings.CutPrefix(m, "module ")
		mod, rest, ok2 := strings.Cut(rest, ": runs without ")
		layer, _, _ := strings.Cut(rest, ":")
		if !ok || !ok2 {
			mod, layer = "", m
		}
		if _, seen := layers[mod]; !seen {
			order = append(order, mod)
		}
		layers[mod] = append(layers[mod], layer)
	}
	var out []string
	for _, mod := range order {
		if mod == "" {
			out = append(out, layers[mod]...)
			continue
		}
		out = append(out, fmt.Sprintf("module %s lacks %s", mod, strings.Join(layers[mod], ", ")))
	}
	return out
}

// containersLine is the containers report in one line: its summary and
// what is missing ("cgroup v2 (one per service, ops cloned into it);
// missing: memory.max, pids.max").
func containersLine(report string) string {
	var summary string
	var missing []string
	for _, l := range strings.Split(strings.TrimSpace(report), "\n") {
		l = strings.TrimSpace(l)
		if rest, ok := strings.CutPrefix(l, "process containers: "); ok {
			summary = rest
		}
		if name, _, ok := strings.Cut(l, ": missing"); ok {
			missing = append(missing, name)
		}
	}
	if summary == "" {
		summary, _, _ = strings.Cut(strings.TrimSpace(report), "\n")
	}
	if len(missing) > 0 {
		summary += "; missing: " + strings.Join(missing, ", ")
	}
	return summary
}

// probeResult is a probe's last result in a word or three.
func probeResult(p api.ProbeStatus) string {
	switch {
	case !p.Enabled:
		return "disabled"
	case !p.Reported:
		return "not reported yet"
	case p.Healthy:
		return "healthy"
	}
	return "unhealthy"
}
