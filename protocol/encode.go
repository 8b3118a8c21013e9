package protocol

import (
	"encoding/json"
	"time"
)

// The wire form of each result, for the services that print them (the Go
// SDK, sdk/module). The result types carry no JSON tags so that nothing but
// Decode reads an op's output; these mirror the schemas instead, and
// TestEncodeDecodes proves that each encodes to what Decode accepts.

type wireFingerprint struct {
	Healthy bool             `json:"healthy"`
	Running *bool            `json:"running,omitempty"`
	Message string           `json:"message,omitempty"`
	Attrs   map[string]any   `json:"attrs,omitempty"`
	Pools   map[string]int64 `json:"pools,omitempty"`
	Reserve *wireReserve     `json:"reserve,omitempty"`
}

type wireReserve struct {
	MemGB float64 `json:"mem_gb"`
}

// MarshalJSON encodes f as a fingerprint document; a nil Running is left
// out, as a probe may.
func (f Fingerprint) MarshalJSON() ([]byte, error) {
	w := wireFingerprint{Healthy: f.Healthy, Running: f.Running, Message: f.Message, Attrs: f.Attrs, Pools: f.Pools}
	if f.Reserve != nil {
		w.Reserve = &wireReserve{MemGB: f.Reserve.MemGB}
	}
	return json.Marshal(w)
}

// MarshalJSON encodes r as an op result document. changed is always
// written, so that idempotency shows in the raw output too.
func (r OpResult) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		OK        bool   `json:"ok"`
		Changed   bool   `json:"changed"`
		Escalated bool   `json:"escalated,omitempty"`
		Message   string `json:"message,omitempty"`
	}{r.OK, r.Changed, r.Escalated, r.Message})
}

// MarshalJSON encodes s as a status document.
func (s Status) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Running bool   `json:"running"`
		Ready   bool   `json:"ready"`
		Message string `json:"message,omitempty"`
	}{s.Running, s.Ready, s.Message})
}

// MarshalJSON encodes l as an owned list document; no objects is [], not
// null, which the schema refuses.
func (l OwnedList) MarshalJSON() ([]byte, error) {
	objects := l.Objects
	if objects == nil {
		objects = []Object{}
	}
	return json.Marshal(struct {
		Objects []Object `json:"objects"`
	}{objects})
}

// MarshalJSON encodes o as one object of an owned list: nil labels are {},
// a zero CreatedAt is left out and any other is written in UTC.
func (o Object) MarshalJSON() ([]byte, error) {
	labels := o.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	var created string
	if !o.CreatedAt.IsZero() {
		created = o.CreatedAt.UTC().Format(time.RFC3339Nano)
	}
	return json.Marshal(struct {
		ID        string            `json:"id"`
		Kind      string            `json:"kind"`
		Labels    map[string]string `json:"labels"`
		CreatedAt string            `json:"created_at,omitempty"`
		Busy      bool              `json:"busy,omitempty"`
	}{o.ID, o.Kind, labels, created, o.Busy})
}

// UnmarshalJSON reads a reserve back from its wire form, for svcrun's own
// journal, which stores op outcomes as MarshalJSON wrote them (journals
// written before the wire form used the field name MemGB: read too). An
// op's output is never read this way: Decode validates it.
func (r *Reserve) UnmarshalJSON(b []byte) error {
	var w struct {
		MemGB  *float64 `json:"mem_gb"`
		Legacy *float64 `json:"MemGB"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = Reserve{}
	switch {
	case w.MemGB != nil:
		r.MemGB = *w.MemGB
	case w.Legacy != nil:
		r.MemGB = *w.Legacy
	}
	return nil
}

// UnmarshalJSON reads an object back from its wire form, for svcrun's own
// journal (as Reserve's; the field name CreatedAt of older journals is
// read too).
func (o *Object) UnmarshalJSON(b []byte) error {
	var w struct {
		ID        string            `json:"id"`
		Kind      string            `json:"kind"`
		Labels    map[string]string `json:"labels"`
		CreatedAt *time.Time        `json:"created_at"`
		Legacy    *time.Time        `json:"CreatedAt"`
		Busy      bool              `json:"busy"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*o = Object{ID: w.ID, Kind: w.Kind, Labels: w.Labels, Busy: w.Busy}
	switch {
	case w.CreatedAt != nil:
		o.CreatedAt = *w.CreatedAt
	case w.Legacy != nil:
		o.CreatedAt = *w.Legacy
	}
	return nil
}
