package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// The tests in this file hold the validator to a general JSON Schema
// implementation, which is a dependency of the tests only.

var reference = sync.OnceValues(func() (map[Name]*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	for _, n := range Names() {
		b, _ := Bytes(n)
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		if err := c.AddResource(n.ID(), doc); err != nil {
			return nil, err
		}
	}
	out := make(map[Name]*jsonschema.Schema)
	for _, n := range Names() {
		s, err := c.Compile(n.ID())
		if err != nil {
			return nil, err
		}
		out[n] = s
	}
	return out, nil
})

// pointer joins path tokens unambiguously (a token may hold '/').
func pointer(path []string) string {
	var b strings.Builder
	for _, tok := range path {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// referenceLocations lists the instance locations of the reference's
// violations: one per leaf of its error tree.
func referenceLocations(ve *jsonschema.ValidationError, into map[string]bool) {
	if len(ve.Causes) > 0 {
		for _, c := range ve.Causes {
			referenceLocations(c, into)
		}
		return
	}
	into[pointer(ve.InstanceLocation)] = true
}

// signedField reports a date-time the reference accepts through a quirk:
// it reads each time field with strconv.Atoi, so "+1" or "-0" passes as an
// hour. RFC 3339 wants two digits there; the validator is right to refuse.
func signedField(s string) bool {
	if len(s) < 20 {
		return false
	}
	for _, i := range []int{11, 14, 17} {
		if s[i] == '+' || s[i] == '-' {
			return true
		}
	}
	off := s[len(s)-6:]
	return (off[0] == '+' || off[0] == '-') && off[3] == ':' && strings.ContainsAny(off[1:3]+off[4:6], "+-")
}

// agree validates doc with both and fails t when they differ on validity or
// on the set of instance locations.
func agree(t *testing.T, n Name, doc any, label string) {
	t.Helper()
	refs, err := reference()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	if err := refs[n].Validate(doc); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			t.Fatalf("%s %s: reference: %v", n, label, err)
		}
		referenceLocations(ve, want)
	}
	got := map[string]bool{}
	if err := Validate(n, doc); err != nil {
		var ve *ValidationError
		if !errors.As(err, &ve) {
			t.Fatalf("%s %s: %v", n, label, err)
		}
		for _, v := range ve.Violations {
			p := pointer(v.Path)
			if s, ok := v.Value.(string); ok && v.Kind == KindFormat && !want[p] && signedField(s) {
				continue
			}
			got[p] = true
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("%s %s: violations at %v, reference at %v", n, label, slices.Sorted(maps.Keys(got)),
			slices.Sorted(maps.Keys(want)))
	}
}

func parse(t testing.TB, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}

// validDocs has a full valid document of each schema, so that every
// property of every schema is reached by the mutations.
var validDocs = []string{
	`{"healthy":true,"running":false,"message":"m","attrs":{"a":"x","b":1.5,"c":true,"d":-3},"pools":{"p":2,` +
		`"q":0,"r":2.0,"s":9223372036854775807},"reserve":{"mem_gb":0.5}}`,
	`{"ok":true,"changed":false,"escalated":true,"message":""}`,
	`{"running":true,"ready":false,"message":"x"}`,
	`{"objects":[{"id":"c1","kind":"container","labels":{"a":"b","c":"d"},"created_at":"2024-05-01T10:00:00Z",` +
		`"busy":true},{"id":"v","kind":"other","labels":{},"created_at":"2024-12-31T23:59:60.5z"}]}`,
}

// replacements are what a mutation puts in place of a value: every JSON
// type, fractions for integers, out-of-range and huge numbers, date-times
// good and bad, enum members and strangers.
var replacements = []string{
	`"s"`, `""`, `0`, `1`, `-1`, `1.5`, `-0.0`, `2.0`, `2e3`, `1e-400`, `-1e-400`, `1e300`, `-1e300`,
	`9223372036854775807`, `9223372036854775808`, `-9223372036854775809`, `9.223372036854775807e18`,
	`9223372036854775807.5`, `true`, `false`, `null`, `{}`, `[]`, `[1]`, `{"a":1}`, `{"mem_gb":1}`,
	`{"id":"x","kind":"vm","labels":{}}`, `[{"id":"x","kind":"vm","labels":{"k":1}}]`,
	`"2024-05-01T10:00:00Z"`, `"2024-02-30T10:00:00Z"`, `"2024-05-01T10:00:00+02:00"`, `"2024-05-01T10:00:60Z"`,
	`"2024-05-01 10:00:00Z"`, `"yesterday"`, `"container"`, `"vm"`, `"Container"`,
}

// walk calls f with the path of every value in v, the document first.
func walk(v any, path []string, f func([]string)) {
	f(path)
	switch v := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			walk(v[k], append(slices.Clip(path), k), f)
		}
	case []any:
		for i, e := range v {
			walk(e, append(slices.Clip(path), strconv.Itoa(i)), f)
		}
	}
}

// deepCopy copies a generic JSON value.
func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		a := make([]any, len(v))
		for i, e := range v {
			a[i] = deepCopy(e)
		}
		return a
	}
	return v
}

// mutate returns a copy of doc with the value at path changed by op:
// replaced by repl, deleted (op "delete") or, for an object, given an extra
// property (op "extra").
func mutate(doc any, path []string, op string, repl any) any {
	if len(path) == 0 {
		switch op {
		case "replace":
			return deepCopy(repl)
		case "extra":
			if m, ok := doc.(map[string]any); ok {
				m = deepCopy(m).(map[string]any)
				m["zz"] = deepCopy(repl)
				return m
			}
		}
		return doc
	}
	switch d := doc.(type) {
	case map[string]any:
		m := make(map[string]any, len(d))
		maps.Copy(m, d)
		if len(path) == 1 && op == "delete" {
			delete(m, path[0])
			return m
		}
		m[path[0]] = mutate(d[path[0]], path[1:], op, repl)
		return m
	case []any:
		i, _ := strconv.Atoi(path[0])
		a := slices.Clone(d)
		if len(path) == 1 && op == "delete" {
			return slices.Delete(a, i, i+1)
		}
		a[i] = mutate(d[i], path[1:], op, repl)
		return a
	}
	return doc
}

// mutations lists every single mutation of doc.
func mutations(t testing.TB, doc any) []any {
	var out []any
	walk(doc, nil, func(path []string) {
		if len(path) > 0 {
			out = append(out, mutate(doc, path, "delete", nil))
		}
		for _, r := range replacements {
			out = append(out, mutate(doc, path, "replace", parse(t, r)))
		}
		out = append(out, mutate(doc, path, "extra", true), mutate(doc, path, "extra", parse(t, `{"x":[1]}`)))
	})
	return out
}

func TestDifferential(t *testing.T) {
	var docs []any
	for _, s := range validDocs {
		d := parse(t, s)
		docs = append(docs, d)
		docs = append(docs, mutations(t, d)...)
	}
	// Pairs of mutations, chosen with a fixed seed so a failure repeats.
	rng := rand.New(rand.NewPCG(14, 5))
	single := len(docs)
	for range 3000 {
		d := docs[rng.IntN(single)]
		var paths [][]string
		walk(d, nil, func(p []string) { paths = append(paths, p) })
		p := paths[rng.IntN(len(paths))]
		switch rng.IntN(3) {
		case 0:
			docs = append(docs, mutate(d, p, "delete", nil))
		case 1:
			docs = append(docs, mutate(d, p, "extra", parse(t, replacements[rng.IntN(len(replacements))])))
		default:
			docs = append(docs, mutate(d, p, "replace", parse(t, replacements[rng.IntN(len(replacements))])))
		}
	}
	valid := 0
	for i, d := range docs {
		for _, n := range Names() {
			agree(t, n, d, "doc "+strconv.Itoa(i))
			if Validate(n, d) == nil {
				valid++
			}
		}
	}
	t.Logf("%d documents against 4 schemas, %d validations passed", len(docs), valid)
}

// TestDifferentialReportsKinds checks what the location sets cannot: that a
// violation at a location is of the kind the reference reports there.
func TestDifferentialReportsKinds(t *testing.T) {
	refs, err := reference()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range validDocs {
		for i, d := range mutations(t, parse(t, s)) {
			for _, n := range Names() {
				want := map[string]Kind{}
				if err := refs[n].Validate(d); err != nil {
					var ve *jsonschema.ValidationError
					errors.As(err, &ve)
					referenceKinds(t, ve, want)
				}
				got := map[string]Kind{}
				if err := Validate(n, d); err != nil {
					var ve *ValidationError
					errors.As(err, &ve)
					for _, v := range ve.Violations {
						got[pointer(v.Path)+" "+v.Property] = v.Kind
					}
				}
				if !maps.Equal(got, want) {
					t.Errorf("%s mutation %d of %s: %v, reference %v", n, i, s, got, want)
				}
			}
		}
	}
}

func referenceKinds(t *testing.T, ve *jsonschema.ValidationError, into map[string]Kind) {
	if len(ve.Causes) > 0 {
		for _, c := range ve.Causes {
			referenceKinds(t, c, into)
		}
		return
	}
	at := pointer(ve.InstanceLocation)
	switch k := ve.ErrorKind.(type) {
	case *kind.Required:
		for _, p := range k.Missing {
			into[at+" "+p] = KindRequired
		}
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			into[at+" "+p] = KindUnknownProperty
		}
	case *kind.Type:
		into[at+" "] = KindType
	case *kind.Minimum:
		into[at+" "] = KindMinimum
	case *kind.Maximum:
		into[at+" "] = KindMaximum
	case *kind.Enum:
		into[at+" "] = KindEnum
	case *kind.Format:
		into[at+" "] = KindFormat
	default:
		t.Fatalf("reference reports %T at %s", k, at)
	}
}

// tooCostly reports number literals beyond what protocol's parser lets
// through (100 characters, exponent beyond ±400): the reference turns every
// number into a big.Rat, which such literals make slow or fail.
func tooCostly(v any) bool {
	switch v := v.(type) {
	case json.Number:
		s := string(v)
		if len(s) > 100 {
			return true
		}
		if i := strings.IndexAny(s, "eE"); i >= 0 {
			e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
			return err != nil || e > 400 || e < -400
		}
	case map[string]any:
		for _, e := range v {
			if tooCostly(e) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if tooCostly(e) {
				return true
			}
		}
	}
	return false
}

// protocolSeeds reads the documents of package protocol's fuzz corpus: the
// last line of each file is the stdout, []byte("...").
func protocolSeeds(f *testing.F) [][]byte {
	dir := filepath.Join("..", "protocol", "testdata", "fuzz", "FuzzDecode")
	entries, err := os.ReadDir(dir)
	if err != nil {
		f.Fatal(err)
	}
	var out [][]byte
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		last := lines[len(lines)-1]
		lit, ok := strings.CutPrefix(last, "[]byte(")
		lit, ok2 := strings.CutSuffix(lit, ")")
		if !ok || !ok2 {
			f.Fatalf("%s: last line %q is not []byte(...)", e.Name(), last)
		}
		s, err := strconv.Unquote(lit)
		if err != nil {
			f.Fatalf("%s: %v", e.Name(), err)
		}
		out = append(out, []byte(s))
	}
	return out
}

// FuzzDifferential checks that the validator and the reference agree on
// any JSON document, against all four schemas. The seeds are the documents
// of package protocol's fuzz corpus and the valid documents above.
func FuzzDifferential(f *testing.F) {
	for _, s := range protocolSeeds(f) {
		f.Add(s)
	}
	for _, s := range validDocs {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var doc any
		if dec.Decode(&doc) != nil || tooCostly(doc) {
			return
		}
		for _, n := range Names() {
			agree(t, n, doc, string(data))
		}
	})
}
