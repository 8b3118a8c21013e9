package agent

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/oarbank/svcrun/nodeconfig"
)

func TestParsePSI(t *testing.T) {
	cases := []struct {
		name, text string
		want       psi
		err        string
	}{
		{"idle",
			"some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", psi{}, ""},
		{"pressure",
			"some avg10=31.25 avg60=12.00 avg300=3.10 total=123456789\nfull avg10=7.50 " +
				"avg60=2.00 avg300=0.40 total=2345678\n", psi{some: 31.25, full: 7.5}, ""},
		{"no full line", "some avg10=4.00 avg60=0.00 avg300=0.00 total=1\n", psi{some: 4}, ""},
		{"no final newline", "some avg10=1.00 avg60=0.00 avg300=0.00 total=1", psi{some: 1}, ""},
		{"empty", "", psi{}, "no some line"},
		{"only full", "full avg10=1.00 avg60=0.00 avg300=0.00 total=1\n", psi{}, "no some line"},
		{"other line", "some avg10=1.00\nsoon avg10=1.00\n", psi{}, `line "soon avg10=1.00": neither some nor full`},
		{"no avg10", "some avg60=1.00 total=1\n", psi{}, `line "some avg60=1.00 total=1": no avg10`},
		{"bad number", "some avg10=x avg60=0.00\n", psi{}, `line "some avg10=x avg60=0.00": avg10 "x" is not a percentage`},
		{"over 100", "some avg10=100.01\n", psi{}, `line "some avg10=100.01": avg10 "100.01" is not a percentage`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parsePSI([]byte(tc.text))
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("%+v %v, want %+v", got, err, tc.want)
			}
		})
	}
}

// The pressure is edge-triggered with hysteresis: one event when either
// share reaches its threshold, none while it stays (until pressureRepeat),
// the end only once both are below half their thresholds.
func TestPressureWatch(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	w := pressureWatch{limits: nodeconfig.MemoryPressure{Enabled: true, SomeAvg10: 20, FullAvg10: 5}}
	steps := []struct {
		after              time.Duration
		p                  psi
		fire, began, ended bool
	}{
		{0, psi{some: 19.99, full: 4.99}, false, false, false},
		{2 * time.Second, psi{some: 20}, true, true, false},
		{4 * time.Second, psi{some: 60, full: 30}, false, false, false},
		{6 * time.Second, psi{some: 10.5}, false, false, false},         // under the threshold, over half of it
		{8 * time.Second, psi{some: 9, full: 2.5}, false, false, false}, // full at half of its own
		{62 * time.Second, psi{some: 15}, true, false, false},           // still on a minute after the event
		{64 * time.Second, psi{some: 9.99, full: 2.49}, false, false, true},
		{66 * time.Second, psi{some: 19}, false, false, false},
		{68 * time.Second, psi{full: 5}, true, true, false},
	}
	for i, s := range steps {
		fire, began, ended := w.observe(t0.Add(s.after), s.p)
		if fire != s.fire || began != s.began || ended != s.ended {
			t.Errorf("reading %d (%+v at %v): fire %v began %v ended %v, want %v %v %v", i, s.p,
				s.after, fire, began, ended, s.fire, s.began, s.ended)
		}
	}
}

// A jump is the wall clock's progress less the monotonic clock's between
// two checks, counted from ClockJump on, forward (a sleep) or back.
func TestClockWatch(t *testing.T) {
	mono0 := time.Now() // with a monotonic reading
	wall0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		name       string
		mono, wall time.Duration // progress since the first check
		want       time.Duration
	}{
		{"in step", 2 * time.Second, 2 * time.Second, 0},
		{"drift under the threshold", 2 * time.Second, 2*time.Second + ClockJump - time.Millisecond, 0},
		{"the node slept", 2 * time.Second, 2*time.Second + time.Hour, time.Hour},
		{"set back", 2 * time.Second, 2*time.Second - ClockJump, -ClockJump},
		{"a slow loop is no jump", time.Minute, time.Minute, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wall := wall0
			c := clockWatch{wall: func() time.Time { return wall }}
			if j := c.check(mono0); j != 0 {
				t.Fatalf("first check: %v", j)
			}
			wall = wall0.Add(tc.wall)
			if j := c.check(mono0.Add(tc.mono)); j != tc.want {
				t.Errorf("jump %v, want %v", j, tc.want)
			}
			wall = wall.Add(time.Second) // the next check starts from this one
			if j := c.check(mono0.Add(tc.mono + time.Second)); j != 0 {
				t.Errorf("check after: %v", j)
			}
		})
	}
}

// The real kernel's file parses. Where PSI is missing the test skips,
// unless REQUIRE_KERNEL_FEATURES=1.
func TestPSIOfThisKernel(t *testing.T) {
	data, err := os.ReadFile(DefaultPressureFile)
	if errors.Is(err, fs.ErrNotExist) {
		if os.Getenv("REQUIRE_KERNEL_FEATURES") == "1" {
			t.Fatalf("REQUIRE_KERNEL_FEATURES=1: no %s (a kernel with CONFIG_PSI, not booted psi=0)", DefaultPressureFile)
		}
		t.Skipf("no %s on this kernel", DefaultPressureFile)
	}
	if err != nil {
		t.Fatal(err)
	}
	p, err := parsePSI(data)
	if err != nil {
		t.Fatalf("%s: %v\n%s", DefaultPressureFile, err, data)
	}
	if !strings.HasPrefix(string(data), "some ") {
		t.Errorf("%s does not begin with its some line:\n%s", DefaultPressureFile, data)
	}
	t.Logf("%s: some avg10 %v%%, full avg10 %v%%", DefaultPressureFile, p.some, p.full)
}
