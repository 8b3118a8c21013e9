package protocol

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestEncodeDecodes: every result type encodes to a document Decode accepts
// and decodes back to the same value, for the ops that print it.
func TestEncodeDecodes(t *testing.T) {
	created := time.Date(2026, 12, 1, 17, 0, 0, 5, time.FixedZone("x", 3600))
	for _, c := range []struct {
		name string
		op   Op
		role Role
		v    any
		want Result
	}{
		{"fingerprint, every field", OpFingerprint, RoleService,
			Fingerprint{Healthy: true, Running: ptr(false), Message: "up \"quoted\" <&>\x01 é",
				Attrs: map[string]any{"v": "1", "n": 2.5, "b": true}, Pools: map[string]int64{"db": 15, "zero": 0},
				Reserve: &Reserve{MemGB: 0}},
			Result{Fingerprint: &Fingerprint{Healthy: true, Running: ptr(false), Message: "up \"quoted\" <&>\x01 é",
				Attrs: map[string]any{"v": "1", "n": 2.5, "b": true}, Pools: map[string]int64{"db": 15, "zero": 0},
				Reserve: &Reserve{MemGB: 0}}}},
		{"probe fingerprint without running", OpFingerprint, RoleProbe,
			Fingerprint{Healthy: false, Message: "no java"},
			Result{Fingerprint: &Fingerprint{Healthy: false, Message: "no java"}}},
		{"start result", OpStart, RoleService, OpResult{OK: true}, Result{OpResult: &OpResult{OK: true}}},
		{"stop result, escalated", OpStop, RoleService,
			OpResult{OK: true, Changed: true, Escalated: true, Message: "killed"},
			Result{OpResult: &OpResult{OK: true, Changed: true, Escalated: true, Message: "killed"}}},
		{"status", OpReady, RoleService, Status{Running: true, Message: "warming"},
			Result{Status: &Status{Running: true, Message: "warming"}}},
		{"empty owned list", OpListOwned, RoleService, OwnedList{}, Result{OwnedList: &OwnedList{Objects: []Object{}}}},
		{"owned list", OpListOwned, RoleService,
			OwnedList{Objects: []Object{{ID: "k1", Kind: KindOther},
				{ID: "db-2", Kind: KindVolume, Labels: map[string]string{LabelNode: "n"}, CreatedAt: created, Busy: true}}},
			Result{OwnedList: &OwnedList{Objects: []Object{{ID: "k1", Kind: KindOther, Labels: map[string]string{}},
				{ID: "db-2", Kind: KindVolume, Labels: map[string]string{LabelNode: "n"}, CreatedAt: created.UTC(), Busy: true}}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			data, err := json.Marshal(c.v)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Decode(c.op, c.role, Output{Stdout: data})
			if err != nil {
				t.Fatalf("%s: %v", data, err)
			}
			c.want.Op = c.op
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("%s: decoded (-want +got):\n%s", data, d)
			}
		})
	}
}

// TestJSONRoundTrip: what MarshalJSON writes, json.Unmarshal reads back
// whole (svcrun's journal depends on it), and so are journals written
// before the wire form, with Go's field names.
func TestJSONRoundTrip(t *testing.T) {
	running := true
	created := time.Date(2026, 12, 1, 17, 0, 0, 5, time.UTC)
	fp := Fingerprint{Healthy: true, Running: &running, Message: "m", Attrs: map[string]any{"socket": "/s"},
		Pools: map[string]int64{"p": 2}, Reserve: &Reserve{MemGB: 1.5}}
	list := OwnedList{Objects: []Object{{ID: "o1", Kind: "volume", Labels: map[string]string{"a": "b"},
		CreatedAt: created, Busy: true}}}
	for _, v := range []any{fp, list} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		back := reflect.New(reflect.TypeOf(v))
		if err := json.Unmarshal(b, back.Interface()); err != nil {
			t.Fatal(err)
		}
		if got := back.Elem().Interface(); !reflect.DeepEqual(got, v) {
			t.Errorf("round trip of %s:\n got %+v\nwant %+v", b, got, v)
		}
	}
	var r Reserve
	var o Object
	if err := json.Unmarshal([]byte(`{"MemGB": 2}`), &r); err != nil || r.MemGB != 2 {
		t.Errorf("older journal's reserve: %+v %v", r, err)
	}
	if err := json.Unmarshal([]byte(`{"ID": "o", "CreatedAt": "2026-12-01T17:00:00.000000005Z"}`),
		&o); err != nil || !o.CreatedAt.Equal(created) || o.ID != "o" {
		t.Errorf("older journal's object: %+v %v", o, err)
	}
}
