package engine

import (
	"fmt"
	"sort"
	"strings"
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

// reapRound is the reap round in progress: the services it waits for and
// what it found, service by service. Rounds never overlap, so that every
// list_owned and destroy in flight belongs to the current one.
type reapRound struct {
	n       uint64
	snap    *reapSnap
	tickets []string
	results []ReapService // one per service at the round's start, sorted
	// index is the entry in results of each service the round still
	// waits for (of pending's).
	index map[string]int
	// pending holds the services whose listing or destroys are not done,
	// by name (in results order): reapSettled goes through them at every
	// step, so it keeps each one's service and entry at hand.
	pending []reapMember
	listed  map[string]bool
}

// reapMember is a service a round waits for.
type reapMember struct {
	svc   *service // as at the round's start; see current
	index int      // its entry in results
}

// current is the service of the member's name now: the one the round
// started with, unless that one was forgotten since (then another may
// have taken its name).
func (m reapMember) current(e *Engine) *service {
	if m.svc.forgotten {
		return e.services[m.svc.name]
	}
	return m.svc
}

// reapNow answers ReapNow. A round already running took its snapshot
// before the request: the request waits for it to end and gets the next
// round, which every request made meanwhile shares. A round asked for
// lists every running service.
func (e *Engine) reapNow(ticket string) {
	if e.round == nil {
		e.startReap(ticketList(ticket), true)
		return
	}
	if !e.reapAgain {
		e.note("reap", "round %d runs: another starts once it ends", e.round.n)
	}
	e.reapAgain = true
	e.nextTickets = append(e.nextTickets, ticketList(ticket)...)
}

func ticketList(t string) []string {
	if t == "" {
		return nil
	}
	return []string{t}
}

// reapTimer starts the periodic round, unless one still runs: then the
// period starts again. The first periodic round, and then one every
// ReapSweepPeriod (a sweep), lists every running service; the others
// only those reapMark marked.
func (e *Engine) reapTimer() {
	if e.round != nil {
		e.setTimer(0, TimerReap, "", e.now.Add(e.cfg.ReapPeriod))
		return
	}
	e.startReap(nil, false)
}

// reapMark has the next periodic round list s, saying why: it may hold
// an object to reap. Its objects may predate svcrun's view (it became
// ready: started, adopted), an attempt whose lease used it may have left
// some (that lease ended), or its last listing left one to look at again.
// The first reason stands until a round lists s.
func reapMark(s *service, why string) {
	if s.reapWhy == "" {
		s.reapWhy = why
	}
}

// startReap begins a reap round: every running service lists its objects
// when the round was asked for, is the first or a sweep; else those that
// reapMark marked do, the others being skipped as clean.
func (e *Engine) startReap(tickets []string, asked bool) {
	e.setTimer(0, TimerReap, "", e.now.Add(e.cfg.ReapPeriod))
	snap := &reapSnap{at: e.now, live: make(map[string]bool, len(e.attempts))}
	for a := range e.attempts {
		snap.live[a] = true
	}
	first := e.lastFull.IsZero()
	sweep := !asked && !first && !e.now.Before(e.lastFull.Add(e.cfg.ReapSweepPeriod))
	full := asked || first || sweep
	if full {
		e.lastFull = e.now
	}
	e.reapRounds++
	r := &reapRound{n: e.reapRounds, snap: snap, tickets: tickets, index: map[string]int{}, listed: map[string]bool{},
		results: make([]ReapService, 0, len(e.svcOrder))}
	e.round = r
	var marked []string // why each marked service is listed, for the note
	clean := 0
	for _, s := range e.svcOrder {
		res := ReapService{Service: s.name}
		switch {
		case !s.enabled():
			res.Skipped = s.disabledReason()
		case s.spec.Lifecycle == manifest.Manual:
			// The spec: the agent "only fingerprints" a manual service.
			res.Skipped = "manual: svcrun only fingerprints it"
		case s.state != sReady:
			res.Skipped = notReadyReasons[s.state]
		case !full && s.reapWhy == "":
			res.Skipped = "clean: nothing to reap since its last listing"
			clean++
		default:
			if s.reapWhy != "" && len(marked) < reapNoteNames {
				marked = append(marked, fmt.Sprintf("%s (%s)", s.name, s.reapWhy))
			}
			s.reapWhy = ""
			s.reap = snap
			s.reapDue = true
			r.index[s.name] = len(r.results)
			r.pending = append(r.pending, reapMember{svc: s, index: len(r.results)})
			e.markDirty(s)
		}
		r.results = append(r.results, res)
	}
	// A round that lists every running service, as every round once did,
	// goes without a note (a ReapDone reports a round asked for), but the
	// sweep, which says why the clean ones are listed too.
	switch {
	case sweep && len(r.pending) > 0:
		e.note("reap", "round %d: sweep (every %v): every running service listed (%d)", r.n, e.cfg.ReapSweepPeriod,
			len(r.pending))
	case clean == 0:
	case len(r.pending) == 0:
		e.note("reap", "round %d: nothing to list, %d running service(s) skipped as clean", r.n, clean)
	default:
		more := ""
		if n := len(r.pending) - len(marked); n > 0 {
			more = fmt.Sprintf(" and %d more", n)
		}
		e.note("reap", "round %d: listing %s%s; %d running service(s) skipped as clean", r.n, strings.Join(marked, ", "),
			more, clean)
	}
}

// reapNoteNames caps the services a round's note names.
const reapNoteNames = 20

// notReadyReasons say, by state, why a round skips a service that is not
// ready: made once, not at every round for every service.
var notReadyReasons = func() (r [len(stateNames)]string) {
	for st := range r {
		r[st] = "not ready: " + svcState(st).String()
	}
	return r
}()

// reapResult is the current round's entry for s, or nil.
func (e *Engine) reapResult(s *service) *ReapService {
	if e.round == nil {
		return nil
	}
	i, ok := e.round.index[s.name]
	if !ok {
		return nil
	}
	return &e.round.results[i]
}

// reapOpDone records the outcome of a list_owned that failed and of every
// destroy.
func (e *Engine) reapOpDone(r *opRun, o Outcome) {
	// A destroy that fails needs no mark of its own: queueing it marked
	// the service.
	if r.op == protocol.OpListOwned && o.Failure != FailNone {
		reapMark(r.svc, "recheck: its listing failed")
	}
	res := e.reapResult(r.svc)
	if res == nil {
		return
	}
	switch {
	case r.op == protocol.OpListOwned && o.Failure != FailNone:
		e.round.listed[r.svc.name] = true
		res.Failed = fmt.Sprintf("list_owned %s: %s", o.Failure, o.Message)
	case r.op == protocol.OpDestroy:
		for i := range res.Objects {
			obj := &res.Objects[i]
			if obj.ID != r.object || obj.Outcome != ReapPending {
				continue
			}
			switch {
			case o.Failure != FailNone:
				obj.Outcome, obj.Reason = ReapFailed, fmt.Sprintf("destroy %s: %s", o.Failure, o.Message)
			case !o.Result.OpResult.Changed:
				obj.Outcome, obj.Reason = ReapDestroyed, "destroy changed nothing"
			default:
				obj.Outcome = ReapDestroyed
			}
			break
		}
	}
}

// reapKeptLive records a queued destroy dropped because its attempt is
// live again.
func (e *Engine) reapKeptLive(s *service, id string) {
	reapMark(s, fmt.Sprintf("recheck: %s, its attempt live again", id))
	res := e.reapResult(s)
	if res == nil {
		return
	}
	for i := range res.Objects {
		if res.Objects[i].ID == id && res.Objects[i].Outcome == ReapPending {
			res.Objects[i].Outcome, res.Objects[i].Reason = ReapKept, "attempt live again"
		}
	}
}

// reapSettled ends the round once every service of it has listed and run
// its destroys, or left it (stopped, disabled, forgotten): a ReapDone
// answers the requests it carries. It reports whether a new round started
// (asked for while this one ran), whose ops the caller must settle.
func (e *Engine) reapSettled() bool {
	r := e.round
	if r == nil {
		return false
	}
	// A member's leaving touches only its own service and entry, so any
	// order would do: the members go in results order, and those that
	// still owe something are kept, without a sort or a map at each step.
	kept := r.pending[:0]
	for _, m := range r.pending {
		name := m.svc.name
		s := m.current(e)
		res := &r.results[m.index]
		if s != nil {
			inFlight := s.op != nil && (s.op.op == protocol.OpListOwned || s.op.op == protocol.OpDestroy)
			if inFlight || s.state == sReady && (s.reapDue || len(s.destroy) > 0) {
				kept = append(kept, m)
				continue
			}
		}
		// Done, or left the round: what it still owed is dropped.
		why := "it is no longer configured"
		if s != nil {
			why = "it is " + s.state.String()
			s.reap, s.reapDue, s.destroy = nil, false, s.destroy[:0]
		}
		if !r.listed[name] {
			// No mark: a service leaves a round only when it stops
			// running, and becoming ready again marks it.
			res.Failed = "not listed: " + why
		}
		for i := range res.Objects {
			if res.Objects[i].Outcome == ReapPending {
				res.Objects[i].Outcome, res.Objects[i].Reason = ReapFailed, "not destroyed: "+why
			}
		}
		delete(r.index, name)
	}
	clear(r.pending[len(kept):])
	r.pending = kept
	if len(r.pending) > 0 {
		return false
	}
	e.round = nil
	if len(r.tickets) > 0 {
		// Only a round someone waits for is reported: the notes tell the
		// others, and the journal of periodic rounds stays as it was.
		e.emit(ReapDone{Round: r.n, Tickets: r.tickets, Snapshot: r.snap.at, Services: r.results})
	}
	if !e.reapAgain {
		return false
	}
	tickets := e.nextTickets
	e.reapAgain, e.nextTickets = false, nil
	e.startReap(tickets, true)
	return true
}

// reapListed judges one service's listing and queues the destroys. An
// object is destroyed only when it carries all three labels, names this
// node and this service, belongs to an attempt live neither at the snapshot
// nor now, and was not created after the snapshot.
func (e *Engine) reapListed(s *service, snap *reapSnap, list *protocol.OwnedList) {
	if snap == nil || list == nil {
		return
	}
	res := e.reapResult(s)
	if res != nil {
		e.round.listed[s.name] = true
	}
	seen := map[string]bool{}
	for _, o := range list.Objects {
		if reason := e.keep(s, snap, o); reason != "" {
			if reason == keepLive || reason == keepNewer {
				// Reapable once its attempt ends, or at the next snapshot.
				reapMark(s, fmt.Sprintf("recheck: %s, %s", o.ID, reason))
			}
			if res != nil {
				res.Objects = append(res.Objects, ReapObject{ID: o.ID, Kind: o.Kind, Attempt: o.Labels[protocol.LabelAttemptID],
					Outcome: ReapKept, Reason: reason})
			}
			continue
		}
		seen[o.ID] = true
		if s.orphans == nil {
			s.orphans = map[string]time.Time{}
		}
		first, known := s.orphans[o.ID]
		if !known {
			first = snap.at
			s.orphans[o.ID] = first
		}
		// Periods of time, not listings: `svcrun reap` asked four times in
		// four seconds must not force-destroy a busy object of an attempt
		// that ended seconds ago. Snapshot times, not listing times, so
		// that a slow list_owned does not push --force a period later.
		age := snap.at.Sub(first)
		period := int(age/e.cfg.ReapPeriod) + 1
		force := age >= time.Duration(e.cfg.ForceAfter)*e.cfg.ReapPeriod
		s.destroy = append(s.destroy, destroyReq{id: o.ID, attempt: o.Labels[protocol.LabelAttemptID], force: force})
		if res != nil {
			res.Objects = append(res.Objects, ReapObject{ID: o.ID, Kind: o.Kind, Attempt: o.Labels[protocol.LabelAttemptID],
				Outcome: ReapPending, Forced: force})
		}
		// Listed again, to see it gone or count the periods to --force.
		reapMark(s, fmt.Sprintf("recheck: orphan %s", o.ID))
		how := "destroy"
		if force {
			how = "destroy --force"
		}
		e.note(s.name, "%s %s: orphan of attempt %s (period %d)", how, o.ID, o.Labels[protocol.LabelAttemptID], period)
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
		return keepLive
	case !o.CreatedAt.IsZero() && o.CreatedAt.After(snap.at):
		return keepNewer
	}
	return ""
}

// The reasons to keep an object that a later listing may reap.
const (
	keepLive  = "attempt live"
	keepNewer = "created after the snapshot"
)
