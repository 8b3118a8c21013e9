package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/oarbank/svcrun/schemas"
)

// Limits on what the executor collects from an op.
const (
	// MaxStdout is the most stdout a valid result may take. The executor
	// should read at most MaxStdout+1 bytes, so an overrun is visible, or
	// set Output.StdoutTruncated when it stops reading.
	MaxStdout = 1 << 20
	// StderrTailSize is how much of the end of stderr is kept for logs
	// and error messages.
	StderrTailSize = 64 << 10
)

// Output is what the executor collected from one finished op.
type Output struct {
	Stdout []byte
	// StderrTail is the end of stderr; Decode keeps at most the last
	// StderrTailSize bytes of it.
	StderrTail []byte
	// ExitCode is the exit status; 0 means the op succeeded.
	ExitCode int
	// StdoutTruncated says the executor stopped reading stdout at its cap,
	// so stdout was longer than len(Stdout).
	StdoutTruncated bool
}

// Result is a successfully decoded op output. Exactly one of the typed
// fields is set, chosen by Op: Fingerprint for OpFingerprint; OpResult for
// OpStart, OpStop and OpDestroy; Status for OpStatus and OpReady; OwnedList
// for OpListOwned.
type Result struct {
	Op          Op
	Fingerprint *Fingerprint
	OpResult    *OpResult
	Status      *Status
	OwnedList   *OwnedList
	// Warnings are problems that did not fail the op, such as an owned
	// object skipped for a bad id. Each starts with a JSON pointer.
	Warnings []string
}

// Decode turns an op's output into its typed result, or explains why it
// cannot. It is the only place protocol 1 output is interpreted.
//
// The exit status is authoritative. A non-zero exit returns an *OpError
// whatever stdout holds (its message is taken from stdout when stdout is a
// JSON object with one), except that ok:true in the result of start, stop or
// destroy contradicts the exit status and is a *ProtocolError. Exit 0 returns
// a *ProtocolError when stdout is over MaxStdout or was truncated, has a BOM,
// is not valid UTF-8, is not exactly one JSON document, has duplicate keys,
// breaks the op's schema, says ok:false, or (for RoleService) is a fingerprint
// without running. A ProtocolError lists every schema violation, not only
// the first. Any other error means Decode was called wrongly (unknown op, or
// a probe op other than fingerprint).
//
// Decode is safe for concurrent use and does not retain out.Stdout; errors
// alias out.StderrTail.
func Decode(op Op, who Role, out Output) (Result, error) {
	if !op.Valid() {
		return Result{}, fmt.Errorf("protocol: decode: %w %q", ErrUnknownOp, string(op))
	}
	switch who {
	case RoleService:
	case RoleProbe:
		if op != OpFingerprint {
			return Result{}, fmt.Errorf("protocol: decode %s: a probe implements only fingerprint", op)
		}
	default:
		return Result{}, fmt.Errorf("protocol: decode %s: unknown role %d", op, uint8(who))
	}
	tail := out.StderrTail
	if len(tail) > StderrTailSize {
		tail = tail[len(tail)-StderrTailSize:]
	}
	if out.ExitCode != 0 {
		return Result{}, failed(op, out, tail)
	}
	d := decoder{op: op}
	res, ok := d.decode(who, out)
	if !ok {
		return Result{}, &ProtocolError{Op: op, Reasons: d.sortedReasons(), StderrTail: tail}
	}
	return res, nil
}

// failed builds the error for a non-zero exit.
func failed(op Op, out Output, tail []byte) error {
	var msg string
	if len(out.Stdout) <= MaxStdout && !out.StdoutTruncated {
		// Best effort: a failing op may print anything, so a stdout that is
		// not a JSON object is not an error of its own.
		if v, _, err := parseDocument(out.Stdout); err == nil {
			if m, ok := v.(map[string]any); ok {
				msg, _ = m["message"].(string)
				if ok, _ := m["ok"].(bool); ok && op.Schema() == schemas.OpResult {
					return &ProtocolError{
						Op:       op,
						ExitCode: out.ExitCode,
						Reasons: []string{fmt.Sprintf("/ok: true, but the exit status is %d (exit status and ok disagree)",
							out.ExitCode)},
						StderrTail: tail,
					}
				}
			}
		}
	}
	return &OpError{Op: op, ExitCode: out.ExitCode, Message: msg, StderrTail: tail}
}

// decoder collects the reasons of one ProtocolError.
type decoder struct {
	op      Op
	reasons []reason
}

// reason is one problem. A nil ptr means it is about stdout as a whole rather
// than a place in the document ("document" is the empty, non-nil pointer).
type reason struct {
	ptr []string
	msg string
}

func (d *decoder) add(ptr []string, msg string) {
	if ptr == nil {
		ptr = []string{}
	}
	d.reasons = append(d.reasons, reason{ptr: ptr, msg: msg})
}

func (d *decoder) addf(ptr []string, format string, args ...any) {
	d.add(ptr, fmt.Sprintf(format, args...))
}

func (d *decoder) decode(who Role, out Output) (Result, bool) {
	switch {
	case out.StdoutTruncated:
		d.reasons = append(d.reasons, reason{msg: fmt.Sprintf("stdout was cut off at the %s limit", sizeName(MaxStdout))})
		return Result{}, false
	case len(out.Stdout) > MaxStdout:
		d.reasons = append(d.reasons,
			reason{msg: fmt.Sprintf("stdout is %d bytes; the limit is %s", len(out.Stdout), sizeName(MaxStdout))})
		return Result{}, false
	}
	doc, issues, err := parseDocument(out.Stdout)
	if err != nil {
		d.reasons = append(d.reasons, reason{msg: err.Error()})
		return Result{}, false
	}
	for _, is := range issues {
		d.add(is.ptr, is.msg)
	}
	if err := schemas.Validate(d.op.Schema(), doc); err != nil {
		var ve *schemas.ValidationError
		if !errors.As(err, &ve) {
			// The schemas failed to compile: a build defect, but still not
			// something to accept.
			d.reasons = append(d.reasons, reason{msg: err.Error()})
			return Result{}, false
		}
		d.addViolations(ve)
	}
	obj, _ := doc.(map[string]any)
	if obj != nil {
		if ok, isBool := obj["ok"].(bool); isBool && !ok && d.op.Schema() == schemas.OpResult {
			d.add([]string{"ok"}, "false, but the exit status is 0 (exit status and ok disagree)")
		}
		if _, has := obj["running"]; !has && d.op == OpFingerprint && who == RoleService {
			d.add([]string{"running"}, "missing required property (a service must report it)")
		}
	}
	if len(d.reasons) > 0 {
		return Result{}, false
	}
	// The document is valid: from here on its shape is known, and the
	// checked type assertions only guard against a decoder bug.
	res := Result{Op: d.op}
	switch d.op {
	case OpFingerprint:
		res.Fingerprint = d.fingerprint(obj)
	case OpStart, OpStop, OpDestroy:
		res.OpResult = &OpResult{
			OK:        boolField(obj, "ok"),
			Changed:   boolField(obj, "changed"),
			Escalated: boolField(obj, "escalated"),
			Message:   stringField(obj, "message"),
		}
	case OpStatus, OpReady:
		res.Status = &Status{
			Running: boolField(obj, "running"),
			Ready:   boolField(obj, "ready"),
			Message: stringField(obj, "message"),
		}
	case OpListOwned:
		res.OwnedList, res.Warnings = d.ownedList(obj)
	}
	return res, len(d.reasons) == 0
}

func sizeName(n int) string {
	if n%(1<<20) == 0 {
		return strconv.Itoa(n>>20) + " MiB"
	}
	return strconv.Itoa(n) + " bytes"
}

func boolField(m map[string]any, k string) bool {
	b, _ := m[k].(bool)
	return b
}

func stringField(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

func (d *decoder) fingerprint(m map[string]any) *Fingerprint {
	f := &Fingerprint{
		Healthy: boolField(m, "healthy"),
		Message: stringField(m, "message"),
	}
	if r, ok := m["running"].(bool); ok {
		f.Running = &r
	}
	if attrs, ok := m["attrs"].(map[string]any); ok {
		f.Attrs = make(map[string]any, len(attrs))
		for k, v := range attrs {
			if n, isNum := v.(json.Number); isNum {
				x, err := strconv.ParseFloat(string(n), 64)
				if err != nil {
					d.addf([]string{"attrs", k}, "number %s is out of range", n)
					continue
				}
				v = x
			}
			f.Attrs[k] = v
		}
	}
	if pools, ok := m["pools"].(map[string]any); ok {
		f.Pools = make(map[string]int64, len(pools))
		for k, v := range pools {
			n, ok := toInt64(v)
			if !ok {
				d.addf([]string{"pools", k}, "must be an integer from 0 to %d", int64(1<<63-1))
				continue
			}
			f.Pools[k] = n
		}
	}
	if r, ok := m["reserve"].(map[string]any); ok {
		n, _ := r["mem_gb"].(json.Number)
		x, err := strconv.ParseFloat(string(n), 64)
		if err != nil {
			d.addf([]string{"reserve", "mem_gb"}, "number %s is out of range", n)
		}
		f.Reserve = &Reserve{MemGB: x}
	}
	return f
}

// toInt64 converts an integral JSON number such as 2, 2.0 or 2e3 (JSON Schema
// counts all three as integers) to an int64.
func toInt64(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return i, true
	}
	// The parser bounds the literal's length and exponent, so this stays
	// cheap.
	r, ok := new(big.Rat).SetString(string(n))
	if !ok || !r.IsInt() || !r.Num().IsInt64() {
		return 0, false
	}
	return r.Num().Int64(), true
}

func (d *decoder) ownedList(m map[string]any) (*OwnedList, []string) {
	items, _ := m["objects"].([]any)
	l := &OwnedList{Objects: make([]Object, 0, len(items))}
	var warnings []string
	for i, it := range items {
		o, _ := it.(map[string]any)
		id := stringField(o, "id")
		if err := ValidObjectID(id); err != nil {
			// Skipped rather than failing the list: the other objects can
			// still be reaped, and this one can never be destroyed safely.
			warnings = append(warnings, fmt.Sprintf("/objects/%d: skipped: %s", i, oneLine(err.Error(), maxLineShown)))
			continue
		}
		obj := Object{ID: id, Kind: stringField(o, "kind"), Busy: boolField(o, "busy")}
		if labels, ok := o["labels"].(map[string]any); ok {
			obj.Labels = make(map[string]string, len(labels))
			for k, v := range labels {
				obj.Labels[k], _ = v.(string)
			}
		}
		if s, ok := o["created_at"].(string); ok {
			t, err := parseTime(s)
			if err != nil {
				d.addf([]string{"objects", strconv.Itoa(i), "created_at"}, "cannot be read as a time (%s)", timeProblem(err))
			}
			obj.CreatedAt = t
		}
		l.Objects = append(l.Objects, obj)
	}
	return l, warnings
}

// parseTime reads an RFC 3339 date-time. The schema's format check accepts
// the lower-case 't' and 'z' RFC 3339 allows, which time.Parse does not.
func parseTime(s string) (time.Time, error) {
	if strings.ContainsAny(s, "tz") {
		s = strings.Map(func(r rune) rune {
			switch r {
			case 't':
				return 'T'
			case 'z':
				return 'Z'
			}
			return r
		}, s)
	}
	return time.Parse(time.RFC3339Nano, s)
}

// timeProblem shortens time.Parse's message, which repeats the input and the
// layout.
func timeProblem(err error) string {
	var pe *time.ParseError
	if errors.As(err, &pe) && pe.Message != "" {
		return strings.TrimPrefix(pe.Message, ": ")
	}
	return "not RFC 3339"
}
