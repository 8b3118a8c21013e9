package schemas

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestConstantsMatchFiles(t *testing.T) {
	files := map[Name]string{Fingerprint: FingerprintFile, OpResult: OpResultFile, Status: StatusFile,
		OwnedList: OwnedListFile}
	ids := map[Name]string{Fingerprint: FingerprintID, OpResult: OpResultID, Status: StatusID, OwnedList: OwnedListID}
	for _, n := range Names() {
		if n.FileName() != files[n] || n.ID() != ids[n] {
			t.Errorf("%s: FileName %q ID %q; constants say %q %q", n, n.FileName(), n.ID(), files[n], ids[n])
		}
		b, err := Bytes(n)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if doc["$id"] != n.ID() {
			t.Errorf("%s: $id %v, want %s", n, doc["$id"], n.ID())
		}
		if doc["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
			t.Errorf("%s: $schema %v, want draft 2020-12", n, doc["$schema"])
		}
		checkClosed(t, n, "", doc)
	}
}

// checkClosed asserts that every object schema either closes its properties
// or constrains all extra ones with a schema (maps such as attrs and pools).
func checkClosed(t *testing.T, n Name, ptr string, s map[string]any) {
	t.Helper()
	if s["type"] == "object" {
		ap, ok := s["additionalProperties"]
		if !ok {
			t.Errorf("%s%s: object without additionalProperties", n, ptr)
		}
		if _, isMap := ap.(map[string]any); !isMap && ap != false {
			t.Errorf("%s%s: additionalProperties is %v, want false or a schema", n, ptr, ap)
		}
	}
	for k, v := range s {
		switch k {
		case "properties":
			for p, sub := range v.(map[string]any) {
				checkClosed(t, n, ptr+"/properties/"+p, sub.(map[string]any))
			}
		case "items", "additionalProperties":
			if sub, ok := v.(map[string]any); ok {
				checkClosed(t, n, ptr+"/"+k, sub)
			}
		}
	}
}

func TestBytesIsACopy(t *testing.T) {
	b, _ := Bytes(Status)
	b[0] = 'X'
	b2, _ := Bytes(Status)
	if b2[0] != '{' {
		t.Fatal("Bytes returned the embedded slice itself")
	}
}

func TestUnknownName(t *testing.T) {
	for _, err := range []error{Validate("nope", map[string]any{}),
		func() error { _, err := Bytes("nope"); return err }()} {
		if !errors.Is(err, ErrUnknownSchema) {
			t.Errorf("got %v, want ErrUnknownSchema", err)
		}
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name Name
		doc  string
		want string // "" = valid; else a substring of the error
	}{
		{Fingerprint, `{"healthy":true}`, ""},
		{Fingerprint, `{"healthy":true,"running":false,"message":"m","attrs":{"a":"x","b":1.5,"c":true},` +
			`"pools":{"p":2.0},"reserve":{"mem_gb":0.5}}`, ""},
		{Fingerprint, `{}`, `document: missing required property "healthy"`},
		{Fingerprint, `{"healthy":true,"runing":true}`, `document: unknown property "runing"`},
		{Fingerprint, `{"healthy":true,"attrs":{"a":{}}}`, "/attrs/a: type object, want boolean or number or string"},
		{Fingerprint, `{"healthy":true,"attrs":{"a":null}}`, "/attrs/a: type null"},
		{Fingerprint, `{"healthy":true,"pools":{"p":-1}}`, "/pools/p: below minimum 0"},
		{Fingerprint, `{"healthy":true,"pools":{"p":1.5}}`, "/pools/p: type number, want integer"},
		{Fingerprint, `{"healthy":true,"pools":{"p":9223372036854775807}}`, ""},
		{Fingerprint, `{"healthy":true,"pools":{"p":9223372036854775808}}`, "/pools/p: above maximum 9223372036854775807"},
		{Fingerprint, `{"healthy":true,"reserve":{}}`, `/reserve: missing required property "mem_gb"`},
		{Fingerprint, `{"healthy":true,"reserve":{"mem_gb":-0.1}}`, "/reserve/mem_gb: below minimum 0"},
		{Fingerprint, `{"healthy":true,"reserve":{"mem_gb":1,"cpu":2}}`, `/reserve: unknown property "cpu"`},
		{OpResult, `{"ok":true,"changed":false,"escalated":true,"message":""}`, ""},
		{OpResult, `{"changed":true}`, `document: missing required property "ok"`},
		{OpResult, `{"ok":"yes"}`, "/ok: type string, want boolean"},
		{Status, `{"running":true,"ready":false}`, ""},
		{Status, `{"running":true}`, `document: missing required property "ready"`},
		{OwnedList, `{"objects":[]}`, ""},
		{OwnedList, `{"objects":[{"id":"c1","kind":"container","labels":{"a":"b"},` +
			`"created_at":"2024-05-01T10:00:00Z","busy":true}]}`, ""},
		{OwnedList, `{"objects":[{"id":"c1","kind":"box","labels":{}}]}`,
			"/objects/0/kind: box is not one of container, vm, volume, process, other"},
		{OwnedList, `{"objects":[{"id":"c1","kind":"vm"}]}`, `/objects/0: missing required property "labels"`},
		{OwnedList, `{"objects":[{"id":"c1","kind":"vm","labels":{"a":1}}]}`,
			"/objects/0/labels/a: type number, want string"},
		{OwnedList, `{"objects":[{"id":"c1","kind":"vm","labels":{},"created_at":"yesterday"}]}`,
			`/objects/0/created_at: "yesterday" is not a valid date-time`},
		{OwnedList, `{"objects":[{"id":"c1","kind":"vm","labels":{},"extra":1}]}`, `/objects/0: unknown property "extra"`},
		{OwnedList, `{}`, `document: missing required property "objects"`},
	}
	for _, c := range cases {
		err := ValidateJSON(c.name, []byte(c.doc))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s %s: %v", c.name, c.doc, err)
		case c.want != "" && err == nil:
			t.Errorf("%s %s: valid, want error containing %q", c.name, c.doc, c.want)
		case c.want != "":
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Errorf("%s %s: %T, want *ValidationError", c.name, c.doc, err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s %s: %v, want it to contain %q", c.name, c.doc, err, c.want)
			}
		}
	}
}

func TestConcurrentFirstUse(t *testing.T) {
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := Validate(Status, map[string]any{"running": true, "ready": true}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
}

// TestUnsupportedKeyword proves that a schema the validator cannot fully
// enforce is refused when it is loaded, naming the file and the keyword,
// rather than validating less than it says.
func TestUnsupportedKeyword(t *testing.T) {
	cases := map[string]string{
		"pattern.schema.json":           `#/properties/id/pattern: "pattern"`,
		"format-email.schema.json":      `#/properties/mail/format: "format" email`,
		"minitems-nested.schema.json":   `#/properties/l/minItems: "minItems"`,
		"additional-true.schema.json":   `#/additionalProperties: "additionalProperties" true`,
		"enum-numbers.schema.json":      `#/enum: "enum" with a value of Go type json.Number`,
		"ref.schema.json":               `#/$defs: "$defs"`,
		"boolean-schema.schema.json":    `#/properties/a: "schema" of Go type bool`,
		"exclusive-minimum.schema.json": `#/exclusiveMinimum: "exclusiveMinimum"`,
	}
	entries, err := os.ReadDir("testdata/unsupported")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(cases) {
		t.Errorf("%d files in testdata/unsupported, %d cases", len(entries), len(cases))
	}
	for file, want := range cases {
		data, err := os.ReadFile(filepath.Join("testdata/unsupported", file))
		if err != nil {
			t.Fatal(err)
		}
		_, err = compile(file, data)
		if !errors.Is(err, ErrUnsupportedKeyword) {
			t.Errorf("%s: %v, want ErrUnsupportedKeyword", file, err)
			continue
		}
		if !strings.Contains(err.Error(), file+" at "+want) {
			t.Errorf("%s: %q, want it to contain %q", file, err, file+" at "+want)
		}
	}
}

func TestEmbeddedSchemasCompile(t *testing.T) {
	for _, n := range Names() {
		b, _ := Bytes(n)
		if _, err := compile(n.FileName(), b); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
}

func TestValidDateTime(t *testing.T) {
	cases := []struct {
		s    string
		want bool
	}{
		{"2024-05-01T10:00:00Z", true},
		{"2024-05-01t10:00:00z", true},
		{"2024-05-01T10:00:00.123456789+02:00", true},
		{"2024-05-01T10:00:00-23:59", true},
		{"2024-02-29T00:00:00Z", true},
		{"2000-02-29T00:00:00Z", true},
		{"1900-02-29T00:00:00Z", false},
		{"2023-02-29T00:00:00Z", false},
		{"2024-04-31T00:00:00Z", false},
		{"2024-13-01T00:00:00Z", false},
		{"2024-00-01T00:00:00Z", false},
		{"2024-05-00T00:00:00Z", false},
		{"2024-05-01T24:00:00Z", false},
		{"2024-05-01T10:60:00Z", false},
		{"2024-05-01T10:00:61Z", false},
		{"2024-12-31T23:59:60Z", true},
		{"2024-12-31T22:59:60-01:00", true},
		{"2024-12-31T10:59:60Z", false},
		{"2024-05-01T10:00:00", false},
		{"2024-05-01 10:00:00Z", false},
		{"2024-05-01T10:00:00.Z", false},
		{"2024-05-01T10:00:00+0200", false},
		{"2024-05-01T10:00:00+24:00", false},
		{"2024-05-01T10:00:00+02:60", false},
		{"2024-05-01T+1:00:00Z", false},
		{"2024-05-01T10:00:00+-1:00", false},
		{"yesterday", false},
		{"", false},
	}
	for _, c := range cases {
		if got := validDateTime(c.s); got != c.want {
			t.Errorf("validDateTime(%q) = %v, want %v", c.s, got, c.want)
		}
	}
}

func BenchmarkValidateFingerprint(b *testing.B) {
	dec := json.NewDecoder(strings.NewReader(`{"healthy":true,"running":true,"message":"colima 0.6.8 running",
"attrs":{"runtime":"docker","version":"0.6.8","cpus":4,"arch":"aarch64","rosetta":true},
"pools":{"docker-slots":4},"reserve":{"mem_gb":8}}`))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := Validate(Fingerprint, doc); err != nil {
			b.Fatal(err)
		}
	}
}

func TestValidateJSONOneDocument(t *testing.T) {
	for _, doc := range []string{`{"running":true,"ready":true} {}`, `{"running":true,"ready":true} x`, `{"running":`} {
		err := ValidateJSON(Status, []byte(doc))
		var ve *ValidationError
		if err == nil || errors.As(err, &ve) {
			t.Errorf("%s: %v, want a parse error", doc, err)
		}
	}
}
