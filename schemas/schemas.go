package schemas

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
)

// Name identifies one schema of service protocol 1. It is the file name
// without ".schema.json".
type Name string

// The four schemas.
const (
	Fingerprint Name = "service-fingerprint-1"
	OpResult    Name = "service-opresult-1"
	Status      Name = "service-status-1"
	OwnedList   Name = "service-ownedlist-1"
)

// BaseURL is the prefix of every schema's $id.
const BaseURL = "https://schemas.oarbank.dev/"

// File names in this directory (and in the embedded file system).
const (
	FingerprintFile = "service-fingerprint-1.schema.json"
	OpResultFile    = "service-opresult-1.schema.json"
	StatusFile      = "service-status-1.schema.json"
	OwnedListFile   = "service-ownedlist-1.schema.json"
)

// $id of each schema: the URL it is registered and compiled under.
const (
	FingerprintID = BaseURL + FingerprintFile
	OpResultID    = BaseURL + OpResultFile
	StatusID      = BaseURL + StatusFile
	OwnedListID   = BaseURL + OwnedListFile
)

// ErrUnknownSchema is returned (wrapped) for a Name that is not one of the four.
var ErrUnknownSchema = errors.New("unknown schema")

//go:embed *.schema.json
var files embed.FS

// Names lists the four schemas in a fixed order.
func Names() []Name { return []Name{Fingerprint, OpResult, Status, OwnedList} }

// Valid reports whether n is one of the four schemas.
func (n Name) Valid() bool {
	switch n {
	case Fingerprint, OpResult, Status, OwnedList:
		return true
	}
	return false
}

// FileName is the schema's file name, e.g. "service-fingerprint-1.schema.json".
func (n Name) FileName() string { return string(n) + ".schema.json" }

// ID is the schema's $id, e.g.
// "https://schemas.oarbank.dev/service-fingerprint-1.schema.json".
func (n Name) ID() string { return BaseURL + n.FileName() }

func (n Name) String() string { return string(n) }

// Bytes returns a copy of the schema's source, for documentation and tools.
func Bytes(n Name) ([]byte, error) {
	if !n.Valid() {
		return nil, fmt.Errorf("schemas: %w %q", ErrUnknownSchema, string(n))
	}
	b, err := files.ReadFile(n.FileName())
	if err != nil {
		// Unreachable unless the embed pattern and the constants disagree.
		return nil, fmt.Errorf("schemas: read embedded %s: %w", n.FileName(), err)
	}
	return bytes.Clone(b), nil
}

// compiled holds the schemas, built once on first use rather than at init,
// so a process that validates nothing pays nothing.
var compiled = sync.OnceValues(compileAll)

func compileAll() (map[Name]*node, error) {
	out := make(map[Name]*node, 4)
	for _, n := range Names() {
		b, err := files.ReadFile(n.FileName())
		if err != nil {
			return nil, fmt.Errorf("schemas: read embedded %s: %w", n.FileName(), err)
		}
		s, err := compile(n.FileName(), b)
		if err != nil {
			return nil, err
		}
		out[n] = s
	}
	return out, nil
}

// Validate checks doc, a generic JSON value, against schema n. Violations
// are returned as a *ValidationError listing every one, not only the first;
// any other error means n is unknown, the schemas failed to compile or doc
// holds a Go value that is not JSON (errors.Is ErrNotJSON).
func Validate(n Name, doc any) error {
	all, err := compiled()
	if err != nil {
		return err
	}
	s, ok := all[n]
	if !ok {
		return fmt.Errorf("schemas: %w %q", ErrUnknownSchema, string(n))
	}
	var vd validation
	vd.path = vd.pathBuf[:0]
	if err := vd.value(s, doc); err != nil {
		return fmt.Errorf("schemas: validate against %s: %w", n, err)
	}
	if len(vd.out) == 0 {
		return nil
	}
	slices.SortFunc(vd.out, compareViolations)
	return &ValidationError{Schema: n, Violations: vd.out}
}

// ValidateJSON parses data as one JSON document and validates it against n.
// It is meant for tools and tests; the agent decodes op output with package
// protocol, which is stricter (duplicate keys, exit status, sizes).
func ValidateJSON(n Name, data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	// Numbers stay exact: a float64 would round 2^63 down into the pools'
	// range.
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return fmt.Errorf("schemas: parse document for %s: %w", n, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("schemas: parse document for %s: data after the document", n)
	}
	return Validate(n, doc)
}
