package protocol

import (
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/oarbank/svcrun/internal/utf8off"
	"github.com/oarbank/svcrun/internal/words"
)

// The parser below exists because encoding/json cannot report what protocol 1
// must reject: it keeps the last of duplicate keys silently, and it does not
// say whether what follows a document is a second document or garbage. It
// produces the generic form package schemas validates (map[string]any, []any,
// string, json.Number, bool, nil) in one pass, without reflection.

const (
	// maxDepth bounds nesting. A valid result nests 4 levels at most
	// (/objects/0/labels/key); the bound keeps recursion in the parser and
	// the validator shallow whatever a service prints.
	maxDepth = 64
	// maxNumberLen and maxExponent bound number literals, because the
	// validator and toInt64 turn a number that is not a plain int64 into a
	// big.Rat: a 1 MiB literal costs
	// seconds there, and an exponent beyond big.Rat's limit makes it fail.
	// Every valid number in protocol 1 fits a float64 or an int64, so
	// neither bound rejects a meaningful value.
	maxNumberLen = 100
	maxExponent  = 400
)

// issue is a problem that does not stop parsing (a duplicate key, a number out
// of range); it is reported with its JSON pointer alongside schema violations.
type issue struct {
	ptr []string
	msg string
}

// syntaxError stops parsing: nothing after it can be trusted.
type syntaxError struct {
	msg string
}

func (e *syntaxError) Error() string { return e.msg }

type parser struct {
	data   []byte
	pos    int
	depth  int
	path   []string
	issues []issue
	// pathBuf holds path for documents nested no deeper than protocol 1's.
	pathBuf [8]string
}

// parseDocument parses stdout as exactly one JSON document. It returns the
// value and the non-fatal issues, or a *syntaxError.
func parseDocument(data []byte) (any, []issue, error) {
	if len(data) >= 3 && data[0] == 0xEF && data[1] == 0xBB && data[2] == 0xBF {
		// RFC 8259 forbids emitting a BOM and Python's json.loads rejects
		// one; accepting it here would hide a service bug.
		return nil, nil, &syntaxError{"stdout starts with a UTF-8 byte order mark (BOM); print JSON without one"}
	}
	if !utf8.Valid(data) {
		off := utf8off.Invalid(data)
		return nil, nil, &syntaxError{fmt.Sprintf("stdout is not valid UTF-8: byte 0x%02x at offset %d", data[off], off)}
	}
	p := parser{data: data}
	p.path = p.pathBuf[:0]
	p.skipSpace()
	if p.pos == len(data) {
		if len(data) == 0 {
			return nil, nil, &syntaxError{"stdout is empty; expected one JSON document"}
		}
		return nil, nil, &syntaxError{"stdout holds only whitespace; expected one JSON document"}
	}
	v, err := p.value()
	if err != nil {
		return nil, nil, err
	}
	p.skipSpace()
	if p.pos < len(data) {
		// Tell a second document (a service printing twice) from garbage
		// (a stray log line): the fix differs.
		q := parser{data: data, pos: p.pos}
		if _, err := q.value(); err == nil {
			return nil, nil, &syntaxError{
				fmt.Sprintf("stdout holds more than one JSON document (the second starts at byte %d)", p.pos)}
		}
		return nil, nil, &syntaxError{fmt.Sprintf("trailing garbage after the JSON document at byte %d: %s", p.pos,
			describeByte(data, p.pos))}
	}
	return v, p.issues, nil
}

// describeByte names what is at i for a syntax error message.
func describeByte(data []byte, i int) string { return "unexpected " + found(data, i) }

// found names the character at i, or the end of input.
func found(data []byte, i int) string {
	if i >= len(data) {
		return "end of input"
	}
	r, _ := utf8.DecodeRune(data[i:])
	if r >= 0x20 && r < 0x7f {
		return fmt.Sprintf("character %q", r)
	}
	return fmt.Sprintf("character U+%04X", r)
}

func (p *parser) errorf(format string, args ...any) error {
	return &syntaxError{fmt.Sprintf("invalid JSON at byte %d: ", p.pos) + fmt.Sprintf(format, args...)}
}

func (p *parser) unexpected() error {
	return &syntaxError{fmt.Sprintf("invalid JSON at byte %d: %s", p.pos, describeByte(p.data, p.pos))}
}

func (p *parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) addIssue(msg string) {
	p.issues = append(p.issues, issue{ptr: append([]string(nil), p.path...), msg: msg})
}

func (p *parser) value() (any, error) {
	if p.pos >= len(p.data) {
		return nil, p.unexpected()
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return s, nil
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	default:
		return nil, p.unexpected()
	}
}

func (p *parser) literal(word string) error {
	if len(p.data)-p.pos >= len(word) && string(p.data[p.pos:p.pos+len(word)]) == word {
		p.pos += len(word)
		return nil
	}
	for i := 0; i < len(word); i++ {
		if p.pos+i >= len(p.data) || p.data[p.pos+i] != word[i] {
			p.pos += i
			return p.unexpected()
		}
	}
	return p.unexpected() // unreachable
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return p.errorf("nested deeper than %d levels", maxDepth)
	}
	return nil
}

func (p *parser) object() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	m := make(map[string]any)
	if p.open('}') {
		return m, nil
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.errorf("expected a string key, found %s", found(p.data, p.pos))
		}
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.errorf("expected ':' after key %q, found %s", words.Clip(key, 40, "…"), found(p.data, p.pos))
		}
		p.pos++
		p.skipSpace()
		p.path = append(p.path, key)
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		p.path = p.path[:len(p.path)-1]
		n := len(m)
		m[key] = v
		if len(m) == n {
			// Reported at the object's pointer: the message names the key.
			p.addIssue(fmt.Sprintf("duplicate key %q", words.Clip(key, 64, "…")))
		}
		if done, err := p.next('}', "object"); err != nil || done {
			return m, err
		}
	}
}

func (p *parser) array() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	a := []any{}
	if p.open(']') {
		return a, nil
	}
	for {
		p.skipSpace()
		p.path = append(p.path, strconv.Itoa(len(a)))
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		p.path = p.path[:len(p.path)-1]
		a = append(a, v)
		if done, err := p.next(']', "array"); err != nil || done {
			return a, err
		}
	}
}

// open steps over a container's opening bracket and reports whether the
// container is empty (its closing bracket follows), leaving it if so.
func (p *parser) open(closing byte) bool {
	p.pos++
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == closing {
		p.pos++
		p.depth--
		return true
	}
	return false
}

// next reads what follows an element of a container: ',' (more to come)
// or its closing bracket (done, the container is left).
func (p *parser) next(closing byte, what string) (done bool, err error) {
	p.skipSpace()
	if p.pos >= len(p.data) {
		return false, p.unexpected()
	}
	switch p.data[p.pos] {
	case ',':
		p.pos++
		return false, nil
	case closing:
		p.pos++
		p.depth--
		return true, nil
	}
	return false, p.errorf("expected ',' or '%c' in %s, found %s", closing, what, found(p.data, p.pos))
}

// str parses a string at p.pos (which holds '"'). The input is known to be
// valid UTF-8.
func (p *parser) str() (string, error) {
	p.pos++
	start := p.pos
	for i := p.pos; i < len(p.data); i++ {
		switch c := p.data[i]; {
		case c == '"':
			p.pos = i + 1
			return intern(p.data[start:i]), nil
		case c == '\\':
			p.pos = i
			return p.escapedString(start)
		case c < 0x20:
			p.pos = i
			return "", p.errorf("control character U+%04X in a string; escape it", c)
		}
	}
	p.pos = len(p.data)
	return "", p.errorf("unterminated string")
}

func (p *parser) escapedString(start int) (string, error) {
	buf := make([]byte, 0, p.pos-start+16)
	buf = append(buf, p.data[start:p.pos]...)
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			return string(buf), nil
		case c < 0x20:
			return "", p.errorf("control character U+%04X in a string; escape it", c)
		case c != '\\':
			buf = append(buf, c)
			p.pos++
			continue
		}
		if p.pos+1 >= len(p.data) {
			p.pos = len(p.data)
			return "", p.errorf("unterminated string")
		}
		switch e := p.data[p.pos+1]; e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := hex4(p.data, p.pos+2)
			if !ok {
				return "", p.errorf(`invalid \u escape; want 4 hex digits`)
			}
			switch {
			case r >= 0xD800 && r < 0xDC00:
				lo, ok := rune(0), false
				if p.pos+7 < len(p.data) && p.data[p.pos+6] == '\\' && p.data[p.pos+7] == 'u' {
					lo, ok = hex4(p.data, p.pos+8)
				}
				if !ok || lo < 0xDC00 || lo > 0xDFFF {
					// encoding/json would substitute U+FFFD; an id or
					// label silently changed is worse than a clear error.
					return "", p.errorf(`lone UTF-16 surrogate \u%04X in a string`, r)
				}
				buf = utf8.AppendRune(buf, utf16Decode(r, lo))
				p.pos += 6
			case r >= 0xDC00 && r <= 0xDFFF:
				return "", p.errorf(`lone UTF-16 surrogate \u%04X in a string`, r)
			default:
				buf = utf8.AppendRune(buf, r)
			}
			p.pos += 4
		default:
			p.pos++
			return "", p.errorf("invalid escape in a string: backslash followed by %s", found(p.data, p.pos))
		}
		p.pos += 2
	}
	return "", p.errorf("unterminated string")
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

func utf16Decode(hi, lo rune) rune {
	return (hi-0xD800)<<10 | (lo - 0xDC00) + 0x10000
}

// number parses an RFC 8259 number and keeps its text as a json.Number so
// integers stay exact for the validator and for pools.
func (p *parser) number() (any, error) {
	d := p.data
	start := p.pos
	i := p.pos
	if d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	default:
		p.pos = i
		return nil, p.errorf("invalid number: want a digit, found %s", found(d, i))
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			p.pos = i
			return nil, p.errorf("invalid number: want a digit after '.', found %s", found(d, i))
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	hasExp, exp := false, 0
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		hasExp = true
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			p.pos = i
			return nil, p.errorf("invalid number: want a digit in the exponent, found %s", found(d, i))
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			if exp <= maxExponent {
				exp = exp*10 + int(d[i]-'0')
			}
			i++
		}
	}
	p.pos = i
	lit := string(d[start:i])
	// The validator must never see a number it cannot handle; the issue
	// already fails the document, so the stand-in "0" is never used.
	switch {
	case len(lit) > maxNumberLen:
		p.addIssue(fmt.Sprintf("number is %d characters long; the limit is %d", len(lit), maxNumberLen))
		return json.Number("0"), nil
	case hasExp && exp > maxExponent:
		p.addIssue(fmt.Sprintf("number %s is out of range", lit))
		return json.Number("0"), nil
	case hasExp:
		// Without an exponent a literal of at most maxNumberLen characters
		// is always within float64 range, so only this case needs the
		// slower check.
		if _, err := strconv.ParseFloat(lit, 64); err != nil {
			p.addIssue(fmt.Sprintf("number %s is out of range", lit))
			return json.Number("0"), nil
		}
	}
	return json.Number(lit), nil
}

// intern returns the protocol's property names without allocating; they make
// up most strings of a result, and allocation dominates decoding.
func intern(b []byte) string {
	switch string(b) { // does not allocate
	case "healthy":
		return "healthy"
	case "running":
		return "running"
	case "message":
		return "message"
	case "attrs":
		return "attrs"
	case "pools":
		return "pools"
	case "reserve":
		return "reserve"
	case "mem_gb":
		return "mem_gb"
	case "ok":
		return "ok"
	case "changed":
		return "changed"
	case "escalated":
		return "escalated"
	case "ready":
		return "ready"
	case "objects":
		return "objects"
	case "id":
		return "id"
	case "kind":
		return "kind"
	case "labels":
		return "labels"
	case "created_at":
		return "created_at"
	case "busy":
		return "busy"
	case LabelAttemptID:
		return LabelAttemptID
	case LabelNode:
		return LabelNode
	case LabelService:
		return LabelService
	case KindContainer:
		return KindContainer
	case KindVM:
		return KindVM
	case KindVolume:
		return KindVolume
	case KindProcess:
		return KindProcess
	case KindOther:
		return KindOther
	}
	return string(b)
}
