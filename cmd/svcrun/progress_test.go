package main

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/oarbank/svcrun/api"
	"github.com/oarbank/svcrun/internal/cli"
)

// TestShowProgress: while a lease waits, run shows why: on a terminal the
// line is rewritten in place and cleared when the wait ends; elsewhere
// each report is a line of its own, named as run's.
func TestShowProgress(t *testing.T) {
	_, sock := served(t)
	c, err := api.Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	held, err := c.Acquire(ctx,
		api.AcquireRequest{Pools: map[string]int64{"kv-slots": 2}, Wait: api.Duration(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	waitCtx, stopWaiting := context.WithCancel(ctx)
	defer stopWaiting()
	go c.Acquire(waitCtx,
		api.AcquireRequest{Attempt: "attempt-waits", Pools: map[string]int64{"kv-slots": 1}, Wait: api.Duration(time.Hour)})

	for _, tty := range []bool{false, true} {
		pr, pw := io.Pipe()
		pctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			showProgress(pctx, cli.ForCommand("svcrun", "run", io.Discard, pw), tty, nil, 10*time.Millisecond, c,
				"attempt-waits", time.Now())
			pw.Close()
			close(done)
		}()
		r := bufio.NewReader(pr)
		var got string
		if tty {
			// "\r\033[K" + line, never a newline: read the first report.
			buf := make([]byte, 4096)
			for !strings.Contains(got, "waiting: pool kv-slots") {
				n, err := r.Read(buf)
				if err != nil {
					t.Fatal(err)
				}
				got += string(buf[:n])
			}
			if !strings.HasPrefix(got, "\r\033[K") || strings.Contains(got, "\n") {
				t.Errorf("terminal: %q, want each report rewriting the line", got)
			}
		} else {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(line, "svcrun run: waiting: pool kv-slots: needs 1 token(s), 2 of 2 reserved") {
				t.Errorf("log line %q", line)
			}
		}
		stop()
		rest, _ := io.ReadAll(r)
		<-done
		if tty && !strings.HasSuffix(string(rest), "\r\033[K") {
			t.Errorf("terminal: the line is not cleared at the end: %q", rest)
		}
	}
	if err := c.Release(ctx, held.Lease); err != nil {
		t.Fatal(err)
	}
}
