package protocol

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/oarbank/svcrun/internal/words"
	"github.com/oarbank/svcrun/schemas"
)

// addViolations turns the schema's violations into one short reason each,
// written for whoever maintains the service rather than for schema authors.
func (d *decoder) addViolations(ve *schemas.ValidationError) {
	for _, v := range ve.Violations {
		at := v.Path
		switch v.Kind {
		case schemas.KindRequired:
			d.add(child(at, v.Property), "missing required property")
		case schemas.KindUnknownProperty:
			d.add(child(at, v.Property), "unknown property")
		case schemas.KindType:
			d.add(at, typeMessage(v.Want, v.Got))
		case schemas.KindMinimum:
			d.addf(at, "must be >= %s", v.Bound)
		case schemas.KindMaximum:
			d.addf(at, "must be <= %s", v.Bound)
		case schemas.KindEnum:
			d.addf(at, "must be one of %s, not %s", strings.Join(v.Want, ", "), display(v.Value))
		case schemas.KindFormat:
			// date-time is the only format the validator implements.
			d.addf(at, "must be an RFC 3339 date-time such as 2024-05-01T10:00:00Z, not %s", display(v.Value))
		default:
			// A kind added to the validator later still fails the document
			// readably instead of being dropped.
			d.addf(at, "fails the schema's %s", v.Kind)
		}
	}
}

func child(ptr []string, tok string) []string {
	return append(slices.Clip(ptr), tok)
}

// article names a JSON type the way a sentence does.
func article(t string) string {
	switch t {
	case "boolean", "number", "string":
		return "a " + t
	case "integer", "object", "array":
		return "an " + t
	}
	return t
}

func typeMessage(wantTypes []string, gotType string) string {
	want := make([]string, len(wantTypes))
	for i, w := range wantTypes {
		want[i] = w
		if i == 0 {
			want[i] = article(w)
		}
	}
	var ws string
	switch len(want) {
	case 0:
		ws = "of another type"
	case 1:
		ws = want[0]
	default:
		ws = strings.Join(want[:len(want)-1], ", ") + " or " + want[len(want)-1]
	}
	got := article(gotType)
	if gotType == "number" && slices.Contains(wantTypes, "integer") {
		got = "a fraction"
	}
	return fmt.Sprintf("must be %s, not %s", ws, got)
}

// display shows a JSON value from the document in a message, shortened.
func display(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(words.Clip(v, 64, "…"))
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case nil:
		return "null"
	}
	return words.Clip(fmt.Sprint(v), 64, "…")
}

// sortedReasons renders the reasons sorted by JSON pointer (array indexes in
// numeric order), then by message; reasons about stdout as a whole come
// first.
func (d *decoder) sortedReasons() []string {
	slices.SortStableFunc(d.reasons, func(a, b reason) int {
		if c := comparePointers(a.ptr, b.ptr); c != 0 {
			return c
		}
		return strings.Compare(a.msg, b.msg)
	})
	out := make([]string, 0, len(d.reasons))
	for _, r := range d.reasons {
		var line string
		switch {
		case r.ptr == nil:
			line = r.msg
		case len(r.ptr) == 0:
			line = "document: " + r.msg
		default:
			line = formatPointer(r.ptr) + ": " + r.msg
		}
		if len(out) == 0 || out[len(out)-1] != line {
			out = append(out, line)
		}
	}
	return out
}

func comparePointers(a, b []string) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := compareTokens(a[i], b[i]); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}

func compareTokens(a, b string) int {
	if isIndex(a) && isIndex(b) && len(a) != len(b) {
		return len(a) - len(b)
	}
	return strings.Compare(a, b)
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// formatPointer writes an RFC 6901 JSON pointer. Tokens come from the
// service, so non-printable characters are escaped and long ones shortened,
// to keep the message one readable line.
func formatPointer(ptr []string) string {
	var b strings.Builder
	for _, tok := range ptr {
		b.WriteByte('/')
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
		tok = words.Clip(tok, 64, "…")
		for _, r := range tok {
			if r >= 0x20 && r < 0x7f || r >= 0x80 && unicode.IsPrint(r) {
				b.WriteRune(r)
			} else {
				fmt.Fprintf(&b, `\u%04X`, r)
			}
		}
	}
	return b.String()
}
