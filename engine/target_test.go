package engine

import (
	"encoding/json"
	"testing"
)

// TestServiceTarget: a service's name reads as its target, and anything
// else is refused with the name and the reason.
func TestServiceTarget(t *testing.T) {
	tests := []struct {
		name    string
		want    Target
		wantErr string
	}{
		{name: "db/kv", want: Target{Module: "db", Name: "kv"}},
		{name: "kv", wantErr: `service "kv": not a service name (module/name)`},
		{name: "/kv", wantErr: `service "/kv": not a service name (module/name)`},
		{name: "db/", wantErr: `service "db/": not a service name (module/name)`},
		{name: "a/b/c", wantErr: `service "a/b/c": not a service name (module/name)`},
	}
	for _, tt := range tests {
		got, err := ServiceTarget(tt.name)
		switch {
		case tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr):
			t.Errorf("ServiceTarget(%q): %v, want error %q", tt.name, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || got != tt.want):
			t.Errorf("ServiceTarget(%q) = %+v, %v; want %+v", tt.name, got, err, tt.want)
		}
	}
}

// TestTargetEventsJournal: the events that carry a service's target
// journal it as its name, as they did when they carried the name, so
// journals written before still replay.
func TestTargetEventsJournal(t *testing.T) {
	kv := Target{Module: "db", Name: "kv"}
	tests := []struct {
		ev   Event
		json string
	}{
		{ContainerEmptied{Service: kv}, `{"Service":"db/kv"}`},
		{Reset{Service: kv}, `{"Service":"db/kv"}`},
	}
	for _, tt := range tests {
		data, err := json.Marshal(tt.ev)
		if err != nil || string(data) != tt.json {
			t.Errorf("%s: %s, %v; want %s", tt.ev.EventName(), data, err, tt.json)
		}
		back, err := JournalEntry{Event: tt.ev.EventName(), Data: json.RawMessage(tt.json)}.DecodeEvent()
		if err != nil || back != tt.ev {
			t.Errorf("%s: decoded %+v, %v; want %+v", tt.ev.EventName(), back, err, tt.ev)
		}
	}
	if _, err := json.Marshal(Reset{Service: Target{Module: "db", Name: "p", Probe: true}}); err == nil {
		t.Error("a probe target marshalled: it would read back as a service")
	}
}
