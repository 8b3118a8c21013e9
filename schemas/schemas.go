package schemas

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
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

// compiled holds the schemas, built once on first use.
var compiled = sync.OnceValues(compileAll)

func compileAll() (map[Name]*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	for _, n := range Names() {
		b, err := files.ReadFile(n.FileName())
		if err != nil {
			return nil, fmt.Errorf("schemas: read embedded %s: %w", n.FileName(), err)
		}
		// jsonschema.UnmarshalJSON keeps numbers exact (UseNumber): the pools
		// maximum, 2^63-1, would round up to 2^63 as a float64 and let an
		// overflowing value through.
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("schemas: parse %s: %w", n.FileName(), err)
		}
		if err := c.AddResource(n.ID(), doc); err != nil {
			return nil, fmt.Errorf("schemas: register %s as %s: %w", n.FileName(), n.ID(), err)
		}
	}
	out := make(map[Name]*jsonschema.Schema, 4)
	for _, n := range Names() {
		s, err := c.Compile(n.ID())
		if err != nil {
			return nil, fmt.Errorf("schemas: compile %s: %w", n.ID(), err)
		}
		out[n] = s
	}
	return out, nil
}

// Schema returns the compiled schema n. The result is shared and immutable.
func Schema(n Name) (*jsonschema.Schema, error) {
	all, err := compiled()
	if err != nil {
		return nil, err
	}
	s, ok := all[n]
	if !ok {
		return nil, fmt.Errorf("schemas: %w %q", ErrUnknownSchema, string(n))
	}
	return s, nil
}

// Validate checks doc, a generic JSON value, against schema n. A violation is
// returned as a *jsonschema.ValidationError (every violation, not only the
// first) so callers can walk it; any other error means n is unknown or the
// schemas failed to compile.
func Validate(n Name, doc any) error {
	s, err := Schema(n)
	if err != nil {
		return err
	}
	return s.Validate(doc)
}

// ValidateJSON parses data as one JSON document and validates it against n.
// It is meant for tools and tests; the agent decodes op output with package
// protocol, which is stricter (duplicate keys, exit status, sizes).
func ValidateJSON(n Name, data []byte) error {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("schemas: parse document for %s: %w", n, err)
	}
	return Validate(n, doc)
}
