package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/oarbank/svcrun/agent"
	"github.com/oarbank/svcrun/api"
	"github.com/oarbank/svcrun/internal/cli"
)

// served starts an agent on the demo module with its API, as `svcrun
// serve` does, and returns the node configuration file and the socket.
// noPressure is a pressure file that does not exist: the in-process
// agents of the tests do not watch the host's memory pressure, which a
// loaded machine would turn into yields no test asked for.
const noPressure = "testdata/no-such-pressure-file"

func served(t *testing.T) (cfg, sock string) {
	t.Helper()
	return servedModule(t, "../../examples/modules/demo", "settings = { slots = 2 }")
}

// servedModule is served on the module in dir, with the lines of its
// [[modules]] entry after its bundle.
func servedModule(t *testing.T, dir, entry string) (cfg, sock string) {
	t.Helper()
	bundle, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	sdir, err := os.MkdirTemp("", "sv")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sdir) })
	sock = filepath.Join(sdir, "s.sock")
	cfg = filepath.Join(t.TempDir(), "svcrun.toml")
	text := fmt.Sprintf(`node_id = "cli-node"
data_dir = "data"
socket = %q
memory_budget_gb = 1
sandbox = "best_effort"

[[modules]]
bundle = %q
%s
`, sock, bundle, entry)
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(testLog{t}, nil))
	a, err := agent.Open(
		agent.Options{ConfigPath: cfg, Logger: log, StopServicesOnExit: true, NoContainers: true, PressureFile: noPressure})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := startAPI(ctx, a, log)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		srv.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent: %v", err)
		}
	})
	return cfg, sock
}

type testLog struct{ t testing.TB }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

func TestRunCommand(t *testing.T) {
	_, sock := served(t)
	code, out, errs := run(t, "run", "--socket", sock, "--capability", "kv", "--job", "j-run", "--",
		"sh", "-c", `echo "attempt=$OARBANK_ATTEMPT_ID lease=$OARBANK_LEASE_ID home=$HOME"; exit 3`)
	if code != 3 {
		t.Fatalf("exit %d, want 3 (CMD's)\nstdout: %s\nstderr: %s", code, out, errs)
	}
	if !regexp.MustCompile(
		`attempt=attempt-[0-9a-f]{16} lease=lease-[0-9a-f]{16} home=` + regexp.QuoteMeta(os.Getenv("HOME"))).MatchString(
		out) {
		t.Errorf("CMD's environment: %q", out)
	}
	// Released after: no lease left, kv has no reference.
	code, out, errs = run(t, "status", "--socket", sock, "--json")
	if code != 0 {
		t.Fatalf("status: %d %s", code, errs)
	}
	var st api.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	if len(st.Leases) != 0 || len(st.Services) != 1 || st.Services[0].Refs != 0 || !st.Services[0].Ready {
		t.Errorf("after run: %+v", st)
	}

	// An attempt id given is passed on; a signal's death is 128+N.
	code, out, _ = run(t, "run", "--socket", sock, "--attempt", "attempt-mine", "--ttl", "3s", "--", "sh", "-c",
		`echo $OARBANK_ATTEMPT_ID; sleep 1.2; kill -TERM $$`)
	if code != 128+15 || strings.TrimSpace(out) != "attempt-mine" {
		t.Errorf("killed CMD: exit %d, out %q", code, out)
	}
	code, _, errs = run(t, "run", "--socket", sock, "--", "/nonexistent/cmd")
	if code != 127 || !strings.Contains(errs, "cannot run /nonexistent/cmd") {
		t.Errorf("missing CMD: exit %d, %s", code, errs)
	}
	code, _, _ = run(t, "run", "--socket", sock, "--", "true")
	if code != 0 {
		t.Errorf("run true: exit %d", code)
	}

	// Not admitted: the reason, exit 125 (run's own failure), CMD never runs.
	code, out, errs = run(t, "run", "--socket", sock, "--pool", "kv-slots=5", "--wait", "300ms", "--", "sh", "-c",
		"echo ran")
	if code != 125 || strings.Contains(out, "ran") ||
		!strings.Contains(errs, "svcrun run: rejected: pool kv-slots: needs 5 token(s), but demo/kv offers 2 in all") {
		t.Errorf("rejected run: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	code, _, errs = run(t, "run", "--socket", sock, "--capability", "nope", "--", "true")
	if code != 125 || !strings.Contains(errs, "rejected: ") || !strings.Contains(errs, "nope") {
		t.Errorf("unknown capability: exit %d, %s", code, errs)
	}
	st2 := status(t, sock)
	if len(st2.Leases) != 0 || st2.Services[0].Refs != 0 {
		t.Errorf("leases left: %+v", st2.Leases)
	}
}

func status(t *testing.T, sock string) api.Status {
	t.Helper()
	c, err := api.Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, err := c.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestLeaseCommands(t *testing.T) {
	cfg, sock := served(t)
	code, out, errs := run(t, "acquire", "--config", cfg, "--capability", "kv", "--pool", "kv-slots=1", "--ttl", "1m",
		"--job", "j1")
	lease := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(lease, "lease-") {
		t.Fatalf("acquire: %d %q %s", code, out, errs)
	}
	t.Setenv(EnvSocket, sock) // from here, the socket comes from the environment
	code, out, _ = run(t, "acquire", "--capability", "kv", "--json")
	var g api.Grant
	if code != 0 || json.Unmarshal([]byte(out), &g) != nil || g.Lease == "" || g.Attempt == "" ||
		g.Services[0] != "demo/kv" {
		t.Fatalf("acquire --json: %d %s", code, out)
	}
	code, out, _ = run(t, "renew", lease)
	if code != 0 || !strings.Contains(out, lease+" expires ") {
		t.Errorf("renew: %d %s", code, out)
	}
	code, out, _ = run(t, "renew", "--json", g.Lease)
	if code != 0 || !strings.Contains(out, `"lease": "`+g.Lease+`"`) || strings.Contains(out, "expires") {
		t.Errorf("renew --json without ttl: %d %s", code, out)
	}
	code, out, _ = run(t, "status")
	if code != 0 {
		t.Errorf("status: exit %d\n%s", code, out)
	}
	for _, want := range []string{"node cli-node", "sandbox best_effort", "memory budget: 0.05 of 1 GB",
		"SERVICE", "demo/kv", "on_demand", "kv-slots 1/2",
		"demo/posix-sh", lease, "j1", "admitted"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	for _, l := range []string{lease, g.Lease} {
		if code, _, errs := run(t, "release", l); code != 0 {
			t.Errorf("release %s: %d %s", l, code, errs)
		}
	}
	code, _, errs = run(t, "release", lease)
	// The hint is a line of the command's, as every line it prints.
	if code != 1 || !strings.Contains(errs, "no such lease") ||
		!strings.Contains(errs, "\nsvcrun release: hint: svcrun status lists the leases") {
		t.Errorf("release twice: %d %s", code, errs)
	}
	code, _, errs = run(t, "renew", "lease-nope")
	if code != 1 || !strings.Contains(errs, "lease lease-nope: no such lease") {
		t.Errorf("renew unknown: %d %s", code, errs)
	}
	code, _, errs = run(t, "acquire", "--pool", "kv-slots=9", "--wait", "0s")
	if code != 1 || !strings.Contains(errs, "rejected: pool kv-slots") {
		t.Errorf("acquire rejected: %d %s", code, errs)
	}

	for _, tc := range []struct {
		args []string
		code int
		out  string
		err  string
	}{
		{[]string{"doctor"}, 0, "the probes run again", ""},
		{[]string{"reap"}, 0, "0 destroyed, 0 kept, 0 failed", ""},
		{[]string{"reset", "demo/kv"}, 0, "demo/kv: failures cleared", ""},
		{[]string{"reset", "demo/nope"}, 1, "", `no such service "demo/nope"; services: demo/kv`},
		{[]string{"reset", "kv"}, 2, "", "name the service MODULE/SERVICE"},
		{[]string{"disable", "demo"}, 0, "module demo disabled", ""},
		{[]string{"enable", "demo"}, 0, "module demo enabled", ""},
		{[]string{"enable", "nope"}, 1, "", `no such module "nope"; modules: demo`},
		{[]string{"enable"}, 2, "", "give MODULE"},
		{[]string{"reload"}, 0, "configuration reloaded", ""},
		{[]string{"reload", "--json"}, 0, `"restart_needed": []`, ""},
		{[]string{"release"}, 2, "", "give LEASE"},
		{[]string{"run", "--capability", "kv"}, 125, "", "give the command to run after --"},
		{[]string{"run", "--pool", "kv-slots", "--", "true"}, 125, "", "use NAME=N"},
		{[]string{"run", "--", "sh", "-c", "exit 2"}, 2, "", ""}, // the command's own 2 passes through
		{[]string{"status", "--socket", "/nonexistent/s.sock"}, 1, "",
			"svcrun status: cannot reach svcrun at /nonexistent/s.sock: is `svcrun serve` running?"},
	} {
		code, out, errs := run(t, tc.args...)
		if code != tc.code || !strings.Contains(out, tc.out) || !strings.Contains(errs, tc.err) {
			t.Errorf("%v: exit %d (want %d)\nstdout: %s\nstderr: %s", tc.args, code, tc.code, out, errs)
		}
	}
}

// A rejection for an unhealthy service comes with the svcrun reset that
// clears it: the engine's reason only says it is unhealthy.
func TestRejectedUnhealthyHint(t *testing.T) {
	_, sock := servedModule(t, "testdata/broken", "")
	// The first acquire waits through the failed start; the second finds
	// the service unhealthy.
	for i := range 2 {
		code, _, errs := run(t, "acquire", "--socket", sock, "--capability", "cap-broken", "--wait", "60s")
		if code != 1 || !strings.Contains(errs, "service broken/svc is unhealthy after 1 consecutive failures") {
			t.Fatalf("acquire %d: exit %d, stderr:\n%s", i+1, code, errs)
		}
		if i == 1 &&
			!strings.Contains(errs,
				"\nsvcrun acquire: hint: broken/svc is unhealthy: svcrun reset broken/svc clears its failures; ") {
			t.Errorf("acquire %d: no reset hint, stderr:\n%s", i+1, errs)
		}
	}
}

func TestSocketResolution(t *testing.T) {
	cfg, sock := served(t)
	t.Setenv(EnvSocket, "/from/env.sock")
	env := &cli.Env{Stdout: io.Discard, Stderr: io.Discard}
	fs := env.FlagSet("x", "")
	f := addSocketFlags(env, fs)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "/from/env.sock"},
		{[]string{"--config", cfg}, sock},
		{[]string{"--config", cfg, "--socket", "/given.sock"}, "/given.sock"},
	} {
		*f.socket, *f.config = "", ""
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if got, err := f.path(); err != nil || got != tc.want {
			t.Errorf("%v: %q %v, want %q", tc.args, got, err, tc.want)
		}
	}
	t.Setenv(EnvSocket, "")
	*f.socket, *f.config = "", ""
	if got, _ := f.path(); got != "/run/svcrun/svcrun.sock" {
		t.Errorf("default socket %q", got)
	}
}

func TestStartAPIStopsWithContext(t *testing.T) {
	_, sock := served(t)
	// A second daemon on the same socket fails clearly.
	cfg2 := filepath.Join(t.TempDir(), "n.toml")
	os.WriteFile(cfg2,
		[]byte(fmt.Sprintf(
			"node_id = \"n2\"\ndata_dir = \"d\"\nsocket = %q\nmemory_budget_gb = 1\nsandbox = \"best_effort\"\n", sock)), 0o644)
	a, err := agent.Open(
		agent.Options{ConfigPath: cfg2, Logger: slog.New(slog.NewTextHandler(testLog{t}, nil)), NoContainers: true,
			PressureFile: noPressure})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := startAPI(ctx, a, slog.Default()); err == nil ||
		!strings.Contains(err.Error(), "another svcrun listens on "+sock) {
		t.Errorf("second API: %v", err)
	}
	// Its own socket elsewhere: closed when ctx is done.
	sock2 := filepath.Join(filepath.Dir(sock), "t.sock")
	a.Config().Socket = sock2
	c, err := startAPI(ctx, a, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Lstat(sock2); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("socket still there after ctx done")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close after ctx: %v", err)
	}
	a.Run(ctx) // closes the store
}

// TestProgressLine: the line says what the lease waits for, with the
// engine's times as clock times and how far off, never raw timestamps, and
// fits the terminal's width (a line wider than the terminal wraps, and its
// rewrite in place then leaves rows behind).
func TestProgressLine(t *testing.T) {
	now := time.Date(2026, 12, 7, 1, 16, 25, 0, time.UTC)
	backoff := "demo/kv is backing off after failure 2/3 (start failed: exit status 1) until 2026-12-07T01:16:37Z"
	st := api.Status{Now: now, Leases: []api.LeaseStatus{
		{ID: "l1", Attempt: "a1", Waiting: "db/postgres is starting; capability jdk: its probe has not reported yet"},
		{ID: "l2", Attempt: "a2", Waiting: backoff},
		{ID: "l3", Attempt: "a3", Admitted: true},
	}}
	clock := time.Date(2026, 12, 7, 1, 16, 37, 0, time.UTC).Local().Format("15:04:05")
	for _, tc := range []struct {
		attempt string
		width   int
		want    string
	}{
		{"a1", 0, "waiting: db/postgres is starting; capability jdk: its probe has not reported yet, 12 s"},
		{"a2", 0,
			"waiting: demo/kv is backing off after failure 2/3 (start failed: exit status 1) until " + clock +
				" (in 12 s), 12 s"},
		{"a1", 40, "waiting: db/postgres is starting; ca..."},
		{"a1", 200, "waiting: db/postgres is starting; capability jdk: its probe has not reported yet, 12 s"},
		{"a3", 0, ""}, // admitted: nothing to show
		{"zz", 0, ""},
	} {
		got := progressLine(st, tc.attempt, 12*time.Second+300*time.Millisecond, tc.width)
		if got != tc.want {
			t.Errorf("%s, width %d:\n got %q\nwant %q", tc.attempt, tc.width, got, tc.want)
		}
		if tc.width > 0 && len([]rune(got)) >= tc.width {
			t.Errorf("%s: %d columns on a terminal of %d", tc.attempt, len([]rune(got)), tc.width)
		}
	}
}

// TestJSONAnswers: every command that changes something answers --json
// with one object, {"ok": true, ...} or the failure's {"ok": false,
// "error", "code", ...} with the same exit code as without --json; flags
// may follow the arguments.
func TestJSONAnswers(t *testing.T) {
	cfg, sock := served(t)
	t.Setenv(EnvSocket, sock)
	code, out, errs := run(t, "acquire", "--capability", "kv", "--ttl", "1m")
	lease := strings.TrimSpace(out)
	if code != 0 {
		t.Fatalf("acquire: %d %s", code, errs)
	}
	for _, tc := range []struct {
		args []string
		code int
		want map[string]any
	}{
		{[]string{"doctor", "--json"}, 0,
			map[string]any{"ok": true, "message": "the probes run again; their results show in svcrun status"}},
		{[]string{"reap", "--json"}, 0, map[string]any{}}, // TestReapWaitsForTheRound
		{[]string{"reset", "demo/kv", "--json", "--config", cfg}, 0, map[string]any{"ok": true, "service": "demo/kv"}},
		{[]string{"reset", "demo/nope", "--json"}, 1,
			map[string]any{"ok": false, "code": "not_found", "error": `no such service "demo/nope"; services: demo/kv`}},
		{[]string{"disable", "demo", "--json"}, 0, map[string]any{"ok": true, "module": "demo", "enabled": false}},
		{[]string{"enable", "--json", "demo"}, 0, map[string]any{"ok": true, "module": "demo", "enabled": true}},
		{[]string{"enable", "nope", "--json"}, 1, map[string]any{"ok": false, "code": "not_found"}},
		{[]string{"renew", lease, "--json"}, 0, map[string]any{"lease": lease}},
		{[]string{"release", lease, "--json"}, 0, map[string]any{"ok": true, "lease": lease}},
		{[]string{"release", lease, "--json"}, 1,
			map[string]any{"ok": false, "code": "unknown_lease",
				"error": "lease " + lease + ": no such lease (never admitted, released, or expired)"}},
		{[]string{"renew", "--json", lease}, 1, map[string]any{"ok": false, "code": "unknown_lease"}},
		{[]string{"acquire", "--json", "--pool", "kv-slots=9", "--wait", "0"}, 1,
			map[string]any{"ok": false, "code": "rejected"}},
		{[]string{"reload", "--json"}, 0, map[string]any{"ok": true, "restart_needed": []any{}}},
	} {
		code, out, errs := run(t, tc.args...)
		var got map[string]any
		err := json.Unmarshal([]byte(out), &got)
		bad := code != tc.code || err != nil || errs != ""
		for k, v := range tc.want {
			if fmt.Sprint(got[k]) != fmt.Sprint(v) {
				bad = true
			}
		}
		if bad {
			t.Errorf("%q: exit %d (want %d)\nstdout: %s\nstderr: %s", tc.args, code, tc.code, out, errs)
		}
	}

	// A configuration with errors: the reload is refused, as JSON too.
	good, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, append(good, "bogus_key = 1\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = run(t, "reload", "--json")
	var f cli.FailureJSON
	if code != 1 || errs != "" || json.Unmarshal([]byte(out), &f) != nil || f.OK || f.Code != "refused" ||
		!strings.Contains(f.Error, "bogus_key") {
		t.Errorf("reload --json of a bad configuration: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	code, out, errs = run(t, "reload")
	if code != 1 || out != "" || !strings.HasPrefix(errs, "svcrun reload: ") || !strings.Contains(errs, "bogus_key") {
		t.Errorf("reload of a bad configuration: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	// The refusal is an event, naming the error.
	if code, out, errs = run(t, "events"); code != 0 ||
		!regexp.MustCompile(`reload of \S+ refused, the running configuration stays: .*bogus_key`).MatchString(out) {
		t.Errorf("events after a refused reload: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	if err := os.WriteFile(cfg, good, 0o644); err != nil {
		t.Fatal(err)
	}
}
