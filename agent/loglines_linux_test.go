//go:build linux

package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/benbjohnson/clock"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/errdefs"
	"github.com/oarbank/svcrun/internal/loglimit"
	"github.com/oarbank/svcrun/internal/testhost"
)

// TestBogusAcquiresLogASummary: 10,000 acquires of a capability nobody
// offers, on a running agent, log a few rejections and, when the window
// ends, one line that counts the others by reason; a service whose
// failure changes reason meanwhile is logged with the new reason.
func TestBogusAcquiresLogASummary(t *testing.T) {
	logs := testhost.NewLogLines(t)
	log := slog.New(slog.NewTextHandler(logs, nil))
	a, err := Open(Options{PressureFile: noPressure, ConfigPath: testConfig(t), Logger: log, NoContainers: true})
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewMock()
	a.loud = loglimit.New(log, clk)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	const bogus = 10000
	for i := range bogus {
		_, err := a.Acquire(ctx, AcquireRequest{Job: fmt.Sprintf("bogus-%d", i), Requirements: caps("no-such-capability")})
		if !errors.Is(err, errdefs.ErrRejected) {
			t.Fatalf("acquire %d: %v, want a rejection", i, err)
		}
	}
	// On the loop, as the engine's notes come: a reason that changes.
	if err := a.onLoop(ctx, func() {
		for range 10 {
			a.logDecisions([]engine.Effect{engine.Note{Subject: "demo/kv",
				Text: "start failed: no such file or directory", Level: engine.NoteWarn}})
		}
		a.logDecisions([]engine.Effect{engine.Note{Subject: "demo/kv",
			Text: "start failed: permission denied", Level: engine.NoteWarn}})
	}); err != nil {
		t.Fatal(err)
	}
	if n := logs.Count("lease rejected"); n != loglimit.Burst {
		t.Errorf("%d lines of rejections for %d bogus acquires, want %d", n, bogus, loglimit.Burst)
	}
	if n := logs.Count("permission denied"); n != 1 {
		t.Errorf("the failure's new reason logged %d times, want 1", n)
	}
	clk.Add(loglimit.Window)
	if n := logs.Count("log lines left out by the rate limit", "subject=leases",
		fmt.Sprintf("left_out=%d", bogus-loglimit.Burst), "no-such-capability"); n != 1 {
		t.Errorf("%d summaries counting the %d rejections left out, want 1", n, bogus-loglimit.Burst)
	}
	if n := logs.Count("log lines left out by the rate limit", "subject=demo/kv", "left_out=5",
		"no such file or directory"); n != 1 {
		t.Errorf("%d summaries of demo/kv's failures, want 1", n)
	}
	if n := logs.Count(); n > 50 {
		t.Errorf("%d log lines in all, want a bounded few", n)
	}
}
