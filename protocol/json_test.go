package protocol

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseDocument(t *testing.T) {
	for _, c := range []struct {
		in   string
		want any
		err  string
	}{
		{in: `0`, want: json.Number("0")},
		{in: ` -1.5e+3 `, want: json.Number("-1.5e+3")},
		{in: `"x"`, want: "x"},
		{in: `true`, want: true},
		{in: "\tnull\r\n", want: nil},
		{in: `[]`, want: []any{}},
		{in: `{}`, want: map[string]any{}},
		{in: `{"a":[1,{"b":null}]}`, want: map[string]any{"a": []any{json.Number("1"), map[string]any{"b": nil}}}},
		{in: `"\u0000"`, want: "\x00"},
		{in: `01`, err: "stdout holds more than one JSON document (the second starts at byte 1)"},
		{in: `1.`, err: "invalid JSON at byte 2: invalid number: want a digit after '.', found end of input"},
		{in: `.5`, err: "invalid JSON at byte 0: unexpected character '.'"},
		{in: `-`, err: "invalid JSON at byte 1: invalid number: want a digit, found end of input"},
		{in: `1e`, err: "invalid JSON at byte 2: invalid number: want a digit in the exponent, found end of input"},
		{in: `+1`, err: "invalid JSON at byte 0: unexpected character '+'"},
		{in: `tru`, err: "invalid JSON at byte 3: unexpected end of input"},
		{in: `nul1`, err: "invalid JSON at byte 3: unexpected character '1'"},
		{in: `NaN`, err: "invalid JSON at byte 0: unexpected character 'N'"},
		{in: `[1,]`, err: "invalid JSON at byte 3: unexpected character ']'"},
		{in: `{"a":1,}`, err: "invalid JSON at byte 7: expected a string key, found character '}'"},
		{in: `{'a':1}`, err: `invalid JSON at byte 1: expected a string key, found character '\''`},
		{in: `[1 2]`, err: "invalid JSON at byte 3: expected ',' or ']' in array, found character '2'"},
		{in: `"a`, err: "invalid JSON at byte 2: unterminated string"},
		{in: `"a\`, err: "invalid JSON at byte 3: unterminated string"},
		{in: `"\x"`, err: "invalid JSON at byte 2: invalid escape in a string: backslash followed by character 'x'"},
		{in: `"\u12"`, err: `invalid JSON at byte 1: invalid \u escape; want 4 hex digits`},
		{in: `"\udc00"`, err: `invalid JSON at byte 1: lone UTF-16 surrogate \uDC00 in a string`},
		{in: `"\ud800\u0041"`, err: `invalid JSON at byte 1: lone UTF-16 surrogate \uD800 in a string`},
		{in: "\u00a0{}", err: "invalid JSON at byte 0: unexpected character U+00A0"},
		{in: "{}\x00", err: "trailing garbage after the JSON document at byte 2: unexpected character U+0000"},
		{in: `{} []`, err: "stdout holds more than one JSON document (the second starts at byte 3)"},
	} {
		got, issues, err := parseDocument([]byte(c.in))
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("parseDocument(%q): %v, want %s", c.in, err, c.err)
			}
			continue
		}
		if err != nil || len(issues) > 0 || !reflect.DeepEqual(got, c.want) {
			t.Errorf("parseDocument(%q) = %#v, %v, %v; want %#v", c.in, got, issues, err, c.want)
		}
	}
}

// FuzzParse checks the parser against encoding/json: they must agree on what
// is one JSON document and on its value, except where this parser is
// stricter on purpose.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5e3,"x\u00e9",true,null]}`, `"\ud83d\ude80"`, `{"a":1,"a":2}`,
		`[[[]]]`, `1 2`, `-0.0e-0`, `"\ud800"`, "\"\\/\"", "{}\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !utf8.Valid(b) {
			return // encoding/json repairs invalid UTF-8; this parser rejects it (tested above)
		}
		got, issues, err := parseDocument(b)
		valid := json.Valid(b)
		if err != nil {
			msg := err.Error()
			if valid && !strings.Contains(msg, "surrogate") && !strings.Contains(msg, "nested deeper") {
				t.Fatalf("rejected %q that encoding/json accepts: %v", b, err)
			}
			return
		}
		if !valid {
			t.Fatalf("accepted %q that encoding/json rejects", b)
		}
		if len(issues) > 0 {
			return // numbers replaced by a stand-in; duplicates reported
		}
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var want any
		if err := d.Decode(&want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("parse %q:\n got %#v\nwant %#v", b, got, want)
		}
	})
}
