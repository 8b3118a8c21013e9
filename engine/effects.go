package engine

import (
	"fmt"
	"strings"
	"time"

	"github.com/oarbank/svcrun/protocol"
)

// Effect is an output of Engine.Step. EffectName is its kind, one word
// for logs and the event stream, as EventName is for events.
//
// The three most frequent kinds, *RunOp, *SetTimer and *CancelTimer, point
// into the engine's own storage, which the next Step writes over: boxing a
// new one for each (most of a step's allocations) cost the simulator a
// fifth of its speed. Whoever keeps one past the step keeps a copy of the
// value it points to. The other kinds are values.
type Effect interface{ EffectName() string }

// OpID names one op run.
type OpID uint64

// RunOp runs one op of a service or probe; the driver answers with OpDone.
// Step emits it as *RunOp, valid until the next Step.
type RunOp struct {
	ID     OpID
	Target Target
	// Index numbers Target among the services and probes the engine
	// holds, none sharing one, so that an executor can keep its state of
	// each in a slice instead of hashing targets at every op. A forgotten
	// target's number may be another's later, and a new engine numbers
	// them again.
	Index   uint32
	Op      protocol.Op
	Args    []string // destroy: the object id, then --force when forced
	Timeout time.Duration
}

// TimerKind says what a timer is for.
type TimerKind uint8

const (
	TimerIdle          TimerKind = iota + 1 // on_demand service idle long enough: stop it
	TimerBackoff                            // a failed service may start again
	TimerReadyPoll                          // poll ready again
	TimerStartDeadline                      // start_timeout_s is over: not ready is a failure
	TimerStatus                             // status of a running service is due
	TimerFingerprint                        // fingerprint of a running service is due
	TimerResetAfter                         // ready long enough: forget failures
	TimerProbe                              // a probe's period is over
	TimerDoctor                             // the doctor debounce window closed
	TimerLeaseWait                          // a waiting lease's deadline
	TimerLeaseTTL                           // an admitted lease's TTL
	TimerReap                               // a reap round is due
)

var timerNames = [...]string{"", "idle", "backoff", "ready-poll", "start-deadline", "status", "fingerprint",
	"reset-after", "probe", "doctor", "lease-wait", "lease-ttl", "reap"}

func (k TimerKind) String() string {
	if int(k) < len(timerNames) {
		return timerNames[k]
	}
	return "timer?"
}

// TimerKey names a timer: at most one is pending per key. Subject is a
// service, a probe or a lease. Slot is the same key as a small number
// (owner base + kind), unique among pending timers, so that a driver can
// keep its timers in a slice instead of hashing subjects.
type TimerKey struct {
	Kind    TimerKind
	Subject string
	Slot    uint32
}

// timerKinds is the room each owner has in the slot space.
const timerKinds = 16

// SetTimer asks for Fire{Key} at At, replacing a pending timer of the same
// key. Step emits it as *SetTimer, valid until the next Step.
type SetTimer struct {
	Key TimerKey
	At  time.Time
}

// CancelTimer drops the pending timer of Key, if any. Step emits it as
// *CancelTimer, valid until the next Step.
type CancelTimer struct{ Key TimerKey }

// Kill forcefully stops everything in a service's process container (the
// escalation of a failed stop).
type Kill struct{ Service Target }

// Freeze stops a service's processes from running; Thaw resumes them.
type Freeze struct{ Service Target }

// Thaw resumes a frozen service.
type Thaw struct{ Service Target }

// Admitted answers an Acquire: the lease holds, with the services it uses.
type Admitted struct {
	Lease    LeaseID
	Services []string
}

// AlreadyHeld answers an Acquire of an attempt whose lease Held is already
// admitted, with the same requirements: that lease is the answer (its TTL
// restarted), no new lease is made. Lease is the request's id, which the
// driver routes the answer by.
type AlreadyHeld struct {
	Lease    LeaseID
	Held     LeaseID
	Services []string
	Expires  time.Time // zero without a TTL
}

// Rejected answers an Acquire that cannot be admitted, or whose wait ran
// out.
type Rejected struct {
	Lease  LeaseID
	Reason string
}

// Expired says an admitted lease ended without its holder releasing it:
// its TTL passed (Reason empty), or what it needed left the node (Reason
// says what, e.g. its module was removed from the configuration).
type Expired struct {
	Lease  LeaseID
	Reason string
}

// Renewed answers a Renew: the lease now expires at Expires (zero: no TTL).
type Renewed struct {
	Lease   LeaseID
	Expires time.Time
}

// Released answers a Release.
type Released struct{ Lease LeaseID }

// LeaseUnknown answers a Renew or Release of a lease the engine does not
// hold (never admitted, released, or expired). Reason is set the first time
// a holder asks about a lease the engine ended itself (Expired with a
// Reason): why it ended.
type LeaseUnknown struct {
	Lease  LeaseID
	Reason string
}

// ReapDone reports the end of a reap round asked for by ReapNow requests
// (Tickets): what each service's listing gave, object by object. Periodic
// rounds nobody asked for end without one.
type ReapDone struct {
	Round    uint64
	Tickets  []string
	Snapshot time.Time // when the live attempts were taken
	Services []ReapService
}

// ReapService is one service's part of a round. A service not listed says
// why: Skipped (disabled, manual, not running) or Failed (its list_owned
// failed, or it stopped before listing).
type ReapService struct {
	Service string
	Skipped string
	Failed  string
	Objects []ReapObject
}

// ReapObject is what a round did with one listed object.
type ReapObject struct {
	ID      string
	Kind    string
	Attempt string      // its oarbank.attempt_id label, if any
	Outcome ReapOutcome // destroyed, kept or failed
	Reason  string      // why kept or failed
	Forced  bool        // destroyed with --force
}

// ReapOutcome is what became of a listed object.
type ReapOutcome string

const (
	ReapDestroyed ReapOutcome = "destroyed"
	ReapKept      ReapOutcome = "kept"
	ReapFailed    ReapOutcome = "failed"
	// ReapPending is a destroy queued, not yet done; a ReapDone has none.
	ReapPending ReapOutcome = "pending"
)

// PutLease persists an admitted lease.
type PutLease struct{ Lease LeaseRecord }

// DeleteLease removes a lease from the store.
type DeleteLease struct{ Lease LeaseID }

// PutService persists a service's failure record.
type PutService struct{ Service ServiceRecord }

// Note explains a decision, for logs and traces. Level says how loud the
// agent's log line is; traces leave it out.
type Note struct {
	Subject string
	Text    string
	Level   NoteLevel
}

// NoteLevel ranks a note for the log.
type NoteLevel int8

const (
	NoteInfo  NoteLevel = iota // the usual course: starting, ready, stopped
	NoteWarn                   // something failed and svcrun copes: a crash, a failed op, an escalation, an expiry
	NoteError                  // a person is needed: a service marked unhealthy
)

func (*RunOp) EffectName() string       { return "run" }
func (*SetTimer) EffectName() string    { return "set-timer" }
func (*CancelTimer) EffectName() string { return "cancel-timer" }
func (Kill) EffectName() string         { return "kill" }
func (Freeze) EffectName() string       { return "freeze" }
func (Thaw) EffectName() string         { return "thaw" }
func (Admitted) EffectName() string     { return "admitted" }
func (AlreadyHeld) EffectName() string  { return "already-held" }
func (Rejected) EffectName() string     { return "rejected" }
func (Expired) EffectName() string      { return "expired" }
func (Renewed) EffectName() string      { return "renewed" }
func (Released) EffectName() string     { return "released" }
func (LeaseUnknown) EffectName() string { return "lease-unknown" }
func (PutLease) EffectName() string     { return "put-lease" }
func (DeleteLease) EffectName() string  { return "delete-lease" }
func (PutService) EffectName() string   { return "put-service" }
func (Note) EffectName() string         { return "note" }
func (ReapDone) EffectName() string     { return "reap-done" }

// slab hands out effects of one kind from storage reused every step:
// chunks never move, so an effect handed out stays where it is until the
// slab is reset.
type slab[T any] struct {
	chunks [][]T
	n      int
}

const slabChunk = 256

// next is the next effect of the step, holding whatever the last step
// that used it left: the caller sets every field.
func (s *slab[T]) next() *T {
	c, i := s.n/slabChunk, s.n%slabChunk
	if c == len(s.chunks) {
		s.chunks = append(s.chunks, make([]T, slabChunk))
	}
	s.n++
	return &s.chunks[c][i]
}

// reset makes the storage of every effect handed out free for the next
// step.
func (s *slab[T]) reset() { s.n = 0 }

// LeaseOf names the lease an answer is about, or "" for other effects.
func LeaseOf(f Effect) LeaseID {
	switch f := f.(type) {
	case Admitted:
		return f.Lease
	case AlreadyHeld:
		return f.Lease
	case Rejected:
		return f.Lease
	case Renewed:
		return f.Lease
	case Released:
		return f.Lease
	case LeaseUnknown:
		return f.Lease
	case Expired:
		return f.Lease
	}
	return ""
}

// FormatEffect renders an effect as one canonical line: the journal compares
// these, and traces print them.
func FormatEffect(f Effect) string {
	switch f := f.(type) {
	case *RunOp:
		args := ""
		if len(f.Args) > 0 {
			args = " " + strings.Join(f.Args, " ")
		}
		return fmt.Sprintf("run %s %s%s #%d", f.Target, f.Op, args, f.ID)
	case Admitted:
		return fmt.Sprintf("admitted %s (%s)", f.Lease, strings.Join(f.Services, ", "))
	case AlreadyHeld:
		return fmt.Sprintf("answered %s with %s, already held by its attempt (%s)", f.Lease, f.Held,
			strings.Join(f.Services, ", "))
	case Rejected:
		return fmt.Sprintf("rejected %s: %s", f.Lease, f.Reason)
	case Expired:
		if f.Reason != "" {
			return fmt.Sprintf("expired %s: %s", f.Lease, f.Reason)
		}
		return fmt.Sprintf("expired %s", f.Lease)
	case Renewed:
		return fmt.Sprintf("renewed %s", f.Lease)
	case Released:
		return fmt.Sprintf("released %s", f.Lease)
	case LeaseUnknown:
		if f.Reason != "" {
			return fmt.Sprintf("unknown lease %s (it ended: %s)", f.Lease, f.Reason)
		}
		return fmt.Sprintf("unknown lease %s", f.Lease)
	case Kill:
		return "kill " + f.Service.String()
	case Freeze:
		return "freeze " + f.Service.String()
	case Thaw:
		return "thaw " + f.Service.String()
	case Note:
		return f.Subject + ": " + f.Text
	case ReapDone:
		var n [3]int
		for _, s := range f.Services {
			for _, o := range s.Objects {
				switch o.Outcome {
				case ReapDestroyed:
					n[0]++
				case ReapKept:
					n[1]++
				default:
					n[2]++
				}
			}
		}
		return fmt.Sprintf("reap round %d done (%s): %d destroyed, %d kept, %d failed", f.Round,
			strings.Join(f.Tickets, ", "), n[0], n[1], n[2])
	case *SetTimer:
		return fmt.Sprintf("timer %s %s at %s", f.Key.Kind, f.Key.Subject, f.At.UTC().Format(time.RFC3339Nano))
	case *CancelTimer:
		return fmt.Sprintf("cancel %s %s", f.Key.Kind, f.Key.Subject)
	case PutLease:
		return "persist lease " + string(f.Lease.ID)
	case DeleteLease:
		return "forget lease " + string(f.Lease)
	case PutService:
		return fmt.Sprintf("persist %s failures=%d unhealthy=%v", f.Service.Name, f.Service.Failures, f.Service.Unhealthy)
	}
	return fmt.Sprintf("%T", f)
}
