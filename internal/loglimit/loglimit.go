// Package loglimit keeps svcrun's log readable under abuse (thousands of
// bogus acquires, a flapping service, accept errors at the file limit):
// a subject's lines of one reason are logged at most Burst times a
// Window; past that they are counted, and when the subject's window ends
// one line says how many of each reason were left out. The limit is per
// subject and reason, so that a failure whose reason changes (ENOENT,
// then EACCES) is logged with each reason; and a subject logs at most
// SubjectBurst lines a window whatever their reasons, so that reasons
// that name what was asked (an unknown capability) cannot flood either.
//
// Reasons that differ only in their numbers (pids, durations, counts,
// "retrying in 5ms" then "1s") are one reason: a number in a line is
// rarely why it was logged.
package loglimit

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/benbjohnson/clock"
)

const (
	// Window is how long a subject's counts last; a summary of what was
	// left out follows its end.
	Window = time.Minute
	// Burst is how many lines of one subject and reason a window logs.
	Burst = 5
	// SubjectBurst is how many lines of one subject a window logs,
	// whatever their reasons.
	SubjectBurst = 20
	// maxSubjects bounds the subjects counted at once; past it, lines of
	// new subjects count under otherSubjects until windows end.
	maxSubjects = 4096
	// summaryReasons is how many reasons a summary names; the others are
	// counted.
	summaryReasons = 5
	// FewPIDs is how many pids a line lists (Few).
	FewPIDs = 8
)

const otherSubjects = "(other subjects)"

// Limiter rate-limits log lines per subject and reason. It is safe for
// concurrent use.
type Limiter struct {
	log   *slog.Logger
	clock clock.Clock

	mu       sync.Mutex
	subjects map[string]*subject
	// timer brings the next summary while a subject has lines left out.
	timer *clock.Timer
	due   time.Time
	// closed: svcrun is stopping, lines pass unlimited and no timer is
	// left behind.
	closed bool
	// leftOut counts the lines left out since New, for metrics.
	leftOut atomic.Uint64
}

type subject struct {
	since   time.Time
	lines   int
	left    int        // lines left out
	level   slog.Level // the highest level left out
	reasons map[string]*reason
	order   []string // reason keys, first seen first
}

type reason struct {
	text        string // as first logged
	lines, left int
}

// New makes a Limiter that logs to log and times windows with clk.
func New(log *slog.Logger, clk clock.Clock) *Limiter {
	return &Limiter{log: log, clock: clk, subjects: map[string]*subject{}}
}

// Log logs msg at level with attrs, unless the subject
// has logged Burst lines of this reason ("" is msg) or SubjectBurst lines
// in its window.
func (l *Limiter) Log(level slog.Level, subj, why, msg string, attrs ...any) {
	if why == "" {
		why = msg
	}
	now := l.clock.Now()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		l.log.Log(context.Background(), level, msg, attrs...)
		return
	}
	summaries := l.expire(now, ended(now))
	s := l.subjects[subj]
	if s == nil {
		if len(l.subjects) >= maxSubjects { // make room: the quiet ones go
			summaries = append(summaries, l.expire(now, func(s *subject) bool { return s.left == 0 })...)
		}
		if len(l.subjects) >= maxSubjects {
			subj = otherSubjects
			s = l.subjects[subj]
		}
		if s == nil {
			s = &subject{since: now, reasons: map[string]*reason{}}
			l.subjects[subj] = s
		}
	}
	k := key(why)
	r := s.reasons[k]
	if r == nil {
		r = &reason{text: why}
		s.reasons[k] = r
		s.order = append(s.order, k)
	}
	ok := r.lines < Burst && s.lines < SubjectBurst
	if ok {
		r.lines++
		s.lines++
	} else {
		r.left++
		s.left++
		l.leftOut.Add(1)
		s.level = max(s.level, level)
		l.schedule(s.since.Add(Window))
	}
	l.mu.Unlock()
	l.write(summaries)
	if ok {
		l.log.Log(context.Background(), level, msg, attrs...)
	}
}

// LeftOut is the number of lines left out since New.
func (l *Limiter) LeftOut() uint64 { return l.leftOut.Load() }

// schedule makes sure a summary comes at due or earlier. With mu held.
func (l *Limiter) schedule(due time.Time) {
	if l.timer != nil && !l.due.After(due) {
		return
	}
	if l.timer != nil {
		l.timer.Stop()
	}
	l.due = due
	l.timer = l.clock.AfterFunc(max(due.Sub(l.clock.Now()), 0), l.flush)
}

// flush logs the summaries of the windows that have ended.
func (l *Limiter) flush() {
	now := l.clock.Now()
	l.mu.Lock()
	l.timer = nil
	summaries := l.expire(now, ended(now))
	var next time.Time
	for _, s := range l.subjects {
		if s.left > 0 && (next.IsZero() || s.since.Before(next)) {
			next = s.since
		}
	}
	if !next.IsZero() {
		l.schedule(next.Add(Window))
	}
	l.mu.Unlock()
	l.write(summaries)
}

type summary struct {
	level slog.Level
	attrs []any
}

// expire ends the windows of the subjects that pass end and returns the
// summaries of those with lines left out. With mu held.
func (l *Limiter) expire(now time.Time, end func(*subject) bool) []summary {
	var out []summary
	for name, s := range l.subjects {
		if !end(s) {
			continue
		}
		delete(l.subjects, name)
		if s.left == 0 {
			continue
		}
		out = append(out, summary{s.level,
			[]any{"subject", name, "left_out", s.left, "window", now.Sub(s.since).Round(time.Second), "by_reason",
				s.byReason()}})
	}
	slices.SortFunc(out, func(a, b summary) int { return strings.Compare(a.attrs[1].(string), b.attrs[1].(string)) })
	return out
}

// ended is a subject whose window has ended at now.
func ended(now time.Time) func(*subject) bool {
	return func(s *subject) bool { return now.Sub(s.since) >= Window }
}

// Close logs the summaries of the windows still open and stops the timer:
// what was left out is counted also when svcrun stops. Lines logged after
// it are not limited.
func (l *Limiter) Close() {
	now := l.clock.Now()
	l.mu.Lock()
	l.closed = true
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	summaries := l.expire(now, func(*subject) bool { return true })
	l.mu.Unlock()
	l.write(summaries)
}

// byReason says how many lines of each reason were left out, the most
// first, naming at most summaryReasons.
func (s *subject) byReason() string {
	var rs []*reason
	for _, k := range s.order {
		if r := s.reasons[k]; r.left > 0 {
			rs = append(rs, r)
		}
	}
	slices.SortStableFunc(rs, func(a, b *reason) int { return b.left - a.left })
	var parts []string
	for i, r := range rs {
		if i == summaryReasons {
			n := 0
			for _, r := range rs[i:] {
				n += r.left
			}
			parts = append(parts, fmt.Sprintf("%d of %d other reasons", n, len(rs)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%d of %q", r.left, r.text))
	}
	return strings.Join(parts, "; ")
}

func (l *Limiter) write(summaries []summary) {
	for _, s := range summaries {
		l.log.Log(context.Background(), s.level, "log lines left out by the rate limit", s.attrs...)
	}
}

// key is a reason without its numbers: a number with its decimals and
// unit ("5ms", "1.5s", "30KiB") is one '#'.
func key(why string) string {
	var b strings.Builder
	in := false // in a number or its unit
	for _, c := range why {
		switch {
		case c >= '0' && c <= '9', in && (c == '.' || unicode.IsLetter(c)):
			if !in {
				b.WriteByte('#')
			}
			in = true
		default:
			in = false
			b.WriteRune(c)
		}
	}
	return b.String()
}

// Logger is a *log.Logger (http.Server.ErrorLog) whose lines go through
// the limiter at level, as subject, each line its own reason.
func (l *Limiter) Logger(subject string, level slog.Level) *log.Logger {
	return log.New(lineWriter{l, subject, level}, "", 0)
}

type lineWriter struct {
	l       *Limiter
	subject string
	level   slog.Level
}

func (w lineWriter) Write(p []byte) (int, error) {
	line := strings.TrimSuffix(string(p), "\n")
	w.l.Log(w.level, w.subject, line, line)
	return len(p), nil
}

var _ io.Writer = lineWriter{}

// Few lists the first FewPIDs of pids, and how many more there are: a
// line never lists thousands.
func Few(pids []int) string {
	if len(pids) <= FewPIDs {
		return fmt.Sprint(pids)
	}
	return fmt.Sprintf("%v and %d more", pids[:FewPIDs], len(pids)-FewPIDs)
}
