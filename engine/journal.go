package engine

import (
	"encoding/json"
	"fmt"
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
