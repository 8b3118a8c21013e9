package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/oarbank/svcrun/api"
	"github.com/oarbank/svcrun/errdefs"
)

// quoteBytes is how much of a bad name an error quotes.
const quoteBytes = 40

// BadRequestError is a request refused at the API's boundary, before the
// agent sees it: the 400 answer. Field names what is wrong, as a path into
// the body ("attempt", "capabilities[2]", "pools.gpu"), or "body".
type BadRequestError struct {
	Field  string
	Reason string
}

func (e *BadRequestError) Error() string { return e.Field + ": " + e.Reason }

// Is makes a BadRequestError match errdefs.ErrInvalid.
func (e *BadRequestError) Is(target error) bool { return target == errdefs.ErrInvalid }

func bad(field, format string, args ...any) *BadRequestError {
	return &BadRequestError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// quote shows a client's string in an error, cut to a short prefix: a
// megabyte name is not echoed into answers, logs and the journal.
func quote(s string) string {
	if len(s) <= quoteBytes {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q… (%d bytes)", prefix(s), len(s))
}

// cut is s, or its prefix and "…" when s is long: for names in field paths.
func cut(s string) string {
	if len(s) <= quoteBytes {
		return s
	}
	return prefix(s) + "…"
}

func prefix(s string) string {
	n := quoteBytes
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// checkName refuses a name that is empty, longer than api.MaxName, not UTF-8,
// or holds a character that does not print (a control character, a line
// break).
func checkName(field, s string) error {
	switch {
	case s == "":
		return bad(field, "empty: give a name of 1 to %d printable characters", api.MaxName)
	case len(s) > api.MaxName:
		return bad(field, "%s is longer than %d bytes", quote(s), api.MaxName)
	case !utf8.ValidString(s):
		return bad(field, "%s is not UTF-8", quote(s))
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return bad(field, "%s holds %U, which does not print: use printable characters", quote(s), r)
		}
	}
	return nil
}

// checkNames checks a list of names: bounded, each a name, none twice.
func checkNames(field string, names []string) error {
	if len(names) > api.MaxItems {
		return bad(field, "%d entries, more than %d", len(names), api.MaxItems)
	}
	seen := make(map[string]int, len(names))
	for i, n := range names {
		f := fmt.Sprintf("%s[%d]", field, i)
		if err := checkName(f, n); err != nil {
			return err
		}
		if j, dup := seen[n]; dup {
			return bad(f, "%s is given twice (also %s[%d]): give each once", quote(n), field, j)
		}
		seen[n] = i
	}
	return nil
}

// validate checks an acquire request against the bounds; the first
// problem is the error.
func validate(q *api.AcquireRequest) error {
	if q.Attempt == "" {
		return bad("attempt",
			"missing: name the attempt the lease is for (any name of 1 to %d printable "+
				"characters, such as attempt-3f9a0c1d5e7b2a64); an acquire repeated with the same "+
				"attempt and requirements gets the same lease", api.MaxName)
	}
	if err := checkName("attempt", q.Attempt); err != nil {
		return err
	}
	if q.Job != "" {
		if err := checkName("job", q.Job); err != nil {
			return err
		}
	}
	if err := checkNames("capabilities", q.Capabilities); err != nil {
		return err
	}
	if err := checkNames("needs_pools", q.NeedsPools); err != nil {
		return err
	}
	if len(q.Pools) > api.MaxItems {
		return bad("pools", "%d entries, more than %d", len(q.Pools), api.MaxItems)
	}
	for name, n := range q.Pools {
		if err := checkName("pools", name); err != nil {
			return err
		}
		if n <= 0 {
			return bad("pools."+cut(name), "%d tokens: ask for 1 or more (or use needs_pools)", n)
		}
	}
	switch w := time.Duration(q.Wait); {
	case w < 0:
		return bad("wait", "%v is negative: give 0 (admitted now or rejected) or more", w)
	case w > api.MaxWait:
		return bad("wait", "%v is more than %v", w, api.MaxWait)
	}
	switch t := time.Duration(q.TTL); {
	case t < 0:
		return bad("ttl", "%v is negative: give 0 (held until released) or %v to %v", t, api.MinTTL, api.MaxTTL)
	case t > 0 && t < api.MinTTL:
		return bad("ttl",
			"%v is shorter than %v: the lease would expire before it could be renewed (0: held until released)", t, api.MinTTL)
	case t > api.MaxTTL:
		return bad("ttl", "%v is more than %v (0: held until released)", t, api.MaxTTL)
	}
	return nil
}

// readBody reads a request body of at most api.MaxBody bytes, which must
// arrive within the deadline the guard set (the server's body timeout), so
// that a client that trickles it cannot hold a connection. The deadline is
// lifted once the body is in: an acquire then waits for admission as long
// as it asked.
func readBody(w http.ResponseWriter, r *http.Request, timeout time.Duration) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, api.MaxBody))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, bad("body", "larger than %d KiB", api.MaxBody>>10)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, bad("body", "not received in full within %v of the request's headers", timeout)
	case err != nil:
		return nil, bad("body", "unreadable: %v", err)
	}
	if err := http.NewResponseController(w).SetReadDeadline(time.Time{}); err != nil {
		return nil, fmt.Errorf("request body: %w", err)
	}
	return b, nil
}

// decodeAcquire decodes a body that must be one JSON object with known
// fields, each at most once, and nothing after it, then validates it.
func decodeAcquire(b []byte) (api.AcquireRequest, error) {
	var q api.AcquireRequest
	fields := map[string]any{
		"job": &q.Job, "attempt": &q.Attempt, "pools": &q.Pools, "needs_pools": &q.NeedsPools,
		"capabilities": &q.Capabilities, "wait": &q.Wait, "ttl": &q.TTL,
	}
	err := eachMember(b, "", func(key string, raw json.RawMessage) error {
		dst, ok := fields[key]
		if !ok {
			return bad(cut(key), "unknown field; fields: job, attempt, capabilities, pools, needs_pools, wait, ttl")
		}
		if key == "pools" {
			return decodePools(raw, &q.Pools)
		}
		if err := json.Unmarshal(raw, dst); err != nil {
			return bad(key, "%s", jsonReason(err))
		}
		return nil
	})
	if err != nil {
		return api.AcquireRequest{}, err
	}
	return q, validate(&q)
}

// decodePools decodes the pools object, refusing a pool named twice
// (encoding/json would keep the last).
func decodePools(raw json.RawMessage, out *map[string]int64) error {
	pools := map[string]int64{}
	err := eachMember(raw, "pools", func(name string, v json.RawMessage) error {
		if err := checkName("pools", name); err != nil {
			return err
		}
		var n int64
		if err := json.Unmarshal(v, &n); err != nil {
			return bad("pools."+cut(name), "%s: give a number of tokens", jsonReason(err))
		}
		pools[name] = n
		return nil
	})
	*out = pools
	return err
}

// eachMember calls fn for each member of the JSON object b, in order, and
// refuses anything else: not an object, a member twice, trailing data.
// field names b in errors ("" for the body).
func eachMember(b []byte, field string, fn func(key string, raw json.RawMessage) error) error {
	name := field
	if name == "" {
		name = "body"
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		what := "empty"
		if len(b) > 0 {
			what = quote(string(b))
		}
		return bad(name, "%s: give a JSON object", what)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil {
		return bad(name, "%s", jsonReason(err))
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return bad(name, "%s", jsonReason(err))
		}
		key, _ := t.(string) // a member's name is a string, or Token failed
		path := cut(key)
		if field != "" {
			path = field + "." + cut(key)
		}
		if seen[key] {
			return bad(path, "given twice: give each field once")
		}
		seen[key] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return bad(path, "%s", jsonReason(err))
		}
		if err := fn(key, raw); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return bad(name, "%s", jsonReason(err))
	}
	if off := dec.InputOffset(); off < int64(len(b)) {
		return bad(name, "%s after the JSON object: send one object and nothing else", quote(string(b[off:])))
	}
	return nil
}

// jsonReason says why encoding/json refused a value, without its "json: "
// prefix; the caller names the field.
func jsonReason(err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		return fmt.Sprintf("a JSON %s, want %s", te.Value, te.Type)
	case errors.As(err, &se):
		return fmt.Sprintf("not JSON at byte %d: %v", se.Offset, se)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "the JSON ends too early"
	}
	return err.Error()
}
