package protocol

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// addViolations turns the validator's error tree into one short reason per
// violation. The library's own messages ("additional properties 'runing' not
// allowed", "got number, want integer") are written for schema authors; these
// are for whoever maintains the service.
func (d *decoder) addViolations(ve *jsonschema.ValidationError) {
	if len(ve.Causes) > 0 {
		// Inner nodes only group their causes (schema, $ref, allOf).
		for _, c := range ve.Causes {
			d.addViolations(c)
		}
		return
	}
	at := ve.InstanceLocation
	switch k := ve.ErrorKind.(type) {
	case *kind.Required:
		for _, p := range k.Missing {
			d.add(child(at, p), "missing required property")
		}
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			d.add(child(at, p), "unknown property")
		}
	case *kind.Type:
		d.add(at, typeMessage(k))
	case *kind.Minimum:
		d.addf(at, "must be >= %s", k.Want.RatString())
	case *kind.Maximum:
		d.addf(at, "must be <= %s", k.Want.RatString())
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = fmt.Sprint(w)
		}
		d.addf(at, "must be one of %s, not %s", strings.Join(want, ", "), display(k.Got))
	case *kind.Format:
		if k.Want == "date-time" {
			d.addf(at, "must be an RFC 3339 date-time such as 2024-05-01T10:00:00Z, not %s", display(k.Got))
		} else {
			d.addf(at, "must be a valid %s, not %s", k.Want, display(k.Got))
		}
	case *kind.FalseSchema:
		d.add(at, "not allowed")
	default:
		// Unreachable with the schemas of protocol 1; kept readable for
		// whatever a later schema adds.
		d.addf(at, "fails the schema's %s", strings.Join(k.KeywordPath(), "/"))
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

func typeMessage(k *kind.Type) string {
	want := make([]string, len(k.Want))
	for i, w := range k.Want {
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
	got := article(k.Got)
	if k.Got == "number" && slices.Contains(k.Want, "integer") {
		got = "a fraction"
	}
	return fmt.Sprintf("must be %s, not %s", ws, got)
}

// display shows a JSON value from the document in a message, shortened.
func display(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(clip(v, 64))
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case nil:
		return "null"
	}
	return clip(fmt.Sprint(v), 64)
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
		tok = clip(tok, 64)
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
