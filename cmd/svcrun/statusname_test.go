package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/oarbank/svcrun/api"
)

func TestStatusName(t *testing.T) {
	_, sock := served(t)
	code, lease, errs := run(t, "acquire", "--socket", sock, "--pool", "kv-slots=2", "--job", "j-held")
	if code != 0 {
		t.Fatalf("acquire: %d %s", code, errs)
	}
	lease = strings.TrimSpace(lease)
	// A second request waits for the held tokens.
	c, err := api.Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitCtx, stopWaiting := context.WithCancel(context.Background())
	defer stopWaiting()
	go c.Acquire(waitCtx,
		api.AcquireRequest{Attempt: "attempt-waits", Pools: map[string]int64{"kv-slots": 1}, Wait: api.Duration(time.Hour)})
	for st := status(t, sock); len(st.Leases) < 2; st = status(t, sock) {
		time.Sleep(10 * time.Millisecond) // polling the real daemon for the request to arrive
	}

	code, out, errs := run(t, "status", "--socket", sock, "demo/kv")
	for _, want := range []string{"demo/kv: ready since ", "  processes:    ",
		"  pools:        kv-slots 2 reserved of 2 offered",
		lease + " (admitted)", " (waiting)", "recent events:", "admitted " + lease + " (demo/kv)"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("status demo/kv: exit %d, lacks %q\n%s%s", code, want, out, errs)
		}
	}
	code, out, _ = run(t, "status", "--socket", sock, "--json", "demo/kv")
	var d detail
	if err := json.Unmarshal([]byte(out), &d); code != 0 || err != nil || d.Service == nil ||
		d.Service.Name != "demo/kv" || len(d.Leases) != 2 {
		t.Errorf("status --json demo/kv: exit %d, %v: %+v", code, err, d)
	}
	// The process-group fallback (no cgroups here) lists what is left in
	// the groups of the service's ops at the moment; the demo's daemon
	// leads a session of its own, out of their reach (docs/decisions.md),
	// so the list may be empty. What it lists is a real process.
	for _, p := range d.Processes {
		if p.PID <= 0 {
			t.Errorf("status --json demo/kv lists pid %d", p.PID)
		}
	}
	code, out, _ = run(t, "status", "--socket", sock, "demo/posix-sh")
	if code != 0 || !strings.Contains(out, "demo/posix-sh: probe of capability posix-sh, healthy") {
		t.Errorf("status of the probe: exit %d\n%s", code, out)
	}
	code, out, _ = run(t, "status", "--socket", sock, lease)
	if code != 0 || !strings.Contains(out, lease+": admitted") || !strings.Contains(out, "  job:          j-held") {
		t.Errorf("status of the lease: exit %d\n%s", code, out)
	}
	// The whole status: the waiting lease says since when, until when, what for.
	code, out, _ = run(t, "status", "--socket", sock)
	if code != 0 || !strings.Contains(out, "may wait until ") ||
		!strings.Contains(out, "    waiting: pool kv-slots: needs 1 token(s), 2 of 2 reserved") {
		t.Errorf("status: the waiting lease's lines are missing\n%s", out)
	}

	code, _, errs = run(t, "status", "--socket", sock, "demo/k")
	if code != 1 ||
		!strings.Contains(errs,
			`svcrun status: no service, probe or lease "demo/k"; services and probes: demo/kv, demo/posix-sh`) {
		t.Errorf("unknown name: exit %d, %s", code, errs)
	}
	if code, _, errs = run(t, "status", "--socket", sock, "a", "b"); code != 2 ||
		!strings.Contains(errs, "at most one NAME") {
		t.Errorf("two names: exit %d, %s", code, errs)
	}
}

func TestMentions(t *testing.T) {
	for _, tc := range []struct {
		text string
		want bool
	}{
		{"demo/kv: ready", true},
		{"admitted lease-1 (demo/kv)", true},
		{"admitted lease-1 (demo/kv2, demo/kv)", true},
		{"demo/kv2: ready", false},
		{"admitted lease-1 (demo/kvx)", false},
		{"nothing here", false},
	} {
		if got := mentions(tc.text, "demo/kv"); got != tc.want {
			t.Errorf("mentions(%q) = %v", tc.text, got)
		}
	}
}

// TestDetailContainer: status NAME says whether the service's container
// holds its daemon, since that decides how soon a crash is seen.
func TestDetailContainer(t *testing.T) {
	tests := []struct {
		s    api.ServiceStatus
		want string
	}{
		{api.ServiceStatus{Name: "m/s", State: "ready", Container: "cgroup", Contained: true},
			"  container:    cgroup, holding the daemon: a crash is seen as it empties\n"},
		{api.ServiceStatus{Name: "m/s", State: "ready", Container: "cgroup"}, "  container:    cgroup\n"},
		{api.ServiceStatus{Name: "m/s", State: "stopped"}, "  container:    -\n"},
	}
	for _, tt := range tests {
		var out strings.Builder
		s := tt.s
		printDetail(&out, api.Status{Now: time.Unix(1_000_000, 0)}, detail{Service: &s})
		if !strings.Contains(out.String(), tt.want) {
			t.Errorf("%+v: lacks %q\n%s", tt.s, tt.want, out.String())
		}
	}
}
