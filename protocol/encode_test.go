package protocol

import (
	"encoding/json"
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
				Attrs: map[string]any{"v": "1", "n": 2.5, "b": true}, Pools: map[string]int64{"db": 15, "zero": 0}, Reserve: &Reserve{MemGB: 0}},
			Result{Fingerprint: &Fingerprint{Healthy: true, Running: ptr(false), Message: "up \"quoted\" <&>\x01 é",
				Attrs: map[string]any{"v": "1", "n": 2.5, "b": true}, Pools: map[string]int64{"db": 15, "zero": 0}, Reserve: &Reserve{MemGB: 0}}}},
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
			OwnedList{Objects: []Object{{ID: "k1", Kind: KindOther}, {ID: "db-2", Kind: KindVolume, Labels: map[string]string{LabelNode: "n"}, CreatedAt: created, Busy: true}}},
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
