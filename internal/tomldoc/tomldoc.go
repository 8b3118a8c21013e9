// Package tomldoc reads a TOML file into a tree that remembers where every key
// and value stands, and checks it field by field, collecting every error.
//
// It is the common ground of the two TOML files the project reads, a module's
// module.toml and the node's svcrun.toml. Both must reject bad input whole and
// say, for each mistake, the file, the line and column, the field and the
// reason: a struct decoder stops at the first type error and knows no
// positions, so the loaders walk the document through a Table instead.
//
// go-toml/v2 does the TOML semantics (syntax, duplicate keys, redefined
// tables); a second pass over its unstable parser's AST indexes the positions
// of keys and array elements by their path in the tree.
package tomldoc

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/oarbank/svcrun/internal/suggest"
	"github.com/oarbank/svcrun/internal/words"

	"github.com/oarbank/svcrun/internal/utf8off"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// Pos is a 1-based line and column in a file. The zero Pos means unknown.
type Pos struct{ Line, Col int }

// FieldError is one mistake in a file.
type FieldError struct {
	File   string
	Pos    Pos
	Field  string // dotted path with indexes, e.g. services[1].restart.max_failures
	Reason string
}

func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Pos.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Pos.Line, e.Pos.Col)
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Reason)
	return b.String()
}

// ErrorList is every mistake found in one or more files, in file and position
// order. Its Error prints one per line.
type ErrorList []*FieldError

func (l ErrorList) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Sort orders the list by file, then position, then field, so that messages
// come out in reading order whatever order the checks ran in.
func (l ErrorList) Sort() {
	sort.SliceStable(l, func(i, j int) bool {
		a, b := l[i], l[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line < b.Pos.Line
		}
		if a.Pos.Col != b.Pos.Col {
			return a.Pos.Col < b.Pos.Col
		}
		return a.Field < b.Field
	})
}

// Err returns the list as an error, or nil when it is empty.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	l.Sort()
	return l
}

// Doc is a parsed TOML file and the errors found while checking it.
type Doc struct {
	File string
	root map[string]any
	pos  map[string]Pos
	// lines holds the offset of each line's first byte, for position.
	lines []int
	errs  ErrorList
}

// Parse reads data as the TOML file named file (the name is used in
// messages only). A syntax error, a duplicate key or a redefined table is
// returned as an ErrorList of one.
func Parse(file string, data []byte) (*Doc, error) {
	d := &Doc{File: file, pos: map[string]Pos{}}
	if !utf8.Valid(data) {
		off := utf8off.Invalid(data)
		line, col := lineCol(data, off)
		return nil, ErrorList{{File: file, Pos: Pos{line, col}, Reason: "not valid UTF-8"}}
	}
	if err := toml.Unmarshal(data, &d.root); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			line, col := de.Position()
			return nil, ErrorList{{File: file, Pos: Pos{line, col}, Reason: strings.TrimPrefix(de.Error(), "toml: ")}}
		}
		return nil, ErrorList{{File: file, Reason: err.Error()}}
	}
	if d.root == nil {
		d.root = map[string]any{}
	}
	d.indexPositions(data)
	return d, nil
}

// Root is the document's top-level table.
func (d *Doc) Root() *Table {
	return &Table{doc: d, m: d.root, seen: map[string]bool{}}
}

// Errors returns what the checks found so far, sorted.
func (d *Doc) Errors() ErrorList {
	d.errs.Sort()
	return d.errs
}

// Err is Errors as an error, nil when there are none.
func (d *Doc) Err() error { return d.Errors().Err() }

// Errorf records a mistake that belongs to no particular key.
func (d *Doc) Errorf(format string, args ...any) {
	d.errs = append(d.errs, &FieldError{File: d.File, Reason: fmt.Sprintf(format, args...)})
}

func posKey(parts []string) string { return strings.Join(parts, "\x00") }

// lookup returns the position of path, or of its nearest ancestor that has
// one, so that every message points somewhere useful.
func (d *Doc) lookup(path []string) Pos {
	for n := len(path); n > 0; n-- {
		if p, ok := d.pos[posKey(path[:n])]; ok {
			return p
		}
	}
	return Pos{}
}

// indexPositions walks the AST and records the position of every key and
// array element under its concrete path: array tables get their index as a
// path part, as they have in the decoded tree.
func (d *Doc) indexPositions(data []byte) {
	var p unstable.Parser
	p.Reset(data)
	d.lines = lineStarts(data)
	arrayTables := map[string]bool{} // concrete path (without index) -> is an array of tables
	counts := map[string]int{}       // concrete path of an array table -> elements so far
	var current []string
	// resolve turns the key parts of a header into a concrete path, inserting
	// the current index after every prefix that is an array of tables.
	resolve := func(parts []string) []string {
		var out []string
		for _, k := range parts {
			out = append(out, k)
			if arrayTables[posKey(out)] {
				out = append(out, strconv.Itoa(counts[posKey(out)]-1))
			}
		}
		return out
	}
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			parts, first := keyParts(e.Key())
			if e.Kind == unstable.ArrayTable {
				parent := resolve(parts[:len(parts)-1])
				path := append(parent, parts[len(parts)-1])
				k := posKey(path)
				arrayTables[k] = true
				counts[k]++
				current = append(path, strconv.Itoa(counts[k]-1))
			} else {
				current = resolve(parts)
			}
			d.record(current, &p, first)
		case unstable.KeyValue:
			d.keyValue(&p, current, e)
		}
	}
}

func (d *Doc) keyValue(p *unstable.Parser, base []string, kv *unstable.Node) {
	parts, first := keyParts(kv.Key())
	path := append(append([]string(nil), base...), parts...)
	d.record(path, p, first)
	d.value(p, path, kv.Value())
}

func (d *Doc) value(p *unstable.Parser, path []string, v *unstable.Node) {
	switch v.Kind {
	case unstable.Array:
		i := 0
		for it := v.Children(); it.Next(); {
			n := it.Node()
			el := append(append([]string(nil), path...), strconv.Itoa(i))
			d.record(el, p, n)
			d.value(p, el, n)
			i++
		}
	case unstable.InlineTable:
		for it := v.Children(); it.Next(); {
			if n := it.Node(); n.Kind == unstable.KeyValue {
				d.keyValue(p, path, n)
			}
		}
	}
}

func (d *Doc) record(path []string, p *unstable.Parser, n *unstable.Node) {
	if n == nil || n.Raw.Length == 0 {
		return
	}
	k := posKey(path)
	if _, ok := d.pos[k]; ok {
		return
	}
	d.pos[k] = d.position(int(n.Raw.Offset))
}

// lineStarts returns the offset at which each line of data begins.
func lineStarts(data []byte) []int {
	starts := []int{0}
	for i, c := range data {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// position is the line and byte column of offset, as the parser's Shape
// counts them. Shape scans the document from its start for every key, which
// made a manifest of 1,000 services take a quarter of a second to index
// (quadratic); a search of the line starts does not.
func (d *Doc) position(offset int) Pos {
	line := sort.Search(len(d.lines), func(i int) bool { return d.lines[i] > offset })
	return Pos{line, offset - d.lines[line-1] + 1}
}

func keyParts(it unstable.Iterator) ([]string, *unstable.Node) {
	var parts []string
	var first *unstable.Node
	for it.Next() {
		if first == nil {
			first = it.Node()
		}
		parts = append(parts, string(it.Node().Data))
	}
	return parts, first
}

func lineCol(b []byte, off int) (int, int) {
	line, col := 1, 1
	for _, c := range b[:off] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

// Table is one TOML table being checked. Every getter marks its key as known;
// Close reports the keys nobody asked for. Getters never fail: a missing or
// mistyped value records an error and yields the default, so that one pass
// finds every mistake.
type Table struct {
	doc   *Doc
	path  []string // concrete path, for positions
	field string   // path for people: services[1].restart
	m     map[string]any
	seen  map[string]bool
	known []string
	// parent is the table this one is a key of (nil for the root): an
	// unknown key that a parent knows was written below the wrong header.
	parent *Table
}

// Field is the table's path as messages print it ("" for the root).
func (t *Table) Field() string { return t.field }

func (t *Table) fieldOf(key string) string {
	key = quoteKey(key)
	if t.field == "" {
		return key
	}
	return t.field + "." + key
}

// quoteKey writes a key as TOML would need it: bare when it can be, else
// quoted, so that a key with a dot, a space or a newline cannot garble a
// message.
func quoteKey(k string) string {
	if k == "" {
		return `""`
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return strconv.Quote(k)
		}
	}
	return k
}

func (t *Table) pathOf(key string) []string {
	return append(append([]string(nil), t.path...), key)
}

// Pos is where key stands, or the table itself when the key is absent.
func (t *Table) Pos(key string) Pos { return t.doc.lookup(t.pathOf(key)) }

// Has reports whether key is present, and marks it as known.
func (t *Table) Has(key string) bool {
	t.mark(key)
	_, ok := t.m[key]
	return ok
}

func (t *Table) mark(key string) {
	if !t.seen[key] {
		t.seen[key] = true
		t.known = append(t.known, key)
	}
}

func (t *Table) get(key string) (any, bool) {
	t.mark(key)
	v, ok := t.m[key]
	return v, ok
}

// Errorf records a mistake in the value of key.
func (t *Table) Errorf(key string, format string, args ...any) {
	t.doc.errs = append(t.doc.errs, &FieldError{
		File: t.doc.File, Pos: t.Pos(key), Field: t.fieldOf(key), Reason: fmt.Sprintf(format, args...),
	})
}

// ElemErrorf records a mistake in element i of the array at key.
func (t *Table) ElemErrorf(key string, i int, format string, args ...any) {
	p := append(t.pathOf(key), strconv.Itoa(i))
	t.doc.errs = append(t.doc.errs, &FieldError{
		File: t.doc.File, Pos: t.doc.lookup(p), Field: fmt.Sprintf("%s[%d]", t.fieldOf(key), i),
		Reason: fmt.Sprintf(format, args...),
	})
}

// String returns the string at key, or def when it is absent or mistyped.
func (t *Table) String(key, def string) string {
	v, ok := t.get(key)
	if !ok {
		return def
	}
	s, isStr := v.(string)
	if !isStr {
		t.Errorf(key, "must be a string, got %s", describe(v))
		return def
	}
	return s
}

// Bool returns the boolean at key, or def.
func (t *Table) Bool(key string, def bool) bool {
	v, ok := t.get(key)
	if !ok {
		return def
	}
	b, isBool := v.(bool)
	if !isBool {
		t.Errorf(key, "must be true or false, got %s", describe(v))
		return def
	}
	return b
}

// Int returns the integer at key, or def.
func (t *Table) Int(key string, def int64) int64 {
	v, ok := t.get(key)
	if !ok {
		return def
	}
	n, isInt := v.(int64)
	if !isInt {
		t.Errorf(key, "must be an integer, got %s", describe(v))
		return def
	}
	return n
}

// Number returns the integer or float at key as a float64, or def. NaN and
// infinities are mistakes.
func (t *Table) Number(key string, def float64) float64 {
	v, ok := t.get(key)
	if !ok {
		return def
	}
	switch n := v.(type) {
	case int64:
		return float64(n)
	case float64:
		if math.IsNaN(n) || math.IsInf(n, 0) {
			t.Errorf(key, "must be a finite number, got %v", n)
			return def
		}
		return n
	}
	t.Errorf(key, "must be a number, got %s", describe(v))
	return def
}

// maxSeconds bounds durations so that they fit a time.Duration with room to
// add them to a timestamp: 100 years.
const maxSeconds = 100 * 365 * 24 * 3600

// Seconds reads a duration given in seconds (integer or fraction) that must
// be greater than zero, or at least zero with allowZero. def is returned
// when the key is absent or wrong.
func (t *Table) Seconds(key string, def time.Duration, allowZero bool) time.Duration {
	if !t.Has(key) {
		return def
	}
	s := t.Number(key, -1)
	switch {
	case s < 0 && !t.isNumber(key):
		return def // Number already said why
	case s < 0 || (s == 0 && !allowZero):
		if allowZero {
			t.Errorf(key, "must be 0 or more seconds, got %v", s)
		} else {
			t.Errorf(key, "must be more than 0 seconds, got %v", s)
		}
		return def
	case s > maxSeconds:
		t.Errorf(key, "must be at most %d seconds (100 years), got %v", maxSeconds, s)
		return def
	}
	return time.Duration(s * float64(time.Second))
}

func (t *Table) isNumber(key string) bool {
	switch v := t.m[key].(type) {
	case int64:
		return true
	case float64:
		return !math.IsNaN(v) && !math.IsInf(v, 0)
	}
	return false
}

// Strings returns the array of strings at key; ok is false when it is absent
// or mistyped (the mistake is recorded).
func (t *Table) Strings(key string) (list []string, ok bool) {
	v, present := t.get(key)
	if !present {
		return nil, false
	}
	arr, isArr := v.([]any)
	if !isArr {
		t.Errorf(key, "must be an array of strings, got %s", describe(v))
		return nil, false
	}
	ok = true
	for i, e := range arr {
		s, isStr := e.(string)
		if !isStr {
			t.ElemErrorf(key, i, "must be a string, got %s", describe(e))
			ok = false
			continue
		}
		list = append(list, s)
	}
	if !ok {
		return nil, false
	}
	return list, true
}

// Table returns the table at key, or an empty table when it is absent or
// mistyped, so that callers read defaults from it without checking.
func (t *Table) Table(key string) *Table {
	sub := &Table{doc: t.doc, path: t.pathOf(key), field: t.fieldOf(key),
		m: map[string]any{}, seen: map[string]bool{}, parent: t}
	v, ok := t.get(key)
	if !ok {
		return sub
	}
	m, isMap := v.(map[string]any)
	if !isMap {
		t.Errorf(key, "must be a table, got %s", describe(v))
		return sub
	}
	sub.m = m
	return sub
}

// Tables returns the array of tables at key ([[key]] or an array of inline
// tables).
func (t *Table) Tables(key string) []*Table {
	v, ok := t.get(key)
	if !ok {
		return nil
	}
	arr, isArr := v.([]any)
	if !isArr {
		t.Errorf(key, "must be an array of tables ([[%s]]), got %s", key, describe(v))
		return nil
	}
	var out []*Table
	for i, e := range arr {
		m, isMap := e.(map[string]any)
		if !isMap {
			t.ElemErrorf(key, i, "must be a table, got %s", describe(e))
			continue
		}
		out = append(out, &Table{
			doc: t.doc, path: append(t.pathOf(key), strconv.Itoa(i)),
			field: fmt.Sprintf("%s[%d]", t.fieldOf(key), i), m: m, seen: map[string]bool{}, parent: t,
		})
	}
	return out
}

// Keys lists the table's keys in sorted order and marks them all known: for
// free-form tables whose keys are data (tools, settings).
func (t *Table) Keys() []string {
	keys := make([]string, 0, len(t.m))
	for k := range t.m {
		keys = append(keys, k)
		t.mark(k)
	}
	sort.Strings(keys)
	return keys
}

// Raw returns the value at key as decoded (map[string]any, []any, string,
// int64, float64, bool or a go-toml date/time) and marks it known.
func (t *Table) Raw(key string) (any, bool) { return t.get(key) }

// Close reports every key of the table that no getter asked for, with the
// closest known key as a hint.
func (t *Table) Close() {
	var unknown []string
	for k := range t.m {
		if !t.seen[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		msg := "unknown key"
		if owner := t.ancestorKnowing(k); owner != nil {
			where := "a top-level key"
			if owner.field != "" {
				where = "a key of " + owner.field
			}
			msg = fmt.Sprintf("%s is %s, but written below the %s header it is a key of %s: "+
				"move it above the first table header", quoteKey(k), where, t.header(), t.field)
		} else if s := suggest.Closest(k, t.known); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		} else if len(t.known) > 0 {
			known := append([]string(nil), t.known...)
			sort.Strings(known)
			msg += " (known: " + strings.Join(known, ", ") + ")"
		}
		t.Errorf(k, "%s", msg)
	}
}

// header is how the table's header is written: [limits], [[modules]].
func (t *Table) header() string {
	if name, isArray := strings.CutSuffix(t.field, "]"); isArray {
		if i := strings.LastIndexByte(name, '['); i >= 0 {
			return "[[" + name[:i] + "]]"
		}
	}
	return "[" + t.field + "]"
}

// ancestorKnowing is the nearest table above t that reads key, or nil.
func (t *Table) ancestorKnowing(key string) *Table {
	for a := t.parent; a != nil; a = a.parent {
		if slices.Contains(a.known, key) {
			return a
		}
	}
	return nil
}

// describe names a decoded value's TOML type for messages.
func describe(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("string %q", words.Clip(x, 40, "..."))
	case int64:
		return fmt.Sprintf("integer %d", x)
	case float64:
		return fmt.Sprintf("float %v", x)
	case bool:
		return fmt.Sprintf("boolean %v", x)
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	case nil:
		return "nothing"
	default:
		return fmt.Sprintf("date/time %v", x)
	}
}
