package engine

import (
	"sort"
	"time"

	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/protocol"
)

// reapSnap is the view of live attempts a reap round judges by, taken when
// the round starts.
type reapSnap struct {
	at   time.Time
	live map[string]bool
}

type destroyReq struct {
	id      string
	attempt string
	force   bool
}

// startReap begins a reap round: every running service lists its objects.
func (e *Engine) startReap() {
	e.setTimer(0, TimerReap, "", e.now.Add(e.cfg.ReapPeriod))
	snap := &reapSnap{at: e.now, live: make(map[string]bool, len(e.attempts))}
	for a := range e.attempts {
		snap.live[a] = true
	}
	for _, s := range e.svcOrder {
		// The spec: the agent "only fingerprints" a manual service.
		if s.state == sReady && s.enabled() && s.spec.Lifecycle != manifest.Manual {
			s.reap = snap
			s.reapDue = true
			e.markDirty(s)
		}
	}
}

// reapListed judges one service's listing and queues the destroys. An
// object is destroyed only when it carries all three labels, names this
// node and this service, belongs to an attempt live neither at the snapshot
// nor now, and was not created after the snapshot.
func (e *Engine) reapListed(s *service, snap *reapSnap, list *protocol.OwnedList) {
	if snap == nil || list == nil {
		return
	}
	seen := map[string]bool{}
	for _, o := range list.Objects {
		if reason := e.keep(s, snap, o); reason != "" {
			continue
		}
		seen[o.ID] = true
		if s.orphans == nil {
			s.orphans = map[string]int{}
		}
		s.orphans[o.ID]++
		force := s.orphans[o.ID] > e.cfg.ForceAfter
		s.destroy = append(s.destroy, destroyReq{id: o.ID, attempt: o.Labels[protocol.LabelAttemptID], force: force})
		how := "destroy"
		if force {
			how = "destroy --force"
		}
		e.note(s.name, "%s %s: orphan of attempt %s (period %d)", how, o.ID, o.Labels[protocol.LabelAttemptID], s.orphans[o.ID])
	}
	// Objects gone from the listing are no longer counted.
	ids := make([]string, 0, len(s.orphans))
	for id := range s.orphans {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if !seen[id] {
			delete(s.orphans, id)
		}
	}
}

// keep returns why an object must not be reaped, or "".
func (e *Engine) keep(s *service, snap *reapSnap, o protocol.Object) string {
	attempt, ok1 := o.Labels[protocol.LabelAttemptID]
	node, ok2 := o.Labels[protocol.LabelNode]
	svc, ok3 := o.Labels[protocol.LabelService]
	switch {
	case !ok1 || !ok2 || !ok3:
		return "missing labels"
	case node != e.cfg.NodeID:
		return "another node's"
	case svc != s.name:
		return "another service's"
	case snap.live[attempt] || e.attempts[attempt] > 0:
		return "attempt live"
	case !o.CreatedAt.IsZero() && o.CreatedAt.After(snap.at):
		return "created after the snapshot"
	}
	return ""
}
