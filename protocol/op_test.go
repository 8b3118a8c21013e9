package protocol

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/oarbank/svcrun/schemas"
)

func TestOps(t *testing.T) {
	want := []struct {
		op      Op
		timeout time.Duration
		schema  schemas.Name
	}{
		{OpFingerprint, 5 * time.Second, schemas.Fingerprint},
		{OpStart, 120 * time.Second, schemas.OpResult},
		{OpStop, 120 * time.Second, schemas.OpResult},
		{OpStatus, 5 * time.Second, schemas.Status},
		{OpReady, 5 * time.Second, schemas.Status},
		{OpListOwned, 5 * time.Second, schemas.OwnedList},
		{OpDestroy, 60 * time.Second, schemas.OpResult},
	}
	ops := Ops()
	if len(ops) != len(want) {
		t.Fatalf("Ops() has %d ops, want %d", len(ops), len(want))
	}
	for i, w := range want {
		if ops[i] != w.op {
			t.Errorf("Ops()[%d] = %s, want %s", i, ops[i], w.op)
		}
		got, err := ParseOp(string(w.op))
		if err != nil || got != w.op || !got.Valid() {
			t.Errorf("ParseOp(%q) = %q, %v", w.op, got, err)
		}
		if d := DefaultTimeout(w.op); d != w.timeout {
			t.Errorf("DefaultTimeout(%s) = %v, want %v", w.op, d, w.timeout)
		}
		if s := w.op.Schema(); s != w.schema {
			t.Errorf("%s.Schema() = %s, want %s", w.op, s, w.schema)
		}
	}
	for _, bad := range []string{"", "Start", "list-owned", "restart", " start"} {
		op, err := ParseOp(bad)
		if err == nil || !errors.Is(err, ErrUnknownOp) || op != "" || Op(bad).Valid() {
			t.Errorf("ParseOp(%q) = %q, %v; want ErrUnknownOp", bad, op, err)
		}
		if !strings.Contains(err.Error(), "list_owned") {
			t.Errorf("ParseOp(%q): %v should list the ops", bad, err)
		}
		if DefaultTimeout(Op(bad)) != 0 || Op(bad).Schema() != "" {
			t.Errorf("unknown op %q has a timeout or schema", bad)
		}
	}
}

func TestRoleString(t *testing.T) {
	if RoleService.String() != "service" || RoleProbe.String() != "probe" || Role(7).String() != "Role(7)" {
		t.Error("Role.String")
	}
	if _, err := Decode(OpFingerprint, Role(7), ok0(`{"healthy":true}`)); !usageErr(err) {
		t.Errorf("unknown role: %v", err)
	}
}

func TestValidObjectID(t *testing.T) {
	for _, c := range []struct {
		id   string
		want string // "" = valid
	}{
		{"a", ""},
		{"3f2a9c1d0b7e", ""},
		{"colima/vm-1", ""},
		{"vol:a_b.c@d#1", ""},
		{"a-", ""},
		{"ünïcødé-名前", ""},
		{"\uFFFD", ""},
		{strings.Repeat("x", 256), ""},
		{strings.Repeat("é", 128), ""},
		{"", "invalid object id: empty"},
		{strings.Repeat("x", 257), "invalid object id: 257 bytes long; the limit is 256"},
		{"-f", `invalid object id "-f": starts with '-', which would read as a flag`},
		{"--force", `invalid object id "--force": starts with '-', which would read as a flag`},
		{"a b", `invalid object id "a b": white space U+0020 at byte 1`},
		{" a", `invalid object id " a": white space U+0020 at byte 0`},
		{"a\n", `invalid object id "a\n": white space U+000A at byte 1`},
		{"a\u00a0b", `invalid object id "a\u00a0b": white space U+00A0 at byte 1`},
		{"a\u3000b", `invalid object id "a\u3000b": white space U+3000 at byte 1`},
		{"a\x00", `invalid object id "a\x00": non-printable character U+0000 at byte 1`},
		{"a\x7f", `invalid object id "a\x7f": non-printable character U+007F at byte 1`},
		{"a\u202eb", `invalid object id "a\u202eb": non-printable character U+202E at byte 1`},
		{"a\u200bb", `invalid object id "a\u200bb": non-printable character U+200B at byte 1`},
		{"a\xffb", "invalid object id: not valid UTF-8 at byte 1"},
		{"\xc3", "invalid object id: not valid UTF-8 at byte 0"},
	} {
		err := ValidObjectID(c.id)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("ValidObjectID(%q) = %v, want nil", c.id, err)
		case c.want != "" && (err == nil || err.Error() != c.want):
			t.Errorf("ValidObjectID(%q) = %v, want %s", c.id, err, c.want)
		case c.want != "" && !errors.Is(err, ErrInvalidObjectID):
			t.Errorf("ValidObjectID(%q) does not wrap ErrInvalidObjectID", c.id)
		}
	}
}
