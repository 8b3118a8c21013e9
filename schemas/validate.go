package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// The validator below implements only the part of JSON Schema 2020-12 the
// four schemas use. A general library costs every svcrun process its
// meta-schemas at init; this one costs nothing until the first validation.
// compile refuses any keyword it does not implement, so a schema change that
// needs more cannot silently validate less.

// Kind is the rule a violation breaks.
type Kind uint8

// The kinds of violation, one per implemented assertion.
const (
	// KindType: the value's JSON type is not one of Want; Got is its type.
	KindType Kind = iota + 1
	// KindRequired: the object at Path lacks the required Property.
	KindRequired
	// KindUnknownProperty: the object at Path has Property, which its
	// schema closes out (additionalProperties false).
	KindUnknownProperty
	// KindMinimum: the number is below Bound.
	KindMinimum
	// KindMaximum: the number is above Bound.
	KindMaximum
	// KindEnum: Value is not one of Want.
	KindEnum
	// KindFormat: Value is not a valid Format.
	KindFormat
)

var kindNames = [...]string{
	KindType:            "type",
	KindRequired:        "required",
	KindUnknownProperty: "additionalProperties",
	KindMinimum:         "minimum",
	KindMaximum:         "maximum",
	KindEnum:            "enum",
	KindFormat:          "format",
}

// String is the schema keyword the kind comes from.
func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Violation is one place where a document breaks its schema.
type Violation struct {
	// Path is the instance location as JSON pointer tokens, unescaped;
	// empty for the document itself. For KindRequired and
	// KindUnknownProperty it is the object's location, not the property's.
	Path []string
	Kind Kind
	// Property is the missing or unknown property (KindRequired,
	// KindUnknownProperty).
	Property string
	// Want lists the allowed JSON types in alphabetical order (KindType)
	// or the allowed values in the schema's order (KindEnum).
	Want []string
	// Got is the value's JSON type (KindType): "number" for every number,
	// integral or not, as JSON Schema's type keyword reports it.
	Got string
	// Bound is the limit in lowest terms, e.g. "0" (KindMinimum,
	// KindMaximum).
	Bound string
	// Format is the format the value fails, e.g. "date-time" (KindFormat).
	Format string
	// Value is the offending value (KindEnum, KindFormat).
	Value any
}

// ValidationError lists every violation of one document, sorted by Path.
type ValidationError struct {
	Schema     Name
	Violations []Violation
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "schemas: document breaks %s: ", e.Schema)
	for i, v := range e.Violations {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(v.String())
	}
	return b.String()
}

// String describes the violation for schema authors and tests; package
// protocol words its own reasons for whoever maintains the service.
func (v Violation) String() string {
	at := "document"
	if len(v.Path) > 0 {
		var b strings.Builder
		for _, tok := range v.Path {
			b.WriteByte('/')
			b.WriteString(strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1"))
		}
		at = b.String()
	}
	switch v.Kind {
	case KindType:
		return fmt.Sprintf("%s: type %s, want %s", at, v.Got, strings.Join(v.Want, " or "))
	case KindRequired:
		return fmt.Sprintf("%s: missing required property %q", at, v.Property)
	case KindUnknownProperty:
		return fmt.Sprintf("%s: unknown property %q", at, v.Property)
	case KindMinimum:
		return fmt.Sprintf("%s: below minimum %s", at, v.Bound)
	case KindMaximum:
		return fmt.Sprintf("%s: above maximum %s", at, v.Bound)
	case KindEnum:
		return fmt.Sprintf("%s: %v is not one of %s", at, v.Value, strings.Join(v.Want, ", "))
	case KindFormat:
		return fmt.Sprintf("%s: %q is not a valid %s", at, v.Value, v.Format)
	}
	return fmt.Sprintf("%s: %s", at, v.Kind)
}

// ErrUnsupportedKeyword is returned (wrapped) when a schema file uses a
// keyword, or a value of one, that the validator does not implement.
var ErrUnsupportedKeyword = errors.New("keyword not implemented by the validator")

// ErrNotJSON is returned (wrapped) by Validate for a Go value that is not
// part of the generic JSON form.
var ErrNotJSON = errors.New("not a JSON value")

// jsonType is a set of JSON Schema type names.
type jsonType uint8

const (
	typeNull jsonType = 1 << iota
	typeBoolean
	typeInteger
	typeNumber
	typeString
	typeArray
	typeObject
)

// typeByName is in alphabetical order, the order Violation.Want uses.
var typeByName = []struct {
	name string
	t    jsonType
}{
	{"array", typeArray},
	{"boolean", typeBoolean},
	{"integer", typeInteger},
	{"null", typeNull},
	{"number", typeNumber},
	{"object", typeObject},
	{"string", typeString},
}

// bound is a minimum or maximum, kept exact: the pools maximum, 2^63-1,
// would round up to 2^63 as a float64 and let an overflowing value through.
type bound struct {
	rat   *big.Rat
	i     int64 // rat as an int64, when isInt
	isInt bool
	text  string
}

// node is one compiled (sub)schema.
type node struct {
	types     jsonType // 0: any type
	typeNames []string
	required  []string
	props     map[string]*node
	closed    bool  // additionalProperties: false
	extra     *node // additionalProperties: a schema
	items     *node
	min, max  *bound
	enum      []string
	dateTime  bool
}

// isAnnotation reports a keyword that asserts nothing.
func isAnnotation(k string) bool { return k == "title" || k == "description" }

// compile builds the validator of one schema file. file names the schema in
// errors.
func compile(file string, data []byte) (*node, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("schemas: parse %s: %w", file, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("schemas: parse %s: more than one JSON document", file)
	}
	if s, _ := doc["$schema"].(string); s != "https://json-schema.org/draft/2020-12/schema" {
		return nil, fmt.Errorf("schemas: %s: $schema is %v, want draft 2020-12", file, doc["$schema"])
	}
	if _, ok := doc["$id"].(string); !ok {
		return nil, fmt.Errorf("schemas: %s: $id is missing or not a string", file)
	}
	c := compiler{file: file}
	return c.node(doc, "", true)
}

type compiler struct{ file string }

func (c compiler) errorf(at, format string, args ...any) error {
	return fmt.Errorf("schemas: %s at #%s: %s", c.file, at, fmt.Sprintf(format, args...))
}

func (c compiler) unsupported(at, keyword, why string) error {
	return fmt.Errorf("schemas: %s at #%s: %q%s: %w", c.file, at, keyword, why, ErrUnsupportedKeyword)
}

func (c compiler) sub(v any, at string) (*node, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, c.unsupported(at, "schema", fmt.Sprintf(" of Go type %T (only object schemas are implemented)", v))
	}
	return c.node(m, at, false)
}

func (c compiler) node(s map[string]any, at string, root bool) (*node, error) {
	n := &node{}
	// Sorted so that the first bad keyword named is the same every time.
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := s[k]
		kat := at + "/" + k
		switch {
		case isAnnotation(k):
		case root && (k == "$schema" || k == "$id"):
		case k == "type":
			if err := c.types(n, v, kat); err != nil {
				return nil, err
			}
		case k == "required":
			list, ok := v.([]any)
			if !ok {
				return nil, c.errorf(kat, "required must be an array of strings")
			}
			for _, p := range list {
				ps, ok := p.(string)
				if !ok {
					return nil, c.errorf(kat, "required must be an array of strings")
				}
				n.required = append(n.required, ps)
			}
		case k == "properties":
			props, ok := v.(map[string]any)
			if !ok {
				return nil, c.errorf(kat, "properties must be an object")
			}
			n.props = make(map[string]*node, len(props))
			for p, ps := range props {
				sub, err := c.sub(ps, kat+"/"+p)
				if err != nil {
					return nil, err
				}
				n.props[p] = sub
			}
		case k == "additionalProperties":
			if v == false {
				n.closed = true
				continue
			}
			if _, isBool := v.(bool); isBool {
				return nil, c.unsupported(kat, k, " true (only false or a schema is implemented)")
			}
			sub, err := c.sub(v, kat)
			if err != nil {
				return nil, err
			}
			n.extra = sub
		case k == "items":
			sub, err := c.sub(v, kat)
			if err != nil {
				return nil, err
			}
			n.items = sub
		case k == "minimum" || k == "maximum":
			b, err := c.bound(v, kat)
			if err != nil {
				return nil, err
			}
			if k == "minimum" {
				n.min = b
			} else {
				n.max = b
			}
		case k == "enum":
			list, ok := v.([]any)
			if !ok || len(list) == 0 {
				return nil, c.errorf(kat, "enum must be a non-empty array")
			}
			for _, e := range list {
				es, ok := e.(string)
				if !ok {
					return nil, c.unsupported(kat, k, fmt.Sprintf(" with a value of Go type %T (only strings are implemented)", e))
				}
				n.enum = append(n.enum, es)
			}
		case k == "format":
			if v != "date-time" {
				return nil, c.unsupported(kat, k, fmt.Sprintf(" %v (only date-time is implemented)", v))
			}
			n.dateTime = true
		default:
			return nil, c.unsupported(kat, k, "")
		}
	}
	return n, nil
}

func (c compiler) types(n *node, v any, at string) error {
	var names []any
	switch v := v.(type) {
	case string:
		names = []any{v}
	case []any:
		names = v
	default:
		return c.errorf(at, "type must be a string or an array of strings")
	}
	for _, name := range names {
		found := false
		for _, t := range typeByName {
			if name == t.name {
				n.types |= t.t
				found = true
			}
		}
		if !found {
			return c.errorf(at, "unknown type %v", name)
		}
	}
	for _, t := range typeByName {
		if n.types&t.t != 0 {
			n.typeNames = append(n.typeNames, t.name)
		}
	}
	return nil
}

func (c compiler) bound(v any, at string) (*bound, error) {
	num, ok := v.(json.Number)
	if !ok {
		return nil, c.errorf(at, "must be a number")
	}
	r, ok := new(big.Rat).SetString(string(num))
	if !ok {
		return nil, c.errorf(at, "cannot read %s as a number", num)
	}
	b := &bound{rat: r, text: r.RatString()}
	if r.IsInt() && r.Num().IsInt64() {
		b.i, b.isInt = r.Num().Int64(), true
	}
	return b, nil
}

// validation walks one document. path is a stack shared by the whole walk,
// copied only into a violation, so a valid document costs no allocation.
type validation struct {
	path []string
	out  []Violation
	// pathBuf backs path for documents nested no deeper than protocol 1's.
	pathBuf [8]string
}

func (vd *validation) add(v Violation) {
	v.Path = slices.Clone(vd.path)
	if v.Path == nil {
		v.Path = []string{}
	}
	vd.out = append(vd.out, v)
}

func (vd *validation) value(n *node, v any) error {
	t, err := typeOf(v)
	if err != nil {
		return fmt.Errorf("%T at /%s: %w", v, strings.Join(vd.path, "/"), err)
	}
	// As in JSON Schema, a value of the wrong type, outside the enum or of
	// the wrong format is not checked further.
	if n.types != 0 && n.types&t == 0 && !(n.types&typeInteger != 0 && t == typeNumber && isInteger(v)) {
		got := "number"
		for _, tn := range typeByName {
			if tn.t == t {
				got = tn.name
			}
		}
		vd.add(Violation{Kind: KindType, Want: slices.Clone(n.typeNames), Got: got})
		return nil
	}
	if n.enum != nil {
		s, ok := v.(string)
		if !ok || !slices.Contains(n.enum, s) {
			vd.add(Violation{Kind: KindEnum, Want: slices.Clone(n.enum), Value: v})
			return nil
		}
	}
	if n.dateTime {
		if s, ok := v.(string); ok && !validDateTime(s) {
			vd.add(Violation{Kind: KindFormat, Format: "date-time", Value: v})
			return nil
		}
	}
	switch v := v.(type) {
	case map[string]any:
		return vd.object(n, v)
	case []any:
		if n.items == nil {
			return nil
		}
		for i, e := range v {
			vd.path = append(vd.path, strconv.Itoa(i))
			err := vd.value(n.items, e)
			vd.path = vd.path[:len(vd.path)-1]
			if err != nil {
				return err
			}
		}
	case json.Number, float64:
		if n.min != nil && compare(v, n.min) < 0 {
			vd.add(Violation{Kind: KindMinimum, Bound: n.min.text})
		}
		if n.max != nil && compare(v, n.max) > 0 {
			vd.add(Violation{Kind: KindMaximum, Bound: n.max.text})
		}
	}
	return nil
}

func (vd *validation) object(n *node, obj map[string]any) error {
	for _, p := range n.required {
		if _, ok := obj[p]; !ok {
			vd.add(Violation{Kind: KindRequired, Property: p})
		}
	}
	for k, v := range obj {
		sub := n.props[k]
		if sub == nil {
			sub = n.extra
		}
		if sub == nil {
			if n.closed {
				vd.add(Violation{Kind: KindUnknownProperty, Property: k})
			}
			continue
		}
		vd.path = append(vd.path, k)
		err := vd.value(sub, v)
		vd.path = vd.path[:len(vd.path)-1]
		if err != nil {
			return err
		}
	}
	return nil
}

func typeOf(v any) (jsonType, error) {
	switch v := v.(type) {
	case nil:
		return typeNull, nil
	case bool:
		return typeBoolean, nil
	case json.Number:
		return typeNumber, nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, ErrNotJSON
		}
		return typeNumber, nil
	case string:
		return typeString, nil
	case []any:
		return typeArray, nil
	case map[string]any:
		return typeObject, nil
	}
	return 0, ErrNotJSON
}

// isInteger reports whether a number has no fractional part: JSON Schema
// counts 2.0 and 2e3 as integers.
func isInteger(v any) bool {
	switch v := v.(type) {
	case float64:
		return v == math.Trunc(v)
	case json.Number:
		if plainInteger(string(v)) {
			return true
		}
		r, ok := new(big.Rat).SetString(string(v))
		return ok && r.IsInt()
	}
	return false
}

// plainInteger reports whether s is an optional minus and digits only.
func plainInteger(s string) bool {
	s = strings.TrimPrefix(s, "-")
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

// compare returns the sign of v - b.
func compare(v any, b *bound) int {
	var r *big.Rat
	switch v := v.(type) {
	case json.Number:
		if b.isInt {
			if i, err := strconv.ParseInt(string(v), 10, 64); err == nil {
				switch {
				case i < b.i:
					return -1
				case i > b.i:
					return 1
				}
				return 0
			}
		}
		var ok bool
		if r, ok = new(big.Rat).SetString(string(v)); !ok {
			// Unreachable for what encoding/json or protocol's parser
			// produce; counted as out of range rather than let through.
			return 1
		}
	case float64:
		r = new(big.Rat).SetFloat64(v)
	}
	return r.Cmp(b.rat)
}

// validDateTime reports whether s is an RFC 3339 date-time
// (yyyy-mm-ddThh:mm:ss[.frac](Z|±hh:mm), 'T' and 'Z' in either case), with
// the day within its month and a leap second only at 23:59 UTC.
func validDateTime(s string) bool {
	if len(s) < 20 || s[4] != '-' || s[7] != '-' || s[13] != ':' || s[16] != ':' {
		return false
	}
	if s[10] != 'T' && s[10] != 't' {
		return false
	}
	year, ok1 := digits(s[0:4])
	month, ok2 := digits(s[5:7])
	day, ok3 := digits(s[8:10])
	hour, ok4 := digits(s[11:13])
	minute, ok5 := digits(s[14:16])
	sec, ok6 := digits(s[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) {
		return false
	}
	if month < 1 || month > 12 || day < 1 || day > daysIn(month, year) || hour > 23 || minute > 59 || sec > 60 {
		return false
	}
	rest := s[19:]
	if frac, ok := strings.CutPrefix(rest, "."); ok {
		n := 0
		for n < len(frac) && frac[n] >= '0' && frac[n] <= '9' {
			n++
		}
		if n == 0 {
			return false
		}
		rest = frac[n:]
	}
	utc := hour*60 + minute
	switch {
	case rest == "Z" || rest == "z":
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		oh, okh := digits(rest[1:3])
		om, okm := digits(rest[4:6])
		if !okh || !okm || oh > 23 || om > 59 {
			return false
		}
		off := oh*60 + om
		if rest[0] == '+' {
			off = -off
		}
		utc = ((utc+off)%(24*60) + 24*60) % (24 * 60)
	default:
		return false
	}
	return sec < 60 || utc == 23*60+59
}

// digits reads a fixed-width run of ASCII digits.
func digits(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}

func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// compareViolations orders by path, token by token, then by kind and
// property, so that a document's error reads the same every time.
func compareViolations(a, b Violation) int {
	if c := slices.Compare(a.Path, b.Path); c != 0 {
		return c
	}
	if a.Kind != b.Kind {
		return int(a.Kind) - int(b.Kind)
	}
	return strings.Compare(a.Property, b.Property)
}
