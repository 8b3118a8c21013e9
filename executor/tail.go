package executor

import (
	"errors"
	"io"
	"os"

	"github.com/oarbank/svcrun/protocol"
)

// tailBuffer keeps the last protocol.StderrTailSize bytes written to it. Most
// ops write nothing or a line to stderr: that stays in a small array, and the
// 64 KiB ring is allocated only when more comes.
type tailBuffer struct {
	first  [512]byte
	nfirst int    // bytes used in first while ring is nil
	ring   []byte // nil until first overflows; then StderrTailSize long
	w      int    // next write position in ring
	full   bool   // ring wrapped at least once
	held   bool   // reading stopped at the deadline rather than at EOF
}

// readFrom drains r into the buffer until EOF or an error, never blocking
// the writer for longer than a copy.
func (t *tailBuffer) readFrom(r io.Reader) {
	var err error
	for err == nil {
		var n int
		n, err = r.Read(t.next())
		t.advance(n)
	}
	t.held = errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, os.ErrClosed)
}

// next returns where to read next: the rest of the small array, then the
// ring's free run. It is never empty.
func (t *tailBuffer) next() []byte {
	if t.ring == nil {
		if t.nfirst < len(t.first) {
			return t.first[t.nfirst:]
		}
		t.ring = make([]byte, protocol.StderrTailSize)
		t.write(t.first[:])
	}
	return t.ring[t.w:]
}

// advance commits n bytes read into next().
func (t *tailBuffer) advance(n int) {
	if n <= 0 {
		return
	}
	if t.ring == nil {
		t.nfirst += n
		return
	}
	t.w += n
	if t.w == len(t.ring) {
		t.w, t.full = 0, true
	}
}

// write appends p, keeping the last StderrTailSize bytes.
func (t *tailBuffer) write(p []byte) {
	for len(p) > 0 {
		dst := t.next()
		n := copy(dst, p)
		t.advance(n)
		p = p[n:]
	}
}

// bytes returns the tail in order, or nil if nothing was written.
func (t *tailBuffer) bytes() []byte {
	switch {
	case t.ring == nil && t.nfirst == 0:
		return nil
	case t.ring == nil:
		return append([]byte(nil), t.first[:t.nfirst]...)
	case !t.full:
		// A copy, so that the 64 KiB ring is not kept alive by a line.
		return append([]byte(nil), t.ring[:t.w]...)
	}
	out := make([]byte, len(t.ring))
	n := copy(out, t.ring[t.w:])
	copy(out[n:], t.ring[:t.w])
	return out
}
