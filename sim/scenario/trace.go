package scenario

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/protocol"
	"github.com/oarbank/svcrun/sim"
)

// RecordKind says what a trace line is.
type RecordKind uint8

const (
	// RecInput is an input of the scenario: "> acquire l1 ...".
	RecInput RecordKind = iota
	// RecEvent is something the world did: an op finished, a process
	// container emptied: "< done #3 db/kv start: ok".
	RecEvent
	// RecEffect is a decision of the engine: an op to run, an answer, a
	// note, a kill.
	RecEffect
)

// Record is one line of a trace, with what it was made from.
type Record struct {
	At   time.Duration // from Epoch
	Kind RecordKind
	Text string

	Input  *Input        // RecInput (nil for the initial boot)
	Event  engine.Event  // RecEvent, and RecInput when the input is an event
	Effect engine.Effect // RecEffect
	Op     OpInfo        // RunOp effects and OpDone events
}

// OpInfo is what an op ran on.
type OpInfo struct {
	ID     engine.OpID
	Target engine.Target
	Op     protocol.Op
	Args   []string
}

// Line renders the record as a trace line (without the newline).
func (r Record) Line() string {
	prefix := "  "
	switch r.Kind {
	case RecInput:
		prefix = "> "
	case RecEvent:
		prefix = "< "
	}
	return FormatOffset(r.At) + "  " + prefix + r.Text
}

// FormatOffset renders a time from Epoch as seconds with milliseconds,
// right-aligned: "    12.500s".
func FormatOffset(d time.Duration) string {
	ms := d.Milliseconds()
	return fmt.Sprintf("%10s", fmt.Sprintf("%d.%03ds", ms/1000, ms%1000))
}

func fmtDur(d time.Duration) string { return d.String() }

// traced says whether an effect appears in traces: timers and persistence
// are noise there.
func traced(f engine.Effect) bool {
	switch f.(type) {
	case *engine.SetTimer, *engine.CancelTimer, engine.PutLease, engine.DeleteLease, engine.PutService:
		return false
	}
	return true
}

// formatTraceEffect renders an effect for a trace: FormatEffect, with times
// shown from Epoch.
func formatTraceEffect(f engine.Effect) string {
	if a, ok := f.(engine.Admitted); ok && len(a.Services) == 0 {
		return fmt.Sprintf("admitted %s (no service)", a.Lease)
	}
	if r, ok := f.(engine.Renewed); ok {
		if r.Expires.IsZero() {
			return fmt.Sprintf("renewed %s (no ttl)", r.Lease)
		}
		return fmt.Sprintf("renewed %s until %s", r.Lease, strings.TrimSpace(FormatOffset(r.Expires.Sub(sim.Epoch))))
	}
	return engine.FormatEffect(f)
}

// formatDone renders an op's completion.
func formatDone(info OpInfo, known bool, d engine.OpDone) string {
	what := "?"
	if known {
		what = info.Target.String() + " " + string(info.Op)
		if len(info.Args) > 0 {
			what += " " + strings.Join(info.Args, " ")
		}
	}
	head := fmt.Sprintf("done #%d %s: ", d.ID, what)
	o := d.Outcome
	if o.Failure != engine.FailNone {
		return head + string(o.Failure) + ": " + o.Message
	}
	if o.Occupied {
		return head + "ok" + formatResult(o.Result) + " occupied"
	}
	return head + "ok" + formatResult(o.Result)
}

func formatResult(r protocol.Result) string {
	var parts []string
	switch {
	case r.Fingerprint != nil:
		fp := r.Fingerprint
		if fp.Running != nil {
			parts = append(parts, fmt.Sprintf("running=%v", *fp.Running))
		}
		parts = append(parts, fmt.Sprintf("healthy=%v", fp.Healthy))
		if len(fp.Pools) > 0 {
			parts = append(parts, "pools="+formatPools(fp.Pools))
		}
		if fp.Reserve != nil {
			parts = append(parts, fmt.Sprintf("mem_gb=%v", fp.Reserve.MemGB))
		}
		if fp.Message != "" {
			parts = append(parts, fmt.Sprintf("%q", fp.Message))
		}
	case r.OpResult != nil:
		if r.OpResult.Changed {
			parts = append(parts, "changed")
		} else {
			parts = append(parts, "unchanged")
		}
		if r.OpResult.Escalated {
			parts = append(parts, "escalated")
		}
	case r.Status != nil:
		parts = append(parts, fmt.Sprintf("running=%v ready=%v", r.Status.Running, r.Status.Ready))
	case r.OwnedList != nil:
		ids := make([]string, len(r.OwnedList.Objects))
		for i, o := range r.OwnedList.Objects {
			ids[i] = o.ID
		}
		if len(ids) == 0 {
			parts = append(parts, "no objects")
		} else {
			parts = append(parts, fmt.Sprintf("%d object(s): %s", len(ids), strings.Join(ids, ", ")))
		}
	}
	for _, w := range r.Warnings {
		parts = append(parts, "warning: "+w)
	}
	if len(parts) == 0 {
		return ""
	}
	return " " + strings.Join(parts, " ")
}

func formatPools(p map[string]int64) string {
	names := make([]string, 0, len(p))
	for n := range p {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s:%d", n, p[n])
	}
	return strings.Join(parts, ",")
}

// Trace is the text of records, one line each.
func Trace(records []Record) string {
	var b strings.Builder
	for _, r := range records {
		b.WriteString(r.Line())
		b.WriteByte('\n')
	}
	return b.String()
}
