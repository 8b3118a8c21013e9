package protocol

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func ok0(s string) Output             { return Output{Stdout: []byte(s)} }
func exitN(code int, s string) Output { return Output{Stdout: []byte(s), ExitCode: code} }
func ptr[T any](v T) *T               { return &v }

type decodeCase struct {
	name string
	op   Op
	role Role
	out  Output
	// want is the result when fails is nil.
	want Result
	// fails says what the error must be (protocolErr, opFailed,
	// usageErr); err is its exact Error(), or, when it starts with "~", a
	// substring of it.
	fails func(error) bool
	err   string
	// reasons, when set, are the exact ProtocolError.Reasons.
	reasons []string
}

func decodeCases() []decodeCase {
	fp := OpFingerprint
	long := strings.Repeat("x", 257)
	return []decodeCase{
		// fingerprint: good
		{
			name: "service fingerprint, every field",
			op:   fp,
			out: ok0(`{"healthy":true,"running":true,"message":"up","attrs":{"v":"1.2","cpus":4,"rosetta":false,` +
				`"load":0.5},"pools":{"slots":4,"gpu":0},"reserve":{"mem_gb":8.5}}` + "\n"),
			want: Result{Op: fp, Fingerprint: &Fingerprint{
				Healthy: true, Running: ptr(true), Message: "up",
				Attrs:   map[string]any{"v": "1.2", "cpus": 4.0, "rosetta": false, "load": 0.5},
				Pools:   map[string]int64{"slots": 4, "gpu": 0},
				Reserve: &Reserve{MemGB: 8.5},
			}},
		},
		{
			name: "probe fingerprint without running is fine",
			op:   fp, role: RoleProbe,
			out:  ok0(`{"healthy":false,"message":"no JDK 17"}`),
			want: Result{Op: fp, Fingerprint: &Fingerprint{Healthy: false, Message: "no JDK 17"}},
		},
		{
			name: "probe fingerprint with running keeps it",
			op:   fp, role: RoleProbe,
			out:  ok0(`{"healthy":true,"running":false}`),
			want: Result{Op: fp, Fingerprint: &Fingerprint{Healthy: true, Running: ptr(false)}},
		},
		{
			name:  "integral pools in any JSON spelling",
			op:    fp,
			out:   ok0(`{"healthy":true,"running":true,"pools":{"a":2.0,"b":1e3,"c":25E-1e0,"d":9223372036854775807,"e":-0}}`),
			fails: protocolErr,
			err:   `fingerprint: protocol error: invalid JSON at byte 65: expected ',' or '}' in object, found character 'e'`,
		},
		{
			name: "integral pools: 2.0, 1e3, 5E+0, max int64, -0",
			op:   fp,
			out:  ok0(`{"healthy":true,"running":true,"pools":{"a":2.0,"b":1e3,"c":5E+0,"d":9223372036854775807,"e":-0}}`),
			want: Result{Op: fp, Fingerprint: &Fingerprint{Healthy: true, Running: ptr(true),
				Pools: map[string]int64{"a": 2, "b": 1000, "c": 5, "d": 9223372036854775807, "e": 0}}},
		},
		{
			name: "string escapes decode, surrogate pairs included",
			op:   fp,
			out:  ok0(`{"healthy":true,"running":true,"message":"caf\u00e9 \ud83d\ude80 \"q\" \\ \/ \t"}`),
			want: Result{Op: fp, Fingerprint: &Fingerprint{Healthy: true, Running: ptr(true), Message: "café 🚀 \"q\" \\ / \t"}},
		},
		// fingerprint: bad
		{
			name: "service fingerprint without running",
			op:   fp, out: ok0(`{"healthy":true}`),
			fails: protocolErr,
			err:   "fingerprint: protocol error: /running: missing required property (a service must report it)",
		},
		{
			name: "unknown property runing",
			op:   fp, out: ok0(`{"healthy":true,"runing":true}`),
			fails:   protocolErr,
			reasons: []string{"/runing: unknown property", "/running: missing required property (a service must report it)"},
		},
		{
			name: "wrong types",
			op:   fp, out: ok0(`{"healthy":"yes","running":1,"message":false}`),
			fails: protocolErr,
			err: "fingerprint: protocol error: /healthy: must be a boolean, not a string; /message: must be a " +
				"string, not a boolean; /running: must be a boolean, not a number",
		},
		{
			name: "negative pool",
			op:   fp, out: ok0(`{"healthy":true,"running":true,"pools":{"gpu":-1}}`),
			fails: protocolErr, err: "fingerprint: protocol error: /pools/gpu: must be >= 0",
		},
		{
			name: "fractional pool",
			op:   fp, out: ok0(`{"healthy":true,"running":true,"pools":{"gpu":1.5}}`),
			fails: protocolErr, err: "fingerprint: protocol error: /pools/gpu: must be an integer, not a fraction",
		},
		{
			name: "pool above int64",
			op:   fp, out: ok0(`{"healthy":true,"running":true,"pools":{"gpu":9223372036854775808}}`),
			fails: protocolErr, err: "fingerprint: protocol error: /pools/gpu: must be <= 9223372036854775807",
		},
		{
			name: "pool far above int64, in exponent form",
			op:   fp, out: ok0(`{"healthy":true,"running":true,"pools":{"gpu":1e300}}`),
			fails: protocolErr, err: "fingerprint: protocol error: /pools/gpu: must be <= 9223372036854775807",
		},
		{
			name: "negative mem_gb",
			op:   fp, out: ok0(`{"healthy":true,"running":true,"reserve":{"mem_gb":-0.5}}`),
			fails: protocolErr, err: "fingerprint: protocol error: /reserve/mem_gb: must be >= 0",
		},
		{
			name: "reserve without mem_gb",
			op:   fp, out: ok0(`{"healthy":true,"running":true,"reserve":{}}`),
			fails: protocolErr, err: "fingerprint: protocol error: /reserve/mem_gb: missing required property",
		},
		{
			name: "attrs with a nested object, an array and null",
			op:   fp, out: ok0(`{"healthy":true,"running":true,"attrs":{"o":{"a":1},"a":[],"n":null}}`),
			fails: protocolErr,
			err: "fingerprint: protocol error: /attrs/a: must be a boolean, number or string, not an array; " +
				"/attrs/n: must be a boolean, number or string, not null; /attrs/o: must be a boolean, number or " +
				"string, not an object",
		},
		{
			name: "number beyond float64",
			op:   fp, out: ok0(`{"healthy":true,"running":true,"attrs":{"x":1e400}}`),
			fails: protocolErr, err: "fingerprint: protocol error: /attrs/x: number 1e400 is out of range",
		},
		{
			name: "number with an absurd exponent never reaches the validator",
			op:   fp, out: ok0(`{"healthy":true,"running":true,"reserve":{"mem_gb":1e-99999999}}`),
			fails: protocolErr, err: "fingerprint: protocol error: /reserve/mem_gb: number 1e-99999999 is out of range",
		},
		{
			name: "number literal too long",
			op:   fp, out: ok0(`{"healthy":true,"running":true,"attrs":{"x":1` + strings.Repeat("0", 100) + `}}`),
			fails: protocolErr, err: "fingerprint: protocol error: /attrs/x: number is 101 characters long; the limit is 100",
		},
		{
			name: "every violation, sorted, pointers escaped",
			op:   fp, out: ok0(`{"zz":1,"pools":{"a/b":-1,"c~d":-2},"healthy":null,"aa":2}`),
			fails: protocolErr,
			err: "fingerprint: protocol error: /aa: unknown property; /healthy: must be a boolean, not null; " +
				"/pools/a~1b: must be >= 0; /pools/c~0d: must be >= 0; /running: missing required property (a service " +
				"must report it); /zz: unknown property",
		},
		{
			name: "many violations are cut short in Error but all kept",
			op:   fp, out: ok0(`{"healthy":true,"running":true,"a":1,"b":1,"c":1,"d":1,"e":1,"f":1,"g":1,"h":1,"i":1,"j":1}`),
			fails: protocolErr,
			err: "fingerprint: protocol error: /a: unknown property; /b: unknown property; /c: unknown property; " +
				"/d: unknown property; /e: unknown property; /f: unknown property; /g: unknown property; /h: unknown " +
				"property; and 2 more",
		},
		{
			name: "duplicate top-level key",
			op:   fp, out: ok0(`{"healthy":true,"running":true,"healthy":false}`),
			fails: protocolErr, err: `fingerprint: protocol error: document: duplicate key "healthy"`,
		},
		// documents
		{
			name: "empty stdout", op: OpStatus, out: ok0(""),
			fails: protocolErr, err: "status: protocol error: stdout is empty; expected one JSON document",
		},
		{
			name: "whitespace only", op: OpStatus, out: ok0(" \n\t\r\n"),
			fails: protocolErr, err: "status: protocol error: stdout holds only whitespace; expected one JSON document",
		},
		{
			name: "two documents", op: OpStatus,
			out:   ok0(`{"running":true,"ready":true}` + "\n" + `{"running":true,"ready":true}` + "\n"),
			fails: protocolErr, err: "status: protocol error: stdout holds more than one JSON document (the second " +
				"starts at byte 30)",
		},
		{
			name: "trailing garbage", op: OpStatus, out: ok0(`{"running":true,"ready":true} done`),
			fails: protocolErr, err: "status: protocol error: trailing garbage after the JSON document at byte 30: " +
				"unexpected character 'd'",
		},
		{
			name: "a log line before the document", op: OpStatus, out: ok0("starting...\n" + `{"running":true,"ready":true}`),
			fails: protocolErr, err: "status: protocol error: invalid JSON at byte 0: unexpected character 's'",
		},
		{
			name: "truncated document", op: OpStatus, out: ok0(`{"running":true,"ready":`),
			fails: protocolErr, err: "status: protocol error: invalid JSON at byte 24: unexpected end of input",
		},
		{
			name: "missing colon", op: OpStatus, out: ok0(`{"running" true}`),
			fails: protocolErr, err: `status: protocol error: invalid JSON at byte 11: expected ':' after key ` +
				`"running", found character 't'`,
		},
		{
			name: "invalid UTF-8", op: OpStatus, out: ok0("{\"running\":true,\"ready\":true,\"message\":\"caf\xe9\"}"),
			fails: protocolErr, err: "status: protocol error: stdout is not valid UTF-8: byte 0xe9 at offset 43",
		},
		{
			name: "byte order mark", op: OpStatus, out: ok0("\xef\xbb\xbf" + `{"running":true,"ready":true}`),
			fails: protocolErr, err: "status: protocol error: stdout starts with a UTF-8 byte order mark (BOM); " +
				"print JSON without one",
		},
		{
			name: "raw control character in a string", op: OpStatus,
			out:   ok0("{\"running\":true,\"ready\":true,\"message\":\"a\tb\"}"),
			fails: protocolErr, err: "status: protocol error: invalid JSON at byte 41: control character U+0009 in " +
				"a string; escape it",
		},
		{
			name: "lone surrogate escape", op: OpStatus, out: ok0(`{"running":true,"ready":true,"message":"\ud800x"}`),
			fails: protocolErr, err: `status: protocol error: invalid JSON at byte 40: lone UTF-16 surrogate \uD800 in a string`,
		},
		{
			name: "nesting deeper than 64", op: OpStatus, out: ok0(strings.Repeat("[", 65) + strings.Repeat("]", 65)),
			fails: protocolErr, err: "status: protocol error: invalid JSON at byte 64: nested deeper than 64 levels",
		},
		{
			name: "JSON null", op: OpStatus, out: ok0("null"),
			fails: protocolErr, err: "status: protocol error: document: must be an object, not null",
		},
		{
			name: "top-level array", op: OpStatus, out: ok0(`[{"running":true,"ready":true}]`),
			fails: protocolErr, err: "status: protocol error: document: must be an object, not an array",
		},
		{
			name: "stdout of 1 MiB + 1", op: OpStatus,
			out:   ok0(`{"running":true,"ready":true}` + strings.Repeat(" ", MaxStdout+1-29)),
			fails: protocolErr, err: "status: protocol error: stdout is 1048577 bytes; the limit is 1 MiB",
		},
		{
			name: "stdout of exactly 1 MiB is fine", op: OpStatus,
			out:  ok0(`{"running":true,"ready":true}` + strings.Repeat(" ", MaxStdout-29)),
			want: Result{Op: OpStatus, Status: &Status{Running: true, Ready: true}},
		},
		{
			name: "stdout truncated by the executor", op: OpStatus,
			out:   Output{Stdout: []byte(`{"running":true,"ready":true}`), StdoutTruncated: true},
			fails: protocolErr, err: "status: protocol error: stdout was cut off at the 1 MiB limit",
		},
		// status and ready
		{
			name: "status", op: OpStatus, out: ok0(`{"running":true,"ready":false,"message":"warming up"}`),
			want: Result{Op: OpStatus, Status: &Status{Running: true, Ready: false, Message: "warming up"}},
		},
		{
			name: "ready", op: OpReady, out: ok0(`{"ready":true,"running":true}`),
			want: Result{Op: OpReady, Status: &Status{Running: true, Ready: true}},
		},
		{
			name: "ready without ready", op: OpReady, out: ok0(`{"running":true}`),
			fails: protocolErr, err: "ready: protocol error: /ready: missing required property",
		},
		// start, stop, destroy
		{
			name: "start", op: OpStart, out: ok0(`{"ok":true,"changed":true}`),
			want: Result{Op: OpStart, OpResult: &OpResult{OK: true, Changed: true}},
		},
		{
			name: "start on a running service", op: OpStart, out: ok0(`{"ok":true,"changed":false,"message":"already running"}`),
			want: Result{Op: OpStart, OpResult: &OpResult{OK: true, Message: "already running"}},
		},
		{
			name: "stop escalated", op: OpStop, out: ok0(`{"ok":true,"changed":true,"escalated":true}`),
			want: Result{Op: OpStop, OpResult: &OpResult{OK: true, Changed: true, Escalated: true}},
		},
		{
			name: "destroy", op: OpDestroy, out: ok0(`{"ok":true,"changed":false,"message":"already gone"}`),
			want: Result{Op: OpDestroy, OpResult: &OpResult{OK: true, Message: "already gone"}},
		},
		{
			name: "ok:false with exit 0", op: OpStart, out: ok0(`{"ok":false,"message":"no space"}`),
			fails: protocolErr, err: "start: protocol error: /ok: false, but the exit status is 0 (exit status and ok disagree)",
		},
		{
			name: "ok:true with exit 3", op: OpStop, out: exitN(3, `{"ok":true}`),
			fails: protocolErr, err: "stop: protocol error: /ok: true, but the exit status is 3 (exit status and ok disagree)",
		},
		{
			name: "ok missing", op: OpDestroy, out: ok0(`{"changed":true}`),
			fails: protocolErr, err: "destroy: protocol error: /ok: missing required property",
		},
		// failed ops
		{
			name: "exit 1 with garbage stdout", op: OpStart, out: exitN(1, "Traceback (most recent call last):\n  ..."),
			fails: opFailed, err: "start: failed with exit status 1",
		},
		{
			name: "exit 1 with a JSON message", op: OpStart, out: exitN(1, `{"ok":false,"message":"colima: disk full"}`),
			fails: opFailed, err: "start: failed with exit status 1: colima: disk full",
		},
		{
			name: "exit 1 with a schema-breaking document is still just a failure", op: OpStatus,
			out:   exitN(1, `{"bogus":1,"message":"daemon down"}`),
			fails: opFailed, err: "status: failed with exit status 1: daemon down",
		},
		{
			name: "exit 2 with empty stdout and stderr",
			op:   OpDestroy, out: Output{ExitCode: 2,
				StderrTail: []byte("destroying vm-1\r\nprogress 10%\rprogress 90%\rError: vm busy\n\n")},
			fails: opFailed, err: "destroy: failed with exit status 2 (stderr: Error: vm busy)",
		},
		{
			name: "exit 1 with oversized stdout", op: OpStart, out: exitN(1, `{"message":"x"}`+strings.Repeat(" ", MaxStdout)),
			fails: opFailed, err: "start: failed with exit status 1",
		},
		{
			name: "failed op message is made one line", op: OpStart, out: exitN(1, `{"message":"line 1\nline 2\u0007"}`),
			fails: opFailed, err: "start: failed with exit status 1: line 1 line 2\uFFFD",
		},
		{
			name: "probe fingerprint exit 1", op: fp, role: RoleProbe,
			out:   Output{ExitCode: 1, StderrTail: []byte("java: not found\n")},
			fails: opFailed, err: "fingerprint: failed with exit status 1 (stderr: java: not found)",
		},
		{
			name: "protocol error mentions the last stderr line",
			op:   OpStatus, out: Output{Stdout: []byte("{}"), StderrTail: []byte("warn: a\nwarn: b\n")},
			fails: protocolErr, err: "status: protocol error: /ready: missing required property; /running: missing " +
				"required property (stderr: warn: b)",
		},
		// list_owned
		{
			name: "list_owned, full",
			op:   OpListOwned,
			out: ok0(`{"objects":[
				{"id":"3f2a9c1d","kind":"container",
				"labels":{"oarbank.attempt_id":"a-1","oarbank.node":"n1","oarbank.service":"colima/colima"},
				"created_at":"2024-05-01T10:00:00Z","busy":true},
				{"id":"vol/ü","kind":"volume","labels":{},"created_at":"2024-05-01t12:00:00.25+02:00"},
				{"id":"p","kind":"process","labels":{"k":"v"}}]}`),
			want: Result{Op: OpListOwned, OwnedList: &OwnedList{Objects: []Object{
				{ID: "3f2a9c1d", Kind: KindContainer,
					Labels:    map[string]string{LabelAttemptID: "a-1", LabelNode: "n1", LabelService: "colima/colima"},
					CreatedAt: time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC), Busy: true},
				{ID: "vol/ü", Kind: KindVolume, Labels: map[string]string{},
					CreatedAt: time.Date(2024, 5, 1, 10, 0, 0, 250e6, time.UTC)},
				{ID: "p", Kind: KindProcess, Labels: map[string]string{"k": "v"}},
			}}},
		},
		{
			name: "list_owned, empty", op: OpListOwned, out: ok0(`{"objects":[]}`),
			want: Result{Op: OpListOwned, OwnedList: &OwnedList{Objects: []Object{}}},
		},
		{
			name: "bad ids are skipped with a warning, good ones kept",
			op:   OpListOwned,
			out: ok0(`{"objects":[{"id":"-rf","kind":"vm","labels":{}},{"id":"a ` +
				`b","kind":"vm","labels":{}},{"id":"good","kind":"vm","labels":{}},` +
				`{"id":"","kind":"vm","labels":{}},{"id":"` + long +
				`","kind":"vm","labels":{}},{"id":"tab\there","kind":"other","labels":{}},{"id":"x\u202e",` +
				`"kind":"other","labels":{}}]}`),
			want: Result{Op: OpListOwned,
				OwnedList: &OwnedList{Objects: []Object{{ID: "good", Kind: KindVM, Labels: map[string]string{}}}},
				Warnings: []string{
					`/objects/0: skipped: invalid object id "-rf": starts with '-', which would read as a flag`,
					`/objects/1: skipped: invalid object id "a b": white space U+0020 at byte 1`,
					`/objects/3: skipped: invalid object id: empty`,
					`/objects/4: skipped: invalid object id: 257 bytes long; the limit is 256`,
					`/objects/5: skipped: invalid object id "tab\there": white space U+0009 at byte 3`,
					`/objects/6: skipped: invalid object id "x\u202e": non-printable character U+202E at byte 1`,
				}},
		},
		{
			name: "created_at not RFC 3339", op: OpListOwned,
			out:   ok0(`{"objects":[{"id":"a","kind":"vm","labels":{},"created_at":"2024-05-01 10:00"}]}`),
			fails: protocolErr, err: `list_owned: protocol error: /objects/0/created_at: must be an RFC 3339 ` +
				`date-time such as 2024-05-01T10:00:00Z, not "2024-05-01 10:00"`,
		},
		{
			name: "created_at on a leap second", op: OpListOwned,
			out:   ok0(`{"objects":[{"id":"a","kind":"vm","labels":{},"created_at":"2016-12-31T23:59:60Z"}]}`),
			fails: protocolErr, err: `list_owned: protocol error: /objects/0/created_at: cannot be read as a time ` +
				`(second out of range)`,
		},
		{
			// RFC 3339 wants two digits; a signed hour such as "+1" must not
			// pass the format check to fail only when read as a time.
			name: "created_at with a signed hour", op: OpListOwned,
			out:   ok0(`{"objects":[{"id":"a","kind":"vm","labels":{},"created_at":"2024-05-01T+1:00:00Z"}]}`),
			fails: protocolErr, err: `list_owned: protocol error: /objects/0/created_at: must be an RFC 3339 ` +
				`date-time such as 2024-05-01T10:00:00Z, not "2024-05-01T+1:00:00Z"`,
		},
		{
			name: "bad kind", op: OpListOwned, out: ok0(`{"objects":[{"id":"a","kind":"pod","labels":{}}]}`),
			fails: protocolErr, err: `list_owned: protocol error: /objects/0/kind: must be one of container, vm, ` +
				`volume, process, other, not "pod"`,
		},
		{
			name: "missing labels and a non-string label, indexes sorted numerically", op: OpListOwned,
			out: ok0(`{"objects":[` + strings.Repeat(`{"id":"a","kind":"vm","labels":{}},`,
				10) + `{"id":"a","kind":"vm","labels":{"n":1}},{"id":"b","kind":"vm"}]}`),
			fails: protocolErr, err: `list_owned: protocol error: /objects/10/labels/n: must be a string, not a ` +
				`number; /objects/11/labels: missing required property`,
		},
		{
			name: "duplicate label key", op: OpListOwned,
			out:   ok0(`{"objects":[{"id":"a","kind":"vm","labels":{"k":"1","k":"2"}}]}`),
			fails: protocolErr, err: `list_owned: protocol error: /objects/0/labels: duplicate key "k"`,
		},
		{
			name: "objects missing", op: OpListOwned, out: ok0(`{}`),
			fails: protocolErr, err: `list_owned: protocol error: /objects: missing required property`,
		},
		{
			name: "id of the wrong type is a schema violation, not a skip", op: OpListOwned,
			out:   ok0(`{"objects":[{"id":7,"kind":"vm","labels":{}}]}`),
			fails: protocolErr, err: `list_owned: protocol error: /objects/0/id: must be a string, not a number`,
		},
		// usage errors
		{
			name: "unknown op", op: "restart", out: ok0(`{}`),
			fails: usageErr, err: `protocol: decode: unknown op "restart"`,
		},
		{
			name: "probe asked for start", op: OpStart, role: RoleProbe, out: ok0(`{"ok":true}`),
			fails: usageErr, err: `protocol: decode start: a probe implements only fingerprint`,
		},
	}
}

func TestDecode(t *testing.T) {
	cases := decodeCases()
	if len(cases) < 45 {
		t.Fatalf("only %d cases", len(cases))
	}
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.name] {
			t.Fatalf("duplicate case name %q", c.name)
		}
		seen[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			got, err := Decode(c.op, c.role, c.out)
			if c.fails == nil && err != nil || c.fails != nil && !c.fails(err) {
				t.Fatalf("err %T: %v, not what the case wants (fails %v)", err, err, c.fails != nil)
			}
			if c.fails == nil {
				if diff := cmp.Diff(c.want, got); diff != "" {
					t.Fatalf("result mismatch (-want +got):\n%s", diff)
				}
				return
			}
			if diff := cmp.Diff(Result{}, got); diff != "" {
				t.Errorf("result should be empty on error (-want +got):\n%s", diff)
			}
			switch {
			case strings.HasPrefix(c.err, "~"):
				if !strings.Contains(err.Error(), c.err[1:]) {
					t.Errorf("error:\n %s\nwant it to contain:\n %s", err, c.err[1:])
				}
			case c.err != "":
				if err.Error() != c.err {
					t.Errorf("error:\n %s\nwant:\n %s", err, c.err)
				}
			}
			if c.reasons != nil {
				var pe *ProtocolError
				if !errors.As(err, &pe) {
					t.Fatalf("%T, want *ProtocolError", err)
				}
				if diff := cmp.Diff(c.reasons, pe.Reasons); diff != "" {
					t.Errorf("reasons (-want +got):\n%s", diff)
				}
			}
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Errorf("error is not one line: %q", err)
			}
		})
	}
}

func TestDecodeErrorFields(t *testing.T) {
	stderr := append(bytes.Repeat([]byte("a"), StderrTailSize), "\nlast\n"...)
	_, err := Decode(OpStart, RoleService,
		Output{Stdout: []byte(`{"ok":false,"message":"m"}`), ExitCode: 4, StderrTail: stderr})
	var oe *OpError
	if !errors.As(err, &oe) {
		t.Fatalf("%T, want *OpError", err)
	}
	want := &OpError{Op: OpStart, ExitCode: 4, Message: "m", StderrTail: stderr[len(stderr)-StderrTailSize:]}
	if diff := cmp.Diff(want, oe); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if !bytes.Equal(StderrTailOf(err), want.StderrTail) {
		t.Error("StderrTailOf differs from the field")
	}

	_, err = Decode(OpStop, RoleService, Output{Stdout: []byte(`{"ok":true}`), ExitCode: 9, StderrTail: []byte("e\n")})
	var pe *ProtocolError
	if !errors.As(err, &pe) {
		t.Fatalf("%T, want *ProtocolError", err)
	}
	wantPE := &ProtocolError{Op: OpStop, ExitCode: 9, StderrTail: []byte("e\n"),
		Reasons: []string{"/ok: true, but the exit status is 9 (exit status and ok disagree)"}}
	if diff := cmp.Diff(wantPE, pe); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// The error types are found through wrapping, as the executor wraps them.
func TestDecodeErrorWrapped(t *testing.T) {
	_, err := Decode(OpStatus, RoleService, ok0(""))
	wrapped := errors.Join(errors.New("service colima/colima"), err)
	if !protocolErr(wrapped) || opFailed(wrapped) || usageErr(wrapped) {
		t.Errorf("%v: want a *ProtocolError", wrapped)
	}
	if !usageErr(errors.New("x")) || usageErr(nil) {
		t.Error("a plain error is neither an *OpError nor a *ProtocolError")
	}
}

func protocolErr(err error) bool {
	var pe *ProtocolError
	return errors.As(err, &pe)
}

func opFailed(err error) bool {
	var oe *OpError
	return errors.As(err, &oe)
}

// usageErr is an error of a bad call of Decode: neither error type.
func usageErr(err error) bool { return err != nil && !protocolErr(err) && !opFailed(err) }

func TestLastLine(t *testing.T) {
	for in, want := range map[string]string{
		"":                       "",
		"\n\n  \n":               "",
		"one":                    "one",
		"a\nb\n":                 "b",
		"a\r\nb\r\n":             "b",
		"10%\r50%\r":             "50%",
		"bad \xff byte\n":        "bad \uFFFD byte",
		"esc \x1b[31mred\n":      "esc \uFFFD[31mred",
		strings.Repeat("é", 200): strings.Repeat("é", 100) + "…",
	} {
		if got := LastLine([]byte(in)); got != want {
			t.Errorf("LastLine(%q) = %q, want %q", in, got, want)
		}
	}
}
