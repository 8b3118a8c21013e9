package engine

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// JournalEntry is one engine step as the event journal keeps it: the time,
// the event (its name and JSON), and the effects as canonical text lines.
// Replaying the events through a new engine must give the same effects:
// that is how a production incident becomes a reproducible scenario.
type JournalEntry struct {
	At      time.Time       `json:"at"`
	Event   string          `json:"event"`
	Data    json.RawMessage `json:"data"`
	Effects []string        `json:"effects,omitempty"`
}

// NewJournalEntry records one step.
func NewJournalEntry(at time.Time, ev Event, effects []Effect) (JournalEntry, error) {
	data, err := json.Marshal(ev)
	if err != nil {
		return JournalEntry{}, fmt.Errorf("journal %s: %w", ev.EventName(), err)
	}
	e := JournalEntry{At: at, Event: ev.EventName(), Data: data}
	for _, f := range effects {
		if _, isNote := f.(Note); isNote {
			continue // notes are for people; their wording may change
		}
		e.Effects = append(e.Effects, FormatEffect(f))
	}
	return e, nil
}

// decoders rebuild each kind of event from its JSON, by event name.
var decoders = map[string]func([]byte) (Event, error){
	Boot{}.EventName():               decode[Boot],
	Reload{}.EventName():             decode[Reload],
	Acquire{}.EventName():            decode[Acquire],
	Renew{}.EventName():              decode[Renew],
	Release{}.EventName():            decode[Release],
	(*OpDone)(nil).EventName():       decodeRef[OpDone],
	Fire{}.EventName():               decode[Fire],
	ContainerEmptied{}.EventName():   decode[ContainerEmptied],
	ContainerPopulated{}.EventName(): decode[ContainerPopulated],
	MemberExited{}.EventName():       decode[MemberExited],
	Paused{}.EventName():             decode[Paused],
	Doctor{}.EventName():             decode[Doctor],
	MemoryPressure{}.EventName():     decode[MemoryPressure],
	Reset{}.EventName():              decode[Reset],
	ReapNow{}.EventName():            decode[ReapNow],
}

func decode[T Event](data []byte) (Event, error) {
	var x T
	err := json.Unmarshal(data, &x)
	return x, err
}

// decodeRef rebuilds the events that travel as pointers.
func decodeRef[T any, P interface {
	*T
	Event
}](data []byte) (Event, error) {
	x := P(new(T))
	err := json.Unmarshal(data, x)
	return x, err
}

// DecodeEvent rebuilds the event of a journal entry.
func (j JournalEntry) DecodeEvent() (Event, error) {
	dec, ok := decoders[j.Event]
	if !ok {
		return nil, fmt.Errorf("journal: unknown event %q", j.Event)
	}
	ev, err := dec(j.Data)
	if err != nil {
		return nil, fmt.Errorf("journal: %s event: %w", j.Event, err)
	}
	return ev, nil
}

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
		return fmt.Sprintf("answered %s with %s, already held by its attempt (%s)", f.Lease, f.Held, strings.Join(f.Services, ", "))
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
		return fmt.Sprintf("reap round %d done (%s): %d destroyed, %d kept, %d failed", f.Round, strings.Join(f.Tickets, ", "), n[0], n[1], n[2])
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
