package agent

import (
	"context"
	"log/slog"
	"time"

	"github.com/oarbank/svcrun/engine"
)

// How often a subject (a service, a lease, a probe) may log at WARN or
// ERROR: a flapping service must not flood the journal. Past the limit its
// lines are counted, and the next line after the window says how many were
// left out.
const (
	loudLinesPerWindow = 5
	loudWindow         = time.Minute
)

// loudLimiter rate-limits WARN and ERROR lines per subject. Only the
// loop's goroutine uses it.
type loudLimiter struct {
	subjects map[string]*loudCount
}

type loudCount struct {
	since   time.Time
	lines   int
	dropped int
}

// allow tells whether subject may log a loud line at now, and how many
// were left out before it.
func (l *loudLimiter) allow(subject string, now time.Time) (ok bool, dropped int) {
	if l.subjects == nil {
		l.subjects = map[string]*loudCount{}
	}
	c := l.subjects[subject]
	if c == nil || now.Sub(c.since) >= loudWindow {
		if c != nil {
			dropped = c.dropped
		}
		c = &loudCount{since: now}
		l.subjects[subject] = c
		if len(l.subjects) > 4096 { // subjects come and go (leases): forget the quiet ones
			for k, v := range l.subjects {
				if now.Sub(v.since) >= loudWindow {
					delete(l.subjects, k)
				}
			}
		}
	}
	if c.lines >= loudLinesPerWindow {
		c.dropped++
		return false, 0
	}
	c.lines++
	return true, dropped
}

// logDecisions logs the effects of a step that people want to read: notes
// at their level, rejections and expiries at WARN, kills at WARN.
func (a *Agent) logDecisions(now time.Time, effects []engine.Effect) {
	for _, f := range effects {
		var level slog.Level
		var msg, subject string
		var attrs []any
		switch f := f.(type) {
		case engine.Note:
			msg, subject = f.Text, f.Subject
			switch f.Level {
			case engine.NoteWarn:
				level = slog.LevelWarn
			case engine.NoteError:
				level = slog.LevelError
			}
			attrs = []any{"subject", f.Subject}
		case engine.Rejected:
			level, msg, subject = slog.LevelWarn, "lease rejected: "+f.Reason, "lease "+string(f.Lease)
			attrs = []any{"lease", string(f.Lease)}
		case engine.Expired:
			if f.Reason == "" {
				continue // a TTL expiry: its note says so
			}
			level, msg, subject = slog.LevelWarn, "lease ended: "+f.Reason, "lease "+string(f.Lease)
			attrs = []any{"lease", string(f.Lease)}
		case engine.Kill:
			level, msg, subject = slog.LevelWarn, "kill process container", f.Service.String()
			attrs = []any{"service", f.Service.String()}
		case *engine.RunOp:
			a.log.Debug("op", "target", f.Target.String(), "op", string(f.Op), "id", uint64(f.ID))
			continue
		default:
			continue
		}
		if level >= slog.LevelWarn {
			ok, dropped := a.loud.allow(subject, now)
			if !ok {
				continue
			}
			if dropped > 0 {
				attrs = append(attrs, "suppressed_before", dropped)
			}
		}
		a.log.Log(context.Background(), level, msg, attrs...)
	}
}
