package protocol

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/oarbank/svcrun/internal/words"
)

// ProtocolError means the op's output broke protocol 1: the op counts as
// failed, and the fix belongs in the service, not in its environment.
type ProtocolError struct {
	Op Op
	// ExitCode is the op's exit status (0 unless ok:true disagreed with a
	// failure).
	ExitCode int
	// Reasons lists every problem found, at least one, sorted by JSON
	// pointer. A reason about a part of the document starts with its JSON
	// pointer ("/pools/gpu: must be >= 0"), or with "document" for the
	// whole of it.
	Reasons []string
	// StderrTail is the last StderrTailSize bytes of the op's stderr. It
	// aliases Output.StderrTail.
	StderrTail []byte
}

// maxReasonsShown bounds Error(); Reasons keeps them all.
const maxReasonsShown = 8

func (e *ProtocolError) Error() string {
	return string(e.Op) + ": protocol error: " + e.Detail()
}

// Detail is the error without its op and kind: the reasons and stderr's
// last line, for messages that name the op and the kind already ("start
// protocol: DETAIL").
func (e *ProtocolError) Detail() string {
	var b strings.Builder
	for i, r := range e.Reasons {
		if i == maxReasonsShown {
			fmt.Fprintf(&b, "; and %d more", len(e.Reasons)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(r)
	}
	if len(e.Reasons) == 0 {
		b.WriteString("(no reason recorded)")
	}
	writeStderr(&b, e.StderrTail)
	return b.String()
}

// OpError means the op ran and reported failure with a non-zero exit status.
// Its stdout need not be JSON: a failing op may print anything.
type OpError struct {
	Op       Op
	ExitCode int
	// Message is the "message" of stdout when stdout held a JSON object
	// with one, else "". It is the service's own words, unsanitized.
	Message string
	// StderrTail is the last StderrTailSize bytes of the op's stderr. It
	// aliases Output.StderrTail.
	StderrTail []byte
}

func (e *OpError) Error() string {
	return fmt.Sprintf("%s: failed with %s", e.Op, e.Detail())
}

// Detail is the error without its op: "exit status N", the service's
// message and stderr's last line, for messages that name the op and the
// kind already ("start failed: DETAIL").
func (e *OpError) Detail() string {
	var b strings.Builder
	fmt.Fprintf(&b, "exit status %d", e.ExitCode)
	if m := oneLine(e.Message, maxLineShown); m != "" {
		b.WriteString(": ")
		b.WriteString(m)
	}
	writeStderr(&b, e.StderrTail)
	return b.String()
}

// maxLineShown bounds service-provided text in Error().
const maxLineShown = 200

func writeStderr(b *strings.Builder, tail []byte) {
	if l := LastLine(tail); l != "" {
		b.WriteString(" (stderr: ")
		b.WriteString(l)
		b.WriteString(")")
	}
}

// LastLine returns the last non-blank line of stderr, made printable and cut
// to 200 bytes, for one-line messages; "" if there is none.
func LastLine(stderr []byte) string {
	s := bytes.TrimRightFunc(stderr, unicode.IsSpace)
	if i := bytes.LastIndexAny(s, "\r\n"); i >= 0 {
		// A carriage return starts a progress line over; what follows the
		// last one is what a terminal would show.
		s = s[i+1:]
	}
	return oneLine(string(s), maxLineShown)
}

// oneLine makes service-provided text safe for a one-line message: invalid
// UTF-8 and non-printable characters become U+FFFD or a space, runs of white
// space collapse, and the result is cut to at most max bytes.
func oneLine(s string, max int) string {
	var b strings.Builder
	space := false
	for _, r := range strings.TrimSpace(s) {
		switch {
		case unicode.IsSpace(r):
			space = true
			continue
		case !unicode.IsPrint(r):
			r = utf8.RuneError
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return words.Clip(b.String(), max, "…")
}

// StderrTailOf returns the stderr tail carried by an *OpError or
// *ProtocolError in err's chain, or nil.
func StderrTailOf(err error) []byte {
	var pe *ProtocolError
	var oe *OpError
	switch {
	case errors.As(err, &pe):
		return pe.StderrTail
	case errors.As(err, &oe):
		return oe.StderrTail
	}
	return nil
}
