package nodeconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var testHost = Host{
	Hostname:    "node-a",
	MemoryBytes: 32 << 30,
	Cores:       2,
	Platform:    "linux",
	UserExists:  func(n string) bool { return n == "svc" },
	GroupID: func(n string) (int, bool) {
		if n == "jobs" {
			return 1500, true
		}
		return 0, false
	},
}

func parse(t *testing.T, text string) (*Config, error) {
	t.Helper()
	return Parse("svcrun.toml", "/etc/svcrun/svcrun.toml", []byte(text), testHost)
}

func TestDefaults(t *testing.T) {
	c, err := parse(t, "")
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		File: "/etc/svcrun/svcrun.toml", NodeID: "node-a", DataDir: "/var/lib/svcrun", Socket: "/var/lib/svcrun/svcrun.sock",
		SocketGID: -1,
		Platform:  "linux", MemoryBudgetGB: 25.6, Sandbox: SandboxRequire, MaxConcurrentOps: 8,
		StatusPeriod: 10 * time.Second, WatchedStatusPeriod: 5 * time.Minute, FingerprintPeriod: 5 * time.Minute,
		ReapPeriod: time.Minute, ReapSweepPeriod: 10 * time.Minute,
		MemoryPressure: MemoryPressure{Enabled: true, SomeAvg10: 20, FullAvg10: 5},
		Containers: Containers{Socket: "/run/podman/podman.sock",
			Max: 4, MemGB: 1, MaxMemGB: 4, CPUs: 1, MaxCPUs: 2, Pids: 1024, MaxPids: 4096,
			Networks: []string{"none"}, Pull: PullMissing, PullTimeout: 5 * time.Minute},
		Warnings: []string{"svcrun.toml: no [[modules]]: svcrun runs nothing on this node; " +
			"a running svcrun refuses to reload this file while it has modules enabled (to stop them all, " +
			"set enabled = false on each and reload first)"},
	}
	if diff := cmp.Diff(want, c, cmpopts.IgnoreUnexported(Config{})); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

func TestFull(t *testing.T) {
	c, err := parse(t, `
node_id = "node-1"
data_dir = "state"
socket = "/run/svcrun.sock"
socket_group = "jobs"
platform = "macos"
memory_budget_gb = 16
sandbox = "best_effort"
run_as = "svc"
max_concurrent_ops = 3
status_period_s = 2.5
watched_status_period_s = 120
fingerprint_period_s = 30
reap_period_s = 120
reap_sweep_period_s = 1200
metrics_listen = "127.0.0.1:9464"

[memory_pressure]
some_avg10 = 35.5
full_avg10 = 10

[limits]
mem_gb = 8
pids = 1024

[containers]
enabled = true
socket = "podman.sock"
max = 3
mem_gb = 0.5
max_mem_gb = 2
cpus = 0.5
max_cpus = 1.5
pids = 100
max_pids = 200
networks = ["none", "bridge"]
pull = "never"
pull_timeout_s = 60

[[modules]]
bundle = "modules/colima"
grants = { read = ["/opt/homebrew/bin"], write = [] }
tools = { docker = "/usr/local/bin/docker", jq = "/usr/bin/jq" }
settings = { cpus = 4, name = "x", when = 2024-01-02T03:04:05Z, nested = { list = [1, 2] } }

[[modules]]
bundle = "/srv/bundles/jdk"
enabled = false
`)
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		File:   "/etc/svcrun/svcrun.toml",
		NodeID: "node-1", DataDir: "/etc/svcrun/state", Socket: "/run/svcrun.sock", SocketGroup: "jobs", SocketGID: 1500,
		Platform: "macos", MemoryBudgetGB: 16, Sandbox: SandboxBestEffort, RunAs: "svc", MaxConcurrentOps: 3,
		StatusPeriod: 2500 * time.Millisecond, WatchedStatusPeriod: 2 * time.Minute, FingerprintPeriod: 30 * time.Second,
		ReapPeriod: 2 * time.Minute, ReapSweepPeriod: 20 * time.Minute,
		MetricsListen: "127.0.0.1:9464", MemoryPressure: MemoryPressure{Enabled: true, SomeAvg10: 35.5, FullAvg10: 10},
		Limits: Limits{MemGB: 8, Pids: 1024},
		Containers: Containers{Enabled: true, Socket: "/etc/svcrun/podman.sock",
			Max: 3, MemGB: 0.5, MaxMemGB: 2, CPUs: 0.5, MaxCPUs: 1.5, Pids: 100, MaxPids: 200,
			Networks: []string{"none", "bridge"}, Pull: PullNever, PullTimeout: time.Minute},
		Modules: []Module{
			{
				Bundle: "/etc/svcrun/modules/colima", Enabled: true, Grants: Grants{Read: []string{"/opt/homebrew/bin"}},
				Tools: map[string]string{"docker": "/usr/local/bin/docker", "jq": "/usr/bin/jq"},
				Settings: map[string]any{"cpus": int64(4), "name": "x", "when": "2024-01-02T03:04:05Z",
					"nested": map[string]any{"list": []any{int64(1), int64(2)}}},
			},
			{Bundle: "/srv/bundles/jdk", Settings: map[string]any{}},
		},
	}
	if diff := cmp.Diff(want, c, cmpopts.IgnoreUnexported(Config{}, Module{})); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	if got := c.ModuleDataDir("colima"); got != "/etc/svcrun/state/modules/colima" {
		t.Errorf("ModuleDataDir = %s", got)
	}
}

// TestWatchedStatusPeriod: watched_status_period_s defaults to 300 s, and
// never to less than status_period_s, which a node may set higher.
func TestWatchedStatusPeriod(t *testing.T) {
	cases := []struct {
		toml string
		want time.Duration
	}{
		{"", 300 * time.Second},
		{"status_period_s = 600\n", 600 * time.Second},
		{"status_period_s = 5\nwatched_status_period_s = 5\n", 5 * time.Second},
		{"watched_status_period_s = 3600\n", time.Hour},
	}
	for _, tc := range cases {
		c, err := parse(t, tc.toml)
		if err != nil {
			t.Fatalf("%q: %v", tc.toml, err)
		}
		if c.WatchedStatusPeriod != tc.want {
			t.Errorf("%q: WatchedStatusPeriod %v, want %v", tc.toml, c.WatchedStatusPeriod, tc.want)
		}
	}
}

// TestReapSweepPeriod: reap_sweep_period_s defaults to 600 s, and never
// to less than reap_period_s, which a node may set higher.
func TestReapSweepPeriod(t *testing.T) {
	cases := []struct {
		toml string
		want time.Duration
	}{
		{"", 600 * time.Second},
		{"reap_period_s = 900\n", 900 * time.Second},
		{"reap_period_s = 30\nreap_sweep_period_s = 30\n", 30 * time.Second},
		{"reap_sweep_period_s = 3600\n", time.Hour},
	}
	for _, tc := range cases {
		c, err := parse(t, tc.toml)
		if err != nil {
			t.Fatalf("%q: %v", tc.toml, err)
		}
		if c.ReapSweepPeriod != tc.want {
			t.Errorf("%q: ReapSweepPeriod %v, want %v", tc.toml, c.ReapSweepPeriod, tc.want)
		}
	}
}

func TestInvalid(t *testing.T) {
	long := "/" + strings.Repeat("s", 110)
	cases := []struct {
		name, toml string
		host       *Host
		want       []string
	}{
		{"syntax", "node_id = \n", nil, []string{"svcrun.toml:1:11: unexpected character U+000A at start of value"}},
		{"unknown key", "data_dri = \"x\"\n", nil,
			[]string{`svcrun.toml:1:1: data_dri: unknown key (did you mean "data_dir"?)`}},
		{"bad node id", "node_id = \"node 1\"\n", nil, []string{`svcrun.toml:1:1: node_id: ` +
			`"node 1" is not a valid node id: use 1-253 of A-Z, a-z, 0-9, '.', '_' and '-', starting with a letter or digit`}},
		{"hostname unusable", "", &Host{Hostname: "", MemoryBytes: 1 << 30, Platform: "linux"},
			[]string{`svcrun.toml: node_id: is required: the host name "" is not a valid node id`}},
		{"empty data dir", "data_dir = \"\"\n", nil, []string{`svcrun.toml:1:1: data_dir: must not be empty`}},
		{"long socket", "socket = \"" + long + "\"\n", nil,
			[]string{
				`svcrun.toml:1:1: socket: ` + long +
					` is 111 bytes long; a Unix socket path can have at most 103: choose a shorter socket path`}},
		{"bad platform", "platform = \"darwin\"\n", nil,
			[]string{`svcrun.toml:1:1: platform: "darwin" is not a platform: use "linux", "macos" or "windows"`}},
		{"zero budget", "memory_budget_gb = 0\n", nil,
			[]string{`svcrun.toml:1:1: memory_budget_gb: must be more than 0, got 0`}},
		{"budget over memory", "memory_budget_gb = 64\n", nil,
			[]string{`svcrun.toml:1:1: memory_budget_gb: 64 is more than the host's physical memory (32.0 GB)`}},
		{"budget unknown memory", "", &Host{Hostname: "h", Platform: "linux"},
			[]string{`svcrun.toml: memory_budget_gb: is required: the physical memory of this host is unknown`}},
		{"budget string", "memory_budget_gb = \"16G\"\n", nil,
			[]string{`svcrun.toml:1:1: memory_budget_gb: must be a number, got string "16G"`}},
		{"bad sandbox", "sandbox = \"off\"\n", nil,
			[]string{`svcrun.toml:1:1: sandbox: "off" is not a sandbox mode: use "require" or "best_effort"`}},
		{"run as root", "run_as = \"root\"\n", nil,
			[]string{
				`svcrun.toml:1:1: run_as: must name an unprivileged user, not root: leave it out to run ops as svcrun's own user`}},
		{"run as unknown", "run_as = \"nobody2\"\n", nil,
			[]string{
				`svcrun.toml:1:1: run_as: no user "nobody2" on this host: create it (useradd --system nobody2) or change run_as`}},
		{"run as invalid", "run_as = \"Bad User\"\n", nil,
			[]string{`svcrun.toml:1:1: run_as: "Bad User" is not a valid user name`}},
		{"socket group unknown", "socket_group = \"job\"\n", nil, []string{`svcrun.toml:1:1: socket_group: ` +
			`no group "job" on this host: create it (groupadd --system job) or change socket_group`}},
		{"socket group invalid", "socket_group = \"Job Runners\"\n", nil,
			[]string{`svcrun.toml:1:1: socket_group: "Job Runners" is not a valid group name`}},
		{"socket group negative", "socket_group = \"-3\"\n", nil,
			[]string{`svcrun.toml:1:1: socket_group: "-3" is not a group: use a group name or a gid of 0 or more`}},
		{"socket group not a string",
			"socket_group = 1500\n", nil, []string{`svcrun.toml:1:1: socket_group: must be a string, got integer 1500`}},
		{"zero ops", "max_concurrent_ops = 0\n", nil,
			[]string{`svcrun.toml:1:1: max_concurrent_ops: must be between 1 and 4096, got 0`}},
		{"negative period", "reap_period_s = -1\n", nil,
			[]string{`svcrun.toml:1:1: reap_period_s: must be more than 0 seconds, got -1`}},
		{"watched status zero", "watched_status_period_s = 0\n", nil,
			[]string{`svcrun.toml:1:1: watched_status_period_s: must be more than 0 seconds, got 0`}},
		{"watched status below status", "status_period_s = 30\nwatched_status_period_s = 20\n", nil,
			[]string{`svcrun.toml:2:1: watched_status_period_s: must be at least status_period_s (30 s), got 20 s: ` +
				`a contained service is polled less often, never more`}},
		{"reap sweep zero", "reap_sweep_period_s = 0\n", nil,
			[]string{`svcrun.toml:1:1: reap_sweep_period_s: must be more than 0 seconds, got 0`}},
		{"reap sweep below reap", "reap_period_s = 120\nreap_sweep_period_s = 60\n", nil, []string{`svcrun.toml:2:1: ` +
			`reap_sweep_period_s: must be at least reap_period_s (120 s), got 60 s: a sweep is a reap round that lists every ` +
			`running service`}},
		{"limits typo", "[limits]\nmem = 8\n", nil,
			[]string{`svcrun.toml:2:1: limits.mem: unknown key (known: mem_gb, pids)`}},
		{"top-level key appended below a module", "[[modules]]\nbundle = \"a\"\nsocket_group = \"svcrun-jobs\"\n", nil,
			[]string{`svcrun.toml:3:1: modules[0].socket_group: socket_group is a top-level key, ` +
				`but written below the [[modules]] header it is a key of modules[0]: move it above the first table header`}},
		{"top-level key below [limits]", "[limits]\nrun_as = \"x\"\n", nil, []string{`svcrun.toml:2:1: limits.run_as: ` +
			`run_as is a top-level key, but written below the [limits] header it is a key of limits: ` +
			`move it above the first table header`}},
		{"limits zero pids", "[limits]\npids = 0\n", nil,
			[]string{`svcrun.toml:2:1: limits.pids: must be at least 1, got 0 (leave it out for no cap)`}},
		{"module without bundle", "[[modules]]\nenabled = true\n", nil, []string{`svcrun.toml:1:3: modules[0].bundle: ` +
			`is required: the module's bundle directory (relative to this file or absolute)`}},
		{"bundle twice", "[[modules]]\nbundle = \"a\"\n[[modules]]\nbundle = \"./a\"\n", nil,
			[]string{`svcrun.toml:4:1: modules[1].bundle: bundle /etc/svcrun/a is already listed by modules[0]`}},
		{"grant docker socket", "[[modules]]\nbundle = \"a\"\ngrants = { write = [\"/run\"] }\n", nil,
			[]string{`svcrun.toml:3:21: modules[0].grants.write[0]: "/run" gives access to /run/docker.sock (the Docker ` +
				`socket), which is never granted: services cannot start containers or VMs themselves; ` +
				`declare the images in [sandbox].containers and let jobs use the agent's broker`}},
		{"grant over data dir", "data_dir = \"/srv/svcrun\"\n[[modules]]\nbundle = \"a\"\ngrants = { read = [\"/srv\"] }\n",
			nil, []string{`svcrun.toml:4:20: modules[0].grants.read[0]: "/srv" overlaps svcrun's data dir /srv/svcrun ` +
				`(its state and every module's data): a module's own data dir is always writable and needs no grant`}},
		{"grant inside data dir",
			"data_dir = \"/srv/svcrun\"\n[[modules]]\nbundle = \"a\"\ngrants = { read = [\"/srv/svcrun/modules/other\"] }\n",
			nil, []string{`svcrun.toml:4:20: modules[0].grants.read[0]: "/srv/svcrun/modules/other" ` +
				`overlaps svcrun's data dir /srv/svcrun (its state and every module's data): ` +
				`a module's own data dir is always writable and needs no grant`}},
		{"grant the socket", "socket = \"/run/sv/s.sock\"\n[[modules]]\nbundle = \"a\"\ngrants = { read = [\"/run/sv\"] }\n",
			nil, []string{`svcrun.toml:4:20: modules[0].grants.read[0]: "/run/sv" gives access to svcrun's own socket ` +
				`/run/sv/s.sock, which is never granted`}},
		{"grant relative", "[[modules]]\nbundle = \"a\"\ngrants = { read = [\"opt\"] }\n", nil,
			[]string{`svcrun.toml:3:20: modules[0].grants.read[0]: "opt" must be an absolute path`}},
		{"grants typo", "[[modules]]\nbundle = \"a\"\ngrants = { reads = [] }\n", nil,
			[]string{`svcrun.toml:3:12: modules[0].grants.reads: unknown key (did you mean "read"?)`}},
		{"tool relative", "[[modules]]\nbundle = \"a\"\ntools = { docker = \"docker\" }\n", nil,
			[]string{`svcrun.toml:3:11: modules[0].tools.docker: "docker" must be a clean absolute path to the tool`}},
		{"tool a socket", "[[modules]]\nbundle = \"a\"\ntools = { d = \"/var/run/docker.sock\" }\n", nil,
			[]string{`svcrun.toml:3:11: modules[0].tools.d: "/var/run/docker.sock" gives access to /var/run/docker.sock (the ` +
				`Docker socket), which is never granted: the module's jobs use the agent's container broker`}},
		{"tool empty", "[[modules]]\nbundle = \"a\"\ntools = { d = \"\" }\n", nil,
			[]string{`svcrun.toml:3:11: modules[0].tools.d: the tool's path is empty`}},
		{"tool not string", "[[modules]]\nbundle = \"a\"\ntools = { d = 1 }\n", nil,
			[]string{`svcrun.toml:3:11: modules[0].tools.d: must be a string, got integer 1`}},
		{"enabled string", "[[modules]]\nbundle = \"a\"\nenabled = \"yes\"\n", nil,
			[]string{`svcrun.toml:3:1: modules[0].enabled: must be true or false, got string "yes"`}},
		{"metrics listen typo", "metrics_listn = \"127.0.0.1:9464\"\n", nil,
			[]string{`svcrun.toml:1:1: metrics_listn: unknown key (did you mean "metrics_listen"?)`}},
		{"metrics listen no port", "metrics_listen = \"127.0.0.1\"\n", nil, []string{`svcrun.toml:1:1: metrics_listen: ` +
			`"127.0.0.1" is not HOST:PORT (such as "127.0.0.1:9464", or "[::1]:9464" for IPv6)`}},
		{"metrics listen bad port", "metrics_listen = \"127.0.0.1:http\"\n", nil,
			[]string{`svcrun.toml:1:1: metrics_listen: "127.0.0.1:http": the port "http" must be a number from 0 to 65535`}},
		{"metrics listen port too big", "metrics_listen = \"127.0.0.1:70000\"\n", nil,
			[]string{`svcrun.toml:1:1: metrics_listen: "127.0.0.1:70000": the port "70000" must be a number from 0 to 65535`}},
		{"metrics listen bad host", "metrics_listen = \"my host:9464\"\n", nil,
			[]string{`svcrun.toml:1:1: metrics_listen: "my host:9464": "my host" is neither an IP address nor a host name`}},
		{"metrics listen empty", "metrics_listen = \"\"\n", nil,
			[]string{`svcrun.toml:1:1: metrics_listen: must not be empty: leave it out for no /metrics listener`}},
		{"metrics listen number", "metrics_listen = 9464\n", nil,
			[]string{`svcrun.toml:1:1: metrics_listen: must be a string, got integer 9464`}},
		{"pressure typo", "[memory_pressure]\nsome_avg_10 = 5\n", nil,
			[]string{`svcrun.toml:2:1: memory_pressure.some_avg_10: unknown key (did you mean "some_avg10"?)`}},
		{"pressure zero", "[memory_pressure]\nfull_avg10 = 0\n", nil, []string{`svcrun.toml:2:1: ` +
			`memory_pressure.full_avg10: must be more than 0 and at most 100 (percent), got 0: to ignore memory pressure, ` +
			`set enabled = false`}},
		{"pressure over 100", "[memory_pressure]\nsome_avg10 = 150\n", nil, []string{`svcrun.toml:2:1: ` +
			`memory_pressure.some_avg10: must be more than 0 and at most 100 (percent), got 150: to ignore memory pressure, ` +
			`set enabled = false`}},
		{"pressure string", "[memory_pressure]\nsome_avg10 = \"20%\"\n", nil,
			[]string{`svcrun.toml:2:1: memory_pressure.some_avg10: must be a number, got string "20%"`}},
		{"pressure not a table", "memory_pressure = true\n", nil,
			[]string{`svcrun.toml:1:1: memory_pressure: must be a table, got boolean true`}},
		{"several", "sandbox = \"x\"\nreap_period_s = 0\n[limits]\nmem_gb = -1\n", nil, []string{
			`svcrun.toml:1:1: sandbox: "x" is not a sandbox mode: use "require" or "best_effort"`,
			`svcrun.toml:2:1: reap_period_s: must be more than 0 seconds, got 0`,
			`svcrun.toml:4:1: limits.mem_gb: must be more than 0, got -1 (leave it out for no cap)`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := testHost
			if tc.host != nil {
				h = *tc.host
			}
			_, err := Parse("svcrun.toml", "/etc/svcrun/svcrun.toml", []byte(tc.toml), h)
			if err == nil {
				t.Fatal("accepted")
			}
			if diff := cmp.Diff(strings.Join(tc.want, "\n"), err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

// writeBundle makes a bundle with an executable bin/svc and the manifest.
func writeBundle(t *testing.T, dir, manifest string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "svc"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "module.toml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadModules(t *testing.T) {
	dir := t.TempDir()
	writeBundle(t, filepath.Join(dir, "a"), "[module]\nname = \"a\"\nversion = \"1\"\n[sandbox]\nread = [\"/opt\"]\n"+
		"write = [\"/srv/a\"]\n[[services]]\nname = \"s\"\nexec = [\"bin/svc\"]\ncapabilities = [\"docker\"]\n")
	writeBundle(t, filepath.Join(dir, "b"),
		"[module]\nname = \"b\"\nversion = \"1\"\n[[probes]]\nname = \"docker\"\nexec = [\"bin/svc\"]\n")
	writeBundle(t, filepath.Join(dir, "c"),
		"[module]\nname = \"a\"\nversion = \"1\"\n[[probes]]\nname = \"jdk\"\nexec = [\"bin/svc\"]\n")
	writeBundle(t, filepath.Join(dir, "bad"),
		"[module]\nname = \"bad\"\nversion = \"1\"\n[[probes]]\nname = \"p\"\nexec = [\"bin/missing\"]\n")
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "dirmanifest", "module.toml"), 0o755); err != nil {
		t.Fatal(err)
	}
	load := func(text string) error {
		file := filepath.Join(dir, "svcrun.toml")
		c, err := Parse("svcrun.toml", file, []byte(text), testHost)
		if err != nil {
			t.Fatalf("parse: %v", err)
		}
		_, err = LoadModules(c)
		return err
	}
	valid := "[[modules]]\nbundle = \"a\"\ngrants = { read = [\"/opt/tools\", \"/srv/a\"], " +
		"write = [\"/srv/a/cache\"] }\n[[modules]]\nbundle = \"b\"\nenabled = false\n"
	if err := load(valid); err != nil {
		t.Errorf("valid set: %v", err)
	}
	// Each module comes back with its own [[modules]] entry.
	c, err := Parse("svcrun.toml", filepath.Join(dir, "svcrun.toml"), []byte(valid), testHost)
	if err != nil {
		t.Fatal(err)
	}
	mods, err := LoadModules(c)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range mods {
		got = append(got, fmt.Sprintf("%s enabled=%v bundle=%s", m.Manifest.Name, m.Config.Enabled, m.Config.Bundle))
	}
	if want := []string{"a enabled=true bundle=" + dir + "/a", "b enabled=false bundle=" + dir + "/b"}; !slices.Equal(got,
		want) {
		t.Errorf("modules %q, want %q", got, want)
	}
	for _, tc := range []struct{ name, toml, want string }{
		{"capability clash", "[[modules]]\nbundle = \"a\"\n[[modules]]\nbundle = \"b\"\n",
			dir + `/b/module.toml:5:1: probes[0].name: capability "docker" is declared by both module "a" (` + dir +
				`/a/module.toml:10:1) and module "b"; capability names are node-wide: rename one or disable one of the modules`},
		{"module name clash", "[[modules]]\nbundle = \"a\"\n[[modules]]\nbundle = \"c\"\nenabled = false\n",
			`svcrun.toml:4:1: modules[1].bundle: module "a" is also the module of modules[0] (` + dir +
				`/a); module names are unique on a node`},
		{"grant not asked", "[[modules]]\nbundle = \"a\"\ngrants = { read = [\"/etc/ssl\"], write = [\"/opt\"] }\n",
			strings.Join([]string{
				`svcrun.toml:2:1: modules[0].grants.read: "/etc/ssl" is not asked for by module "a", ` +
					`whose [sandbox].read asks for /opt, /srv/a: grant only what the manifest asks`,
				`svcrun.toml:2:1: modules[0].grants.write: "/opt" is not asked for by module "a", whose [sandbox].write asks for ` +
					`/srv/a: grant only what the manifest asks`}, "\n")},
		{"bad manifest", "[[modules]]\nbundle = \"bad\"\n",
			dir + `/bad/module.toml:6:9: probes[0].exec[0]: "bin/missing" does not exist in the bundle ` + dir + `/bad`},
		{"missing bundle", "[[modules]]\nbundle = \"nope\"\n",
			`svcrun.toml:2:1: modules[0].bundle: the bundle directory ` + dir +
				`/nope does not exist: check the path; "nope" is relative to the config file's directory, ` + dir},
		{"missing absolute bundle", "[[modules]]\nbundle = \"" + dir + "/nope\"\n",
			`svcrun.toml:2:1: modules[0].bundle: the bundle directory ` + dir + `/nope does not exist: check the path`},
		{"bundle under a file", "[[modules]]\nbundle = \"file/x\"\n",
			`svcrun.toml:2:1: modules[0].bundle: the bundle directory ` + dir +
				`/file/x does not exist: check the path; "file/x" is relative to the config file's directory, ` + dir},
		{"bundle is a file", "[[modules]]\nbundle = \"file\"\n",
			`svcrun.toml:2:1: modules[0].bundle: ` + dir + `/file is not a directory: bundle names the module's bundle ` +
				`directory, the one holding module.toml; check the path; "file" is relative to the config file's directory, ` +
				dir},
		{"bundle without manifest", "[[modules]]\nbundle = \"empty\"\n",
			`svcrun.toml:2:1: modules[0].bundle: the bundle directory ` + dir + `/empty has no module.toml: ` +
				`bundle names the directory that holds the module's manifest, module.toml; check the path; ` +
				`"empty" is relative to the config file's directory, ` + dir},
		{"manifest is a directory", "[[modules]]\nbundle = \"dirmanifest\"\n",
			`svcrun.toml:2:1: modules[0].bundle: the manifest ` + dir +
				`/dirmanifest/module.toml is not a regular file: a bundle holds its manifest, module.toml, at its root`},
		{"missing bundle among others", "[[modules]]\nbundle = \"bad\"\n[[modules]]\nbundle = \"nope\"\n[[modules]]\n" +
			"bundle = \"a\"\ngrants = { read = [\"/etc/ssl\"] }\n", strings.Join([]string{
			`svcrun.toml:4:1: modules[1].bundle: the bundle directory ` + dir +
				`/nope does not exist: check the path; "nope" is relative to the config file's directory, ` + dir,
			`svcrun.toml:6:1: modules[2].grants.read: "/etc/ssl" is not asked for by module "a", ` +
				`whose [sandbox].read asks for /opt, /srv/a: grant only what the manifest asks`,
			dir + `/bad/module.toml:6:9: probes[0].exec[0]: "bin/missing" does not exist in the bundle ` + dir + `/bad`}, "\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := load(tc.toml)
			if err == nil {
				t.Fatal("accepted")
			}
			got := err.Error()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadReadsFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "svcrun.toml")
	if err := os.WriteFile(file, []byte("node_id = \"n\"\nmemory_budget_gb = 0.5\ndata_dir = \"d\"\n"),
		0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if c.DataDir != filepath.Join(dir, "d") || c.NodeID != "n" {
		t.Errorf("got %+v", c)
	}
	if _, err := Load(filepath.Join(dir, "missing.toml")); err == nil ||
		!strings.Contains(err.Error(), "missing.toml: cannot read the node configuration: no such file or directory") {
		t.Errorf("missing file: %v", err)
	}
}

// TestLoadReportsEverything: when the config file has mistakes, Load
// reports those of its bundles and manifests with them, the file's first.
func TestLoadReportsEverything(t *testing.T) {
	dir := t.TempDir()
	writeBundle(t, filepath.Join(dir, "a"), "[module]\nname = \"a\"\nversion = \"1\"\n[[services]]\nname = \"s\"\n"+
		"exec = [\"bin/svc\"]\ncapabilities = [\"x\"]\n")
	writeBundle(t, filepath.Join(dir, "b"),
		"[module]\nname = \"b\"\nversion = \"1\"\n[[probes]]\nname = \"x\"\nexec = [\"bin/svc\"]\n")
	writeBundle(t, filepath.Join(dir, "bad"),
		"[module]\nname = \"bad\"\nversion = \"1\"\n[[probes]]\nname = \"p\"\nexec = [\"bin/missing\"]\n")
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	missing := func(line int, i int, rel string) string {
		return fmt.Sprintf(`svcrun.toml:%d:1: modules[%d].bundle: the bundle directory %s does not exist: check the path; `+
			`%q is relative to the config file's directory, %s`,
			line, i, filepath.Join(dir, rel), rel, dir)
	}
	for _, tc := range []struct {
		name, toml string
		want       []string // nil: valid
	}{
		{"valid", "[[modules]]\nbundle = \"a\"\n", nil},
		// Load alone accepts a valid file whose bundle is missing: LoadModules
		// reports it (TestLoadModules).
		{"missing bundle alone", "[[modules]]\nbundle = \"nope\"\n", nil},
		{"missing bundle and other mistakes",
			"sandbox = \"off\"\n[[modules]]\nbundle = \"nope\"\nenabeld = true\n[limits]\npid = 1\n", []string{
				`svcrun.toml:1:1: sandbox: "off" is not a sandbox mode: use "require" or "best_effort"`,
				missing(3, 0, "nope"),
				`svcrun.toml:4:1: modules[0].enabeld: unknown key (did you mean "enabled"?)`,
				`svcrun.toml:6:1: limits.pid: unknown key (did you mean "pids"?)`}},
		{"every kind of bundle mistake", "node_id = \"a b\"\n[[modules]]\nbundle = \"file\"\n[[modules]]\n" +
			"bundle = \"empty\"\n[[modules]]\nbundle = \"bad\"\n[[modules]]\nbundle = \"gone/deeper\"\n", []string{
			`svcrun.toml:1:1: node_id: "a b" is not a valid node id: use 1-253 of A-Z, a-z, 0-9, '.', '_' and '-', ` +
				`starting with a letter or digit`,
			`svcrun.toml:3:1: modules[0].bundle: ` + dir + `/file is not a directory: bundle names the module's bundle ` +
				`directory, the one holding module.toml; check the path; "file" is relative to the config file's directory, ` + dir,
			`svcrun.toml:5:1: modules[1].bundle: the bundle directory ` + dir + `/empty has no module.toml: ` +
				`bundle names the directory that holds the module's manifest, module.toml; check the path; ` +
				`"empty" is relative to the config file's directory, ` + dir,
			missing(9, 3, "gone/deeper"),
			dir + `/bad/module.toml:6:9: probes[0].exec[0]: "bin/missing" does not exist in the bundle ` + dir + `/bad`}},
		{"checks across manifests",
			"run_as = \"root\"\n[[modules]]\nbundle = \"a\"\ngrants = { write = [\"/opt\"] }\n[[modules]]\nbundle = \"b\"\n",
			[]string{
				`svcrun.toml:1:1: run_as: must name an unprivileged user, not root: leave it out to run ops as svcrun's own user`,
				`svcrun.toml:3:1: modules[0].grants.write: "/opt" is not asked for by module "a", whose [sandbox].write asks for ` +
					`nothing: grant only what the manifest asks`,
				dir + `/b/module.toml:5:1: probes[0].name: capability "x" is declared by both module "a" (` + dir +
					`/a/module.toml:7:1) and module "b"; capability names are node-wide: rename one or disable one of the modules`}},
		{"listed twice, reported once",
			"sandbox = \"off\"\n[[modules]]\nbundle = \"nope\"\n[[modules]]\nbundle = \"./nope\"\n", []string{
				`svcrun.toml:1:1: sandbox: "off" is not a sandbox mode: use "require" or "best_effort"`,
				missing(3, 0, "nope"),
				`svcrun.toml:5:1: modules[1].bundle: bundle ` + dir + `/nope is already listed by modules[0]`}},
		{"bundle not a string", "[[modules]]\nbundle = 1\n", []string{
			`svcrun.toml:2:1: modules[0].bundle: must be a string, got integer 1`}},
		{"syntax error stops there", "sandbox = \n[[modules]]\nbundle = \"nope\"\n", []string{
			`svcrun.toml:1:11: unexpected character U+000A at start of value`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := load("svcrun.toml", filepath.Join(dir, "svcrun.toml"), []byte(tc.toml), testHost)
			if tc.want == nil {
				if err != nil || c == nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			if diff := cmp.Diff(strings.Join(tc.want, "\n"), err.Error()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestUnreadableBundle(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads everything")
	}
	dir := t.TempDir()
	writeBundle(t, filepath.Join(dir, "locked"), "[module]\nname = \"a\"\nversion = \"1\"\n")
	if err := os.Chmod(filepath.Join(dir, "locked", "module.toml"), 0); err != nil {
		t.Fatal(err)
	}
	writeBundle(t, filepath.Join(dir, "closed", "inner"), "[module]\nname = \"b\"\nversion = \"1\"\n")
	if err := os.Chmod(filepath.Join(dir, "closed"), 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(dir, "closed"), 0o755) })
	c, err := Parse("svcrun.toml", filepath.Join(dir, "svcrun.toml"),
		[]byte("[[modules]]\nbundle = \"locked\"\n[[modules]]\nbundle = \"closed/inner\"\n"), testHost)
	if err != nil {
		t.Fatal(err)
	}
	_, err = LoadModules(c)
	want := strings.Join([]string{
		`svcrun.toml:2:1: modules[0].bundle: cannot read the manifest ` + dir +
			`/locked/module.toml: permission denied: check that it can be read by the user svcrun runs as`,
		`svcrun.toml:4:1: modules[1].bundle: cannot read the bundle directory ` + dir +
			`/closed/inner: permission denied: check that it can be read by the user svcrun runs as`,
	}, "\n")
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

func TestSignalsKeys(t *testing.T) {
	cases := []struct {
		name, toml string
		listen     string
		pressure   MemoryPressure
	}{
		{"absent", "", "", MemoryPressure{Enabled: true, SomeAvg10: 20, FullAvg10: 5}},
		{"ipv6 loopback", "metrics_listen = \"[::1]:9464\"\n",
			"[::1]:9464", MemoryPressure{Enabled: true, SomeAvg10: 20, FullAvg10: 5}},
		{"every interface", "metrics_listen = \":9464\"\n",
			":9464", MemoryPressure{Enabled: true, SomeAvg10: 20, FullAvg10: 5}},
		{"host name, any port", "metrics_listen = \"localhost:0\"\n",
			"localhost:0", MemoryPressure{Enabled: true, SomeAvg10: 20, FullAvg10: 5}},
		{"pressure off", "[memory_pressure]\nenabled = false\n", "", MemoryPressure{SomeAvg10: 20, FullAvg10: 5}},
		{"one threshold", "[memory_pressure]\nsome_avg10 = 100\n",
			"", MemoryPressure{Enabled: true, SomeAvg10: 100, FullAvg10: 5}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parse(t, tc.toml)
			if err != nil {
				t.Fatal(err)
			}
			if c.MetricsListen != tc.listen || c.MemoryPressure != tc.pressure {
				t.Errorf("metrics_listen %q, memory_pressure %+v; want %q, %+v",
					c.MetricsListen, c.MemoryPressure, tc.listen, tc.pressure)
			}
		})
	}
}
