package protocol

import (
	"errors"
	"fmt"
	"time"
	"unicode"
	"unicode/utf8"
)

// Fingerprint is the result of OpFingerprint.
type Fingerprint struct {
	Healthy bool
	// Running is nil when the output omits it, which only a probe may do.
	Running *bool
	Message string
	// Attrs values are string, float64 or bool. Numbers are float64, as
	// encoding/json would give, because attrs are facts for display and
	// matching, not counters; integers beyond 2^53 lose precision.
	Attrs map[string]any
	// Pools maps a pool name to the tokens the service can provide now.
	Pools   map[string]int64
	Reserve *Reserve
}

// Reserve is what a running service holds of the host.
type Reserve struct {
	MemGB float64
}

// OpResult is the result of OpStart, OpStop and OpDestroy. OK is always true
// in a decoded result: the exit status decides success, and an ok that
// disagrees with it is a protocol error.
type OpResult struct {
	OK bool
	// Changed is false when the service or object was already in the
	// wanted state.
	Changed bool
	// Escalated is set by stop when the forceful path was needed.
	Escalated bool
	Message   string
}

// Status is the result of OpStatus and OpReady.
type Status struct {
	Running bool
	Ready   bool
	Message string
}

// OwnedList is the result of OpListOwned. Objects with an invalid id are
// left out (see Result.Warnings): they can never be destroyed safely.
type OwnedList struct {
	Objects []Object
}

// Object is something a service created for an oarbank attempt.
type Object struct {
	// ID is what destroy receives; it always passes ValidObjectID.
	ID string
	// Kind is "container", "vm", "volume", "process" or "other".
	Kind   string
	Labels map[string]string
	// CreatedAt is the zero time when the output omits it.
	CreatedAt time.Time
	Busy      bool
}

// Kinds of owned objects.
const (
	KindContainer = "container"
	KindVM        = "vm"
	KindVolume    = "volume"
	KindProcess   = "process"
	KindOther     = "other"
)

// Labels every object a service or runner creates must carry; the agent never
// touches an object without all three.
const (
	LabelAttemptID = "oarbank.attempt_id"
	LabelNode      = "oarbank.node"
	LabelService   = "oarbank.service"
)

// MaxObjectIDLen is the longest object id in bytes.
const MaxObjectIDLen = 256

// ErrInvalidObjectID is wrapped by every error of ValidObjectID.
var ErrInvalidObjectID = errors.New("invalid object id")

// ValidObjectID reports whether id may be passed to destroy: 1 to 256 bytes
// of valid UTF-8, every character printable (Unicode letters, marks, numbers,
// punctuation and symbols, so non-ASCII names are allowed) and none a space,
// and not starting with '-', which would read as a flag. Whitespace, control
// and format characters (such as the bidi override U+202E) are rejected so an
// id shows in logs as what it is. The error names the first rule broken.
func ValidObjectID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: empty", ErrInvalidObjectID)
	case len(id) > MaxObjectIDLen:
		return fmt.Errorf("%w: %d bytes long; the limit is %d", ErrInvalidObjectID, len(id), MaxObjectIDLen)
	case id[0] == '-':
		return fmt.Errorf("%w %q: starts with '-', which would read as a flag", ErrInvalidObjectID, id)
	}
	for i, r := range id {
		switch {
		case r == utf8.RuneError && !validRuneAt(id, i):
			return fmt.Errorf("%w: not valid UTF-8 at byte %d", ErrInvalidObjectID, i)
		case unicode.IsSpace(r):
			return fmt.Errorf("%w %q: white space U+%04X at byte %d", ErrInvalidObjectID, id, r, i)
		case !unicode.IsPrint(r):
			return fmt.Errorf("%w %q: non-printable character U+%04X at byte %d", ErrInvalidObjectID, id, r, i)
		}
	}
	return nil
}

// validRuneAt tells a literal U+FFFD from an invalid byte that decodes as one.
func validRuneAt(s string, i int) bool {
	_, n := utf8.DecodeRuneInString(s[i:])
	return n == 3
}
