package tomldoc

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2/unstable"
)

const sample = `# a comment
name = "x"
count = "three"
typo_key = 1

[[services]]
name = "a"
exec = ["bin/a", 3]
restart = { backoff_initial_s = -1, max_failure = 2 }

[[services]]
name = "b"

[services.restart]
backoff_initial_s = 0.5

[[services.hooks]]
cmd = "x"
[[services.hooks]]
cmd = 5
`

func TestPositionsAndErrors(t *testing.T) {
	d, err := Parse("m.toml", []byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	r := d.Root()
	if got := r.String("name", ""); got != "x" {
		t.Errorf("name = %q", got)
	}
	r.Int("count", 0)
	r.Has("type_key")
	svcs := r.Tables("services")
	if len(svcs) != 2 {
		t.Fatalf("services: %d", len(svcs))
	}
	for _, s := range svcs {
		s.String("name", "")
		s.Strings("exec")
		rs := s.Table("restart")
		rs.Seconds("backoff_initial_s", time.Second, false)
		rs.Int("max_failures", 5)
		rs.Close()
		for _, h := range s.Tables("hooks") {
			h.String("cmd", "")
			h.Close()
		}
		s.Close()
	}
	r.Close()
	want := []string{
		`m.toml:3:1: count: must be an integer, got string "three"`,
		`m.toml:4:1: typo_key: unknown key (did you mean "type_key"?)`,
		`m.toml:8:18: services[0].exec[1]: must be a string, got integer 3`,
		`m.toml:9:13: services[0].restart.backoff_initial_s: must be more than 0 seconds, got -1`,
		`m.toml:9:37: services[0].restart.max_failure: unknown key (did you mean "max_failures"?)`,
		`m.toml:20:1: services[1].hooks[1].cmd: must be a string, got integer 5`,
	}
	got := strings.Split(d.Err().Error(), "\n")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"a = ", "f.toml:1:"},
		{"a = 1\na = 2", "f.toml:2:1"},
		{"[t]\n[t]", "f.toml:2:"},
		{"a = \"\xff\"", "f.toml:1:6: not valid UTF-8"},
	} {
		_, err := Parse("f.toml", []byte(tc.in))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want prefix %q", tc.in, err, tc.want)
		}
	}
}

func TestOddKeysStayOnOneLine(t *testing.T) {
	d, err := Parse("f.toml", []byte("\"a\\nb\" = 1\n\"x.y\" = 2\n\"\" = 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	d.Root().Close()
	want := "f.toml:1:1: \"a\\nb\": unknown key\nf.toml:2:1: \"x.y\": unknown key\nf.toml:3:1: \"\": unknown key"
	if got := d.Err().Error(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// position must agree with the parser's own Shape, which it replaces, at
// every offset, line ends and a document without a final newline included.
func TestPositionMatchesShape(t *testing.T) {
	for _, doc := range []string{sample, "", "a = 1", "\n\n", "a = \"\"\"\nx\r\ny\"\"\"\r\nb = 2\n"} {
		d := &Doc{lines: lineStarts([]byte(doc))}
		var p unstable.Parser
		p.Reset([]byte(doc))
		for off := 0; off <= len(doc); off++ {
			s := p.Shape(unstable.Range{Offset: uint32(off)})
			want := Pos{s.Start.Line, s.Start.Column}
			if got := d.position(off); got != want {
				t.Fatalf("%q at %d: position %v, Shape %v", doc, off, got, want)
			}
		}
	}
}

// BenchmarkParseServices parses a module of 1,000 services, the size of
// bench/peers.sh's; its parse is on svcrun serve's path to the first op.
func BenchmarkParseServices(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("[module]\nname = \"peers\"\nversion = \"1\"\n")
	for k := 1; k <= 1000; k++ {
		fmt.Fprintf(&sb, "[[services]]\nname = \"d%d\"\nexec = [\"bin/peer-service\", \"d%d\"]\nlifecycle = "+
			"\"always\"\ncapabilities = [\"d%d\"]\nrestart = { backoff_initial_s = 0.001 }\n", k, k, k)
	}
	data := []byte(sb.String())
	for b.Loop() {
		if _, err := Parse("module.toml", data); err != nil {
			b.Fatal(err)
		}
	}
}
