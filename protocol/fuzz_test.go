package protocol

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// FuzzDecode feeds Decode arbitrary output for every op. The seed corpus is
// in testdata/fuzz/FuzzDecode. opIndex picks the op (modulo 7); an opIndex of
// 128 or more decodes a fingerprint as a probe's.
func FuzzDecode(f *testing.F) {
	for _, c := range decodeCases() {
		if c.role == RoleProbe && c.op != OpFingerprint {
			continue
		}
		for i, op := range Ops() {
			if op == c.op && len(c.out.Stdout) <= 4096 {
				idx := uint8(i)
				if c.role == RoleProbe {
					idx += 128
				}
				f.Add(idx, c.out.ExitCode, c.out.Stdout)
			}
		}
	}
	f.Fuzz(func(t *testing.T, opIndex uint8, exit int, stdout []byte) {
		op := Ops()[int(opIndex)%7]
		role := RoleService
		if opIndex >= 128 && op == OpFingerprint {
			role = RoleProbe
		}
		out := Output{Stdout: stdout, ExitCode: exit, StderrTail: []byte("tail\n")}
		res, err := Decode(op, role, out)

		if err != nil {
			if !reflect.DeepEqual(res, Result{}) {
				t.Fatalf("both a result and an error: %+v, %v", res, err)
			}
			msg := err.Error()
			if msg == "" || strings.ContainsAny(msg, "\r\n") {
				t.Fatalf("error message not one line: %q", msg)
			}
			var pe *ProtocolError
			var oe *OpError
			switch {
			case errors.As(err, &pe):
				if len(pe.Reasons) == 0 {
					t.Fatal("ProtocolError without reasons")
				}
				for _, r := range pe.Reasons {
					if r == "" {
						t.Fatal("empty reason")
					}
				}
				if pe.Op != op || pe.ExitCode != exit {
					t.Fatalf("ProtocolError for %s exit %d: %+v", op, exit, pe)
				}
				if exit != 0 && op.Schema() != "service-opresult-1" {
					t.Fatalf("non-zero exit of %s gave a protocol error: %v", op, err)
				}
			case errors.As(err, &oe):
				if exit == 0 {
					t.Fatalf("OpError with exit 0: %v", err)
				}
				if oe.Op != op || oe.ExitCode != exit {
					t.Fatalf("OpError for %s exit %d: %+v", op, exit, oe)
				}
			default:
				t.Fatalf("unexpected error type %T: %v", err, err)
			}
			return
		}

		if exit != 0 {
			t.Fatalf("success with exit %d", exit)
		}
		if res.Op != op {
			t.Fatalf("result for %s, want %s", res.Op, op)
		}
		set := 0
		for _, p := range []bool{res.Fingerprint != nil, res.OpResult != nil, res.Status != nil, res.OwnedList != nil} {
			if p {
				set++
			}
		}
		if set != 1 {
			t.Fatalf("%d typed values set, want 1: %+v", set, res)
		}
		switch op {
		case OpFingerprint:
			f := res.Fingerprint
			if f == nil {
				t.Fatal("fingerprint without Fingerprint")
			}
			if role == RoleService && f.Running == nil {
				t.Fatal("service fingerprint without running")
			}
			for k, v := range f.Pools {
				if v < 0 {
					t.Fatalf("pool %q = %d", k, v)
				}
			}
			for k, v := range f.Attrs {
				switch v.(type) {
				case string, float64, bool:
				default:
					t.Fatalf("attr %q is %T", k, v)
				}
			}
			if f.Reserve != nil && !(f.Reserve.MemGB >= 0) {
				t.Fatalf("mem_gb %v", f.Reserve.MemGB)
			}
		case OpStart, OpStop, OpDestroy:
			if res.OpResult == nil || !res.OpResult.OK {
				t.Fatalf("%s: %+v", op, res.OpResult)
			}
		case OpStatus, OpReady:
			if res.Status == nil {
				t.Fatalf("%s without Status", op)
			}
		case OpListOwned:
			if res.OwnedList == nil {
				t.Fatal("list_owned without OwnedList")
			}
			for i, o := range res.OwnedList.Objects {
				if err := ValidObjectID(o.ID); err != nil {
					t.Fatalf("object %d: %v", i, err)
				}
				if o.Labels == nil {
					t.Fatalf("object %d without labels", i)
				}
			}
		}
		for _, w := range res.Warnings {
			if strings.ContainsAny(w, "\r\n") {
				t.Fatalf("warning not one line: %q", w)
			}
		}
	})
}
