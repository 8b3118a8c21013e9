package engine

import (
	"fmt"
	"strings"
	"time"
)

// paused takes a pause of svcrun itself (docs/decisions.md, rule-pause):
// every deadline that judges a holder or a module moves by its length, so
// that a renewal, a completion or an acquire that waited in svcrun's queue
// meanwhile is judged as if svcrun had run. The timers are set again: a
// SetTimer replaces the pending Fire of its key, even one that fell due
// during the pause and was not taken yet. Polls (status, fingerprint,
// ready, probes, reaping, doctor), backoff and reset-after are left as
// they are: what fell due runs once now, which judges nobody.
func (e *Engine) paused(d time.Duration) {
	if d <= 0 {
		return
	}
	var ttls, waits, starts, idles int
	for _, l := range e.sortedLeases() {
		switch {
		case l.admitted && l.ttl > 0:
			l.expires = l.expires.Add(d)
			e.setTimer(l.slot, TimerLeaseTTL, string(l.id), l.expires)
			e.emit(PutLease{Lease: l.record()})
			ttls++
		case !l.admitted && !l.waitless:
			l.waitUntil = l.waitUntil.Add(d)
			e.setTimer(l.slot, TimerLeaseWait, string(l.id), l.waitUntil)
			waits++
		}
	}
	for _, s := range e.svcOrder {
		if !s.startDeadline.IsZero() {
			s.startDeadline = s.startDeadline.Add(d)
			if s.state == sWaitReady {
				// Pending only once the start op ended (or at adoption);
				// a start op still running gets the new deadline when
				// it ends.
				e.setTimer(s.slot, TimerStartDeadline, s.name, s.startDeadline)
			}
			starts++
		}
		if s.idleTimer {
			// Nobody could ask for it while svcrun stood still: the
			// pause is not idleness.
			s.idleSince = s.idleSince.Add(d)
			e.setTimer(s.slot, TimerIdle, s.name, s.idleSince.Add(s.spec.IdleTimeout))
			idles++
		}
	}
	var what []string
	for _, c := range []struct {
		n    int
		what string
	}{{ttls, "lease TTL(s)"}, {waits, "acquire wait(s)"}, {starts, "start deadline(s)"}, {idles, "idle timer(s)"}} {
		if c.n > 0 {
			what = append(what, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	if len(what) == 0 {
		what = append(what, "nothing")
	}
	e.note("pause", "svcrun did not run for %v: not charged to holders or modules; extended by it: %s",
		d.Truncate(time.Millisecond), strings.Join(what, ", "))
}
