package scenario

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oarbank/svcrun/engine"
)

var rewriteScenarios = flag.Bool("rewrite", false,
	"rewrite the expected traces of ../../scenarios/*.txt (or set SVCSIM_REWRITE=1)")

// TestScenarios replays every scenario of ../../scenarios against its expected
// trace. `go test ./sim/scenario -args -rewrite` (or SVCSIM_REWRITE=1) records the
// actual traces instead.
func TestScenarios(t *testing.T) {
	rewrite := *rewriteScenarios || os.Getenv("SVCSIM_REWRITE") == "1"
	files, err := filepath.Glob(filepath.Join("..", "..", "scenarios", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no scenario in ../../scenarios")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			c, err := CheckFile(f, rewrite)
			if err != nil {
				t.Fatal(err)
			}
			if c.Rewritten {
				t.Logf("rewrote %s", f)
			}
			if c.Diff != "" {
				t.Errorf("the trace differs from the expected one (go test ./sim -args -rewrite records it):\n%s", c.Diff)
			}
		})
	}
}

// TestScenarioDeterministic runs every scenario twice and wants the same
// trace, byte for byte.
func TestScenarioDeterministic(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "scenarios", "*.txt"))
	for _, f := range files {
		sc, err := ParseFile(f)
		if err != nil {
			t.Fatal(err)
		}
		a, err := sc.Run()
		if err != nil {
			t.Fatal(err)
		}
		b, err := sc.Run()
		if err != nil {
			t.Fatal(err)
		}
		if a.Trace() != b.Trace() {
			t.Errorf("%s: two runs differ:\n%s", f, unifiedDiff(a.Trace(), b.Trace(), "run 1", "run 2", 3, 40))
		}
	}
}

func TestScenarioTrace(t *testing.T) {
	sc, err := Parse("tiny.txt", readTiny(t))
	if err != nil {
		t.Fatal(err)
	}
	if sc.HasExpected {
		t.Fatal("HasExpected without a separator")
	}
	res, err := sc.Run()
	if err != nil {
		t.Fatal(err)
	}
	want := `    0.000s  > boot node n1 (linux): modules db
    0.000s    run db/kv fingerprint #1
    0.000s  < done #1 db/kv fingerprint: ok running=false healthy=true
    1.000s  > acquire l1 attempt=a1 cap=kv wait=10s
    1.000s    db/kv: starting (1 lease(s) need it)
    1.000s    run db/kv start #2
    2.000s  < done #2 db/kv start: ok changed
    2.000s    run db/kv ready #3
    2.000s  < done #3 db/kv ready: ok running=true ready=false
    3.000s    run db/kv ready #4
    3.000s  < done #4 db/kv ready: ok running=true ready=true
    3.000s    db/kv: ready
    3.000s    admitted l1 (db/kv)
    3.000s    run db/kv fingerprint #5
    3.000s  < done #5 db/kv fingerprint: ok running=true healthy=true
    4.000s  > release l1
    4.000s    released l1
    9.000s    db/kv: stopping: idle for 5s
    9.000s    run db/kv stop #6
    9.000s  < done #6 db/kv stop: ok changed
    9.000s    db/kv: stopped (idle for 5s)
`
	if got := res.Trace(); got != want {
		t.Errorf("trace:\n%s", unifiedDiff(want, got, "want", "got", 3, 0))
	}
	// The rewritten file is the commands, the separator, the trace; parsed
	// again it matches.
	again, err := Parse("tiny.txt", sc.Rewritten(res.Trace()))
	if err != nil {
		t.Fatal(err)
	}
	if !again.HasExpected || again.Expected != want {
		t.Errorf("rewritten expected part:\n%q", again.Expected)
	}
}

func TestScenarioErrors(t *testing.T) {
	base := "module\n[module]\nname = \"db\"\nversion = \"1\"\n[[services]]\nname = \"kv\"\nexec = [\"bin/kv\"]\nend\n"
	cases := []struct{ name, text, want string }{
		{"unknown command", base + "frobnicate\nrun 1s\n", "x.txt:9: unknown command \"frobnicate\""},
		{"unknown input", base + "at 1s explode\nrun 1s\n", "x.txt:9: unknown input \"explode\""},
		{"an acquire while down", base + "at 1s down\nat 1s acquire l1 attempt=a cap=kv\nat 1s restart\nrun 1s\n",
			"x.txt:10: acquire while svcrun is down (line 9)"},
		{"time passing while down", base + "at 1s down\nat 1s disable db\nat 2s restart\nrun 2s\n",
			"x.txt:11: restart: svcrun went down at 1s"},
		{"down twice", base + "at 1s down\nat 1s down\nrun 2s\n", "x.txt:10: down: svcrun is down already (line 9)"},
		{"down without a restart", base + "at 1s down\nat 1s disable db\nrun 2s\n", "x.txt:9: down: no restart follows"},
		{"unknown acquire key", base + "at 1s acquire l1 attempt=a colour=red\nrun 1s\n",
			"x.txt:9: acquire: unknown key \"colour\""},
		{"unknown behaviour key", base + "behaviour db/kv speed=3\nrun 1s\n",
			"x.txt:9: behaviour db/kv: unknown key \"speed\""},
		{"duration without op", base + "behaviour db/kv duration=3s\nrun 1s\n",
			"x.txt:9: behaviour db/kv: duration= needs op="},
		{"bad outcome", base + "behaviour db/kv op=start outcomes=maybe\nrun 1s\n",
			"x.txt:9: behaviour db/kv: outcome \"maybe\""},
		{"unknown service", base + "at 1s crash db/kv2\nrun 1s\n", "x.txt:9: no service \"db/kv2\"; the modules have: db/kv"},
		{"unknown behaviour name", base + "behaviour db/zz ready_after_polls=1\nrun 1s\n",
			"x.txt:9: no service or probe \"db/zz\""},
		{"time backwards", base + "at 5s reap\nat 4s reap\nrun 6s\n", "x.txt:10: time 4s is before"},
		{"bad time", base + "at soon reap\nrun 1s\n", "x.txt:9: time \"soon\""},
		{"no run", base + "at 1s reap\n", "no `run UNTIL` line"},
		{"after run", base + "run 1s\nat 2s reap\n", "x.txt:10: nothing may follow `run`"},
		{"module no end", "module\n[module]\nname = \"db\"\n", "x.txt:1: `module` without its `end` line"},
		{"bad manifest", "module\n[module]\nname = \"db\"\nversion = \"1\"\nwhat = 1\nend\nrun 1s\n", "x.txt:5:"},
		{"object without labels", base + "at 1s object db/kv id=o1\nrun 1s\n", "x.txt:9: object: give its labels"},
		{"unknown module", base + "at 1s disable web\nrun 1s\n", "x.txt:9: no module \"web\"; modules: db"},
		{"node key", "node colour=red\n" + base + "run 1s\n", "x.txt:1: node: unknown key \"colour\""},
		{"running in timeline", base + "at 1s behaviour db/kv running\nrun 1s\n", "x.txt:9: behaviour: running= only"},
		{"later first", "module later\n" + base[len("module\n"):] + "run 1s\n",
			"x.txt:1: `module later`: no module \"db\" embedded before it"},
		{"twice", base + base + "run 1s\n", "x.txt:9: module \"db\" is embedded twice"},
		{"reload without later", base + "at 1s reload db\nrun 1s\n",
			"x.txt:9: reload db: reload #1 of it, but only 0 `module later` block(s)"},
		{"reload unknown module", base + "at 1s reload web\nrun 1s\n", "x.txt:9: no module \"web\""},
		{"bad duration list", base + "behaviour db/kv op=start duration=1s,soon\nrun 1s\n",
			"x.txt:9: behaviour db/kv: duration=1s,soon: \"soon\": not a duration"},
		{"emptied unknown", base + "at 1s emptied db/zz\nrun 1s\n", "x.txt:9: no service \"db/zz\""},
		{"unknown but known", base + "at 1s reset db/kv unknown\nrun 1s\n",
			"x.txt:9: reset db/kv unknown: the modules have that service; drop `unknown`"},
		{"unknown malformed", base + "at 1s emptied zz unknown\nrun 1s\n", "x.txt:9: emptied zz unknown:"},
		{"unknown other word", base + "at 1s reset db/zz gone\nrun 1s\n",
			"x.txt:9: usage: at T reset MODULE/SERVICE [unknown]"},
		{"reload flag", base + "at 1s reload db remove\nrun 1s\n", "x.txt:9: usage: at T reload MODULE [enable|disable]"},
		{"window unknown key", base + "window until=3s\nrun 1s\n", "x.txt:9: window: unknown argument \"until\""},
		{"window service", base + "window service=db/zz\nrun 1s\n", "x.txt:9: no service \"db/zz\""},
		{"window in timeline", base + "at 1s reap\nwindow from=1s\nrun 1s\n",
			"x.txt:10: `window` comes once, before the timeline"},
		{"stored lease unadmitted", base + "stored lease l1 attempt=a1\nrun 1s\n",
			"x.txt:9: stored lease l1: admitted= is required"},
		{"stored lease ttl alone", base + "stored lease l1 attempt=a1 admitted=-1s ttl=5s\nrun 1s\n",
			"x.txt:9: stored lease l1: ttl= and expires= go together"},
		{"stored service unknown", base + "stored service db/zz failures=1\nrun 1s\n", "x.txt:9: no service \"db/zz\""},
		{"stored service key", base + "stored service db/kv colour=red\nrun 1s\n",
			"x.txt:9: stored service db/kv: unknown argument \"colour\""},
		{"stored what", base + "stored probe db/kv\nrun 1s\n", "x.txt:9: usage: stored lease ID"},
		{"why without reason", base + "at 1s disable db why:\nrun 1s\n", "x.txt:9: disable: why: needs the reason after it"},
		{"remove with why", base + "at 1s remove db why: gone\nrun 1s\n", "x.txt:9: usage: at T remove MODULE"},
		{"disable-all module", base + "at 1s disable-all db\nrun 1s\n", "x.txt:9: usage: at T disable-all [why: TEXT]"},
		{"stored in timeline", base + "at 1s reap\nstored service db/kv failures=1\nrun 1s\n",
			"x.txt:10: `stored` says what the store held"},
	}
	for _, c := range cases {
		_, err := Parse("x.txt", []byte(c.text))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

func TestUnifiedDiff(t *testing.T) {
	a := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"
	b := "1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\n11\n"
	got := unifiedDiff(a, b, "a", "b", 2, 0)
	want := `--- a
+++ b
@@ -3,5 +3,5 @@
 3
 4
-5
+five
 6
 7
@@ -9,2 +9,3 @@
 9
 10
+11
`
	if got != want {
		t.Errorf("diff:\n%s\nwant:\n%s", got, want)
	}
	if unifiedDiff(a, a, "a", "b", 3, 0) != "" {
		t.Error("equal texts give a diff")
	}
}

func TestFormatOffset(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "0.000s", 1500 * time.Millisecond: "1.500s",
		2 * time.Hour: "7200.000s"} {
		if got := strings.TrimSpace(FormatOffset(d)); got != want {
			t.Errorf("FormatOffset(%v) = %q, want %q", d, got, want)
		}
	}
	if got := formatTraceEffect(engine.Admitted{Lease: "l1"}); got != "admitted l1 (no service)" {
		t.Errorf("admitted without services: %q", got)
	}
}

// readTiny is testdata/tiny.txt, a one-service scenario the package's and
// the timeline's tests share.
func readTiny(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/tiny.txt")
	if err != nil {
		t.Fatal(err)
	}
	return data
}
