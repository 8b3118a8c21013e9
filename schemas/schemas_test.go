package schemas

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

func TestConstantsMatchFiles(t *testing.T) {
	files := map[Name]string{Fingerprint: FingerprintFile, OpResult: OpResultFile, Status: StatusFile, OwnedList: OwnedListFile}
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
	for _, err := range []error{Validate("nope", map[string]any{}), func() error { _, err := Bytes("nope"); return err }()} {
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
		{Fingerprint, `{"healthy":true,"running":false,"message":"m","attrs":{"a":"x","b":1.5,"c":true},"pools":{"p":2.0},"reserve":{"mem_gb":0.5}}`, ""},
		{Fingerprint, `{}`, "missing property 'healthy'"},
		{Fingerprint, `{"healthy":true,"runing":true}`, "additional properties 'runing'"},
		{Fingerprint, `{"healthy":true,"attrs":{"a":{}}}`, "got object, want boolean or number or string"},
		{Fingerprint, `{"healthy":true,"attrs":{"a":null}}`, "got null"},
		{Fingerprint, `{"healthy":true,"pools":{"p":-1}}`, "minimum"},
		{Fingerprint, `{"healthy":true,"pools":{"p":1.5}}`, "want integer"},
		{Fingerprint, `{"healthy":true,"pools":{"p":9223372036854775807}}`, ""},
		{Fingerprint, `{"healthy":true,"pools":{"p":9223372036854775808}}`, "maximum"},
		{Fingerprint, `{"healthy":true,"reserve":{}}`, "missing property 'mem_gb'"},
		{Fingerprint, `{"healthy":true,"reserve":{"mem_gb":-0.1}}`, "minimum"},
		{Fingerprint, `{"healthy":true,"reserve":{"mem_gb":1,"cpu":2}}`, "additional properties 'cpu'"},
		{OpResult, `{"ok":true,"changed":false,"escalated":true,"message":""}`, ""},
		{OpResult, `{"changed":true}`, "missing property 'ok'"},
		{OpResult, `{"ok":"yes"}`, "got string, want boolean"},
		{Status, `{"running":true,"ready":false}`, ""},
		{Status, `{"running":true}`, "missing property 'ready'"},
		{OwnedList, `{"objects":[]}`, ""},
		{OwnedList, `{"objects":[{"id":"c1","kind":"container","labels":{"a":"b"},"created_at":"2024-05-01T10:00:00Z","busy":true}]}`, ""},
		{OwnedList, `{"objects":[{"id":"c1","kind":"box","labels":{}}]}`, "value must be one of"},
		{OwnedList, `{"objects":[{"id":"c1","kind":"vm"}]}`, "missing property 'labels'"},
		{OwnedList, `{"objects":[{"id":"c1","kind":"vm","labels":{"a":1}}]}`, "got number, want string"},
		{OwnedList, `{"objects":[{"id":"c1","kind":"vm","labels":{},"created_at":"yesterday"}]}`, "is not valid date-time"},
		{OwnedList, `{"objects":[{"id":"c1","kind":"vm","labels":{},"extra":1}]}`, "additional properties 'extra'"},
		{OwnedList, `{}`, "missing property 'objects'"},
	}
	for _, c := range cases {
		err := ValidateJSON(c.name, []byte(c.doc))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s %s: %v", c.name, c.doc, err)
		case c.want != "" && err == nil:
			t.Errorf("%s %s: valid, want error containing %q", c.name, c.doc, c.want)
		case c.want != "":
			var ve *jsonschema.ValidationError
			if !errors.As(err, &ve) {
				t.Errorf("%s %s: %T, want *jsonschema.ValidationError", c.name, c.doc, err)
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
