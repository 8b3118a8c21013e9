package agent

import (
	"context"
	"log/slog"

	"github.com/oarbank/svcrun/engine"
)

// logDecisions logs the effects of a step that people want to read: notes
// at their level, rejections and expiries at WARN, kills at WARN. The
// WARN and ERROR lines go through a.loud, per subject and reason: a
// flapping service, or thousands of bogus acquires (every rejection is
// a "leases" line of its reason, not one of its own lease), log a few
// lines and a count.
func (a *Agent) logDecisions(effects []engine.Effect) {
	for _, f := range effects {
		var level slog.Level
		var msg, subject, why string
		var attrs []any
		switch f := f.(type) {
		case engine.Note:
			msg, subject, why = f.Text, f.Subject, f.Text
			switch f.Level {
			case engine.NoteWarn:
				level = slog.LevelWarn
			case engine.NoteError:
				level = slog.LevelError
			}
			attrs = []any{"subject", f.Subject}
		case engine.Rejected:
			level, msg, subject, why = slog.LevelWarn, "lease rejected: "+f.Reason, "leases", "rejected: "+f.Reason
			attrs = []any{"lease", string(f.Lease)}
		case engine.Expired:
			if f.Reason == "" {
				continue // a TTL expiry: its note says so
			}
			level, msg, subject, why = slog.LevelWarn, "lease ended: "+f.Reason, "leases", "ended: "+f.Reason
			attrs = []any{"lease", string(f.Lease)}
		case engine.Kill:
			level, msg, subject, why = slog.LevelWarn, "kill process container", f.Service.String(), "kill"
			attrs = []any{"service", f.Service.String()}
		case *engine.RunOp:
			a.log.Debug("op", "target", f.Target.String(), "op", string(f.Op), "id", uint64(f.ID))
			continue
		default:
			continue
		}
		if level >= slog.LevelWarn {
			a.loud.Log(level, subject, why, msg, attrs...)
			continue
		}
		a.log.Log(context.Background(), level, msg, attrs...)
	}
}
