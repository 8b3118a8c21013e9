package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/oarbank/svcrun/api"
	"github.com/oarbank/svcrun/internal/cli"
)

func TestEventsCommand(t *testing.T) {
	_, sock := served(t)
	if code, _, errs := run(t, "run", "--socket", sock, "--capability", "kv", "--job", "j-ev", "--", "true"); code != 0 {
		t.Fatalf("run: %d %s", code, errs)
	}

	// The kept records: the lease's admission and release among them.
	code, out, errs := run(t, "events", "--socket", sock)
	if code != 0 || !strings.Contains(out, " admitted lease-") || !strings.Contains(out, " released lease-") ||
		errs != "" {
		t.Fatalf("events: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	code, out, _ = run(t, "events", "--socket", sock, "--since", "1h", "--json")
	var kinds []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r api.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil || r.At.IsZero() || r.Kind == "" {
			t.Fatalf("--json line %q: %v", line, err)
		}
		kinds = append(kinds, r.Kind)
	}
	if code != 0 || !strings.Contains(strings.Join(kinds, " "), "admitted") {
		t.Errorf("--json: exit %d, kinds %q", code, kinds)
	}
	if code, out, _ := run(t, "events", "--socket", sock, "--since",
		time.Now().Add(time.Hour).Format(time.RFC3339)); code != 0 || out != "" {
		t.Errorf("--since the future: exit %d, %q", code, out)
	}

	// -f: the last records, then the new ones, until interrupted.
	_, sock = served(t) // a node where no lease was admitted yet
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	exited := make(chan int, 1)
	go func() {
		exited <- program.Run(ctx, &cli.Env{Stdout: pw, Stderr: pw}, []string{"events", "-f", "--socket", sock})
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	if !lines.Scan() { // the boot's fingerprint at least: the stream is open
		t.Fatal("events -f printed nothing")
	}
	ran := make(chan int, 1)
	go func() {
		code, _, _ := run(t, "run", "--socket", sock, "--capability", "kv", "--", "true")
		ran <- code
	}()
	for lines.Scan() && !strings.Contains(lines.Text(), " admitted lease-") {
	}
	if !strings.Contains(lines.Text(), " admitted lease-") {
		t.Fatal("events -f did not show the new lease")
	}
	if code := <-ran; code != 0 {
		t.Errorf("run: exit %d", code)
	}
	cancel()
	go io.Copy(io.Discard, pr)
	if code := <-exited; code != 0 {
		t.Errorf("interrupted events -f: exit %d", code)
	}
}

func TestEventsCommandLine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"events", "--since", "yesterday"}, `svcrun events: --since "yesterday": ` +
			`give a duration back from now (10m, 1h30m) or an RFC 3339 time (2026-12-01T17:00:00Z)`},
		{[]string{"events", "--since", "-5m"}, `svcrun events: --since "-5m": a duration back from now must not be negative`},
		{[]string{"events", "extra"}, `svcrun events: unexpected argument "extra"`},
	} {
		code, out, errs := run(t, tc.args...)
		if code != 2 || out != "" || !strings.HasPrefix(errs, tc.err) {
			t.Errorf("%q: exit %d\nstdout: %s\nstderr: %s\nwant: %s", tc.args, code, out, errs, tc.err)
		}
	}
}
