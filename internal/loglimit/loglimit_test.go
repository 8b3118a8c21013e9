package loglimit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
)

type line struct {
	Level    string
	Msg      string
	Subject  string
	LeftOut  int    `json:"left_out"`
	ByReason string `json:"by_reason"`
}

func lines(t *testing.T, buf *bytes.Buffer) []line {
	t.Helper()
	var out []line
	for l := range strings.Lines(buf.String()) {
		var r line
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	buf.Reset()
	return out
}

func msgs(ls []line) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Level+" "+l.Msg)
	}
	return out
}

// TestLimiter: what each abuse logs within a window, and the summary
// after it.
func TestLimiter(t *testing.T) {
	rep := func(n int, s string) []string {
		var out []string
		for range n {
			out = append(out, s)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		// each logs lines; subject|reason|msg
		lines   func(l *Limiter)
		want    []string // logged within the window
		summary []line   // after it
	}{
		{"10,000 rejections of one reason", func(l *Limiter) {
			for i := range 10000 {
				l.Log(slog.LevelWarn, "leases", "unknown capability gpu",
					fmt.Sprintf("lease lease-%d rejected: unknown capability gpu", i))
			}
		}, []string{"WARN lease lease-0 rejected: unknown capability gpu",
			"WARN lease lease-1 rejected: unknown capability gpu",
			"WARN lease lease-2 rejected: unknown capability gpu",
			"WARN lease lease-3 rejected: unknown capability gpu", "WARN lease lease-4 rejected: unknown capability gpu"},
			[]line{{Level: "WARN", Msg: "log lines left out by the rate limit", Subject: "leases", LeftOut: 9995,
				ByReason: `9995 of "unknown capability gpu"`}}},
		{"a reason that changes is logged", func(l *Limiter) {
			for range 10 {
				l.Log(slog.LevelWarn, "db/kv", "", "start failed: ENOENT")
			}
			l.Log(slog.LevelError, "db/kv", "", "start failed: EACCES")
		}, append(rep(5, "WARN start failed: ENOENT"), "ERROR start failed: EACCES"),
			[]line{{Level: "WARN", Msg: "log lines left out by the rate limit", Subject: "db/kv", LeftOut: 5,
				ByReason: `5 of "start failed: ENOENT"`}}},
		{"numbers do not make a reason", func(l *Limiter) {
			for i := range 10 {
				l.Log(slog.LevelWarn, "api", "", fmt.Sprintf("accept: too many open files; retrying in %dms", 5<<i))
			}
		}, []string{"WARN accept: too many open files; retrying in 5ms",
			"WARN accept: too many open files; retrying in 10ms", "WARN accept: too many open files; retrying in 20ms",
			"WARN accept: too many open files; retrying in 40ms", "WARN accept: too many open files; retrying in 80ms"},
			[]line{{Level: "WARN", Msg: "log lines left out by the rate limit", Subject: "api", LeftOut: 5,
				ByReason: `5 of "accept: too many open files; retrying in 5ms"`}}},
		{"many reasons of one subject", func(l *Limiter) {
			for i := range 100 {
				l.Log(slog.LevelWarn, "leases", "", "unknown capability "+strings.Repeat("x", i+1))
			}
		}, func() []string {
			var out []string
			for i := range SubjectBurst {
				out = append(out, "WARN unknown capability "+strings.Repeat("x", i+1))
			}
			return out
		}(), []line{{Level: "WARN", Msg: "log lines left out by the rate limit", Subject: "leases", LeftOut: 80,
			ByReason: fmt.Sprintf(
				`1 of "unknown capability %s"; 1 of "unknown capability %s"; 1 of "unknown capability %s"; 1 of `+
					`"unknown capability %s"; 1 of "unknown capability %s"; 75 of 75 other reasons`,
				strings.Repeat("x", 21), strings.Repeat("x", 22), strings.Repeat("x", 23), strings.Repeat("x", 24),
				strings.Repeat("x", 25))}}},
		{"other subjects are not limited", func(l *Limiter) {
			for range 10 {
				l.Log(slog.LevelWarn, "a", "", "down")
			}
			l.Log(slog.LevelWarn, "b", "", "down")
		}, append(rep(5, "WARN down"), "WARN down"),
			[]line{{Level: "WARN", Msg: "log lines left out by the rate limit", Subject: "a", LeftOut: 5,
				ByReason: `5 of "down"`}}},
		{"nothing left out, no summary", func(l *Limiter) {
			l.Log(slog.LevelInfo, "a", "", "up")
		}, []string{"INFO up"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			clk := clock.NewMock()
			l := New(slog.New(slog.NewJSONHandler(&buf, nil)), clk)
			tc.lines(l)
			if got := msgs(lines(t, &buf)); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("within the window:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			clk.Add(Window - time.Nanosecond)
			if got := lines(t, &buf); len(got) != 0 {
				t.Errorf("a summary before the window ended: %+v", got)
			}
			clk.Add(time.Nanosecond)
			got := lines(t, &buf)
			if fmt.Sprint(got) != fmt.Sprint(tc.summary) {
				t.Errorf("summary:\n%+v\nwant:\n%+v", got, tc.summary)
			}
			// A new window logs again.
			l.Log(slog.LevelWarn, "leases", "", "again")
			if got := msgs(lines(t, &buf)); len(got) != 1 {
				t.Errorf("the next window: %v", got)
			}
		})
	}
}

// TestLoggerSummarisesAcceptErrors: http.Server's accept errors at the
// file limit, through Logger, are a few lines and a count.
func TestLoggerSummarisesAcceptErrors(t *testing.T) {
	var buf bytes.Buffer
	clk := clock.NewMock()
	l := New(slog.New(slog.NewJSONHandler(&buf, nil)), clk)
	el := l.Logger("api", slog.LevelWarn)
	for i := range 1000 {
		retry := fmt.Sprintf("%dms", 5<<min(i, 7))
		if i > 7 {
			retry = "1s"
		}
		el.Printf("http: Accept error: accept unix /run/svcrun/svcrun.sock: accept4: too many open files; "+
			"retrying in %s", retry)
	}
	if got := lines(t, &buf); len(got) != Burst {
		t.Errorf("%d lines, want %d", len(got), Burst)
	}
	if n := l.LeftOut(); n != 1000-Burst {
		t.Errorf("LeftOut %d, want %d", n, 1000-Burst)
	}
	clk.Add(Window)
	got := lines(t, &buf)
	if len(got) != 1 || got[0].LeftOut != 1000-Burst || got[0].Subject != "api" {
		t.Errorf("summary %+v", got)
	}
}

func TestFew(t *testing.T) {
	many := make([]int, 5000)
	for i := range many {
		many[i] = 100 + i
	}
	for _, tc := range []struct {
		pids []int
		want string
	}{
		{nil, "[]"},
		{[]int{1, 2, 3}, "[1 2 3]"},
		{many[:FewPIDs], "[100 101 102 103 104 105 106 107]"},
		{many, "[100 101 102 103 104 105 106 107] and 4992 more"},
	} {
		if got := Few(tc.pids); got != tc.want {
			t.Errorf("Few(%d pids) = %q, want %q", len(tc.pids), got, tc.want)
		}
	}
}

// TestClose: the counts of a window still open are logged at Close, and
// no timer is left to log after it.
func TestClose(t *testing.T) {
	var buf bytes.Buffer
	clk := clock.NewMock()
	l := New(slog.New(slog.NewJSONHandler(&buf, nil)), clk)
	for range 7 {
		l.Log(slog.LevelWarn, "db/kv", "", "down")
	}
	lines(t, &buf)
	l.Close()
	if got := lines(t, &buf); len(got) != 1 || got[0].LeftOut != 2 {
		t.Errorf("at Close: %+v, want one summary of 2", got)
	}
	l.Log(slog.LevelWarn, "db/kv", "", "down")
	clk.Add(2 * Window)
	if got := lines(t, &buf); len(got) != 1 || got[0].Msg != "down" {
		t.Errorf("after Close: %+v, want the line alone", got)
	}
}
