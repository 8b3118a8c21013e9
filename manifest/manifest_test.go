package manifest

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// makeBundle lays out a bundle with the executables the tests name:
// bin/svc (executable), bin/noexec (mode 0644), bin/dir (a directory),
// bin/link-in (a symlink to svc) and bin/link-out (a symlink leaving it).
func makeBundle(t testing.TB, manifest string) string {
	t.Helper()
	dir := t.TempDir()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "bin", "dir"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "bin", "svc"), []byte("#!/bin/sh\n"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "bin", "noexec"), []byte("#!/bin/sh\n"), 0o644))
	must(os.Symlink("svc", filepath.Join(dir, "bin", "link-in")))
	outside := filepath.Join(t.TempDir(), "outside")
	must(os.WriteFile(outside, []byte("#!/bin/sh\n"), 0o755))
	must(os.Symlink(outside, filepath.Join(dir, "bin", "link-out")))
	must(os.Symlink("../..", filepath.Join(dir, "bin", "up")))
	must(os.WriteFile(filepath.Join(dir, FileName), []byte(manifest), 0o644))
	return dir
}

func TestLoadFull(t *testing.T) {
	data, err := os.ReadFile("testdata/full.toml")
	if err != nil {
		t.Fatal(err)
	}
	dir := makeBundle(t, string(data))
	m, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	root, _ := filepath.EvalSymlinks(dir)
	want := &Module{
		Name: "colima", Version: "0.6.8", Dir: root, File: filepath.Join(dir, FileName),
		Sandbox: Sandbox{Read: []string{"/opt/homebrew/bin"}, Network: NetworkHost, Containers: []string{"postgres:16"}},
		Services: []Service{
			{
				Module: "colima", Name: "colima", Exec: []string{"bin/svc", "--quiet"}, Platforms: []string{"macos", "linux"},
				Lifecycle: OnDemand, IdleTimeout: 600 * time.Second, StartTimeout: 300 * time.Second,
				Pools: []string{"docker-slots"}, Capabilities: []string{"docker"},
				ReservesHostMemory: true, Yieldable: true,
				Restart: Restart{BackoffInitial: 5 * time.Second, BackoffMax: 300 * time.Second, MaxFailures: 5,
					ResetAfter: 600 * time.Second},
			},
			{
				Module: "colima", Name: "helper", Exec: []string{"bin/link-in"},
				Lifecycle: OnDemand, IdleTimeout: DefaultIdleTimeout, StartTimeout: DefaultStartTimeout,
				Restart: Restart{BackoffInitial: time.Second, BackoffMax: 300 * time.Second, MaxFailures: 5,
					ResetAfter: 600 * time.Second},
			},
		},
		Probes: []Probe{{Module: "colima", Name: "jdk17", Exec: []string{"bin/svc", "--min", "17"},
			Period: time.Hour, Platforms: []string{"linux", "macos", "windows"}}},
	}
	if diff := cmp.Diff(want, m, cmpopts.IgnoreUnexported(Module{})); diff != "" {
		t.Errorf("Load (-want +got):\n%s", diff)
	}
	if got := m.Services[0].FullName(); got != "colima/colima" {
		t.Errorf("FullName = %q", got)
	}
	if !m.Services[0].RunsOn("linux") || m.Services[0].RunsOn("windows") || !m.Services[1].RunsOn("windows") {
		t.Error("RunsOn disagrees with platforms")
	}
}

func TestFractionalSecondsAndContainersPool(t *testing.T) {
	m, err := Parse("m.toml", []byte(`
[module]
name = "m"
version = "1"
[[services]]
name = "s"
exec = ["bin/s"]
pools = ["containers", "slots"]
restart = { backoff_initial_s = 0.25 }
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Services[0].Restart.BackoffInitial; got != 250*time.Millisecond {
		t.Errorf("backoff_initial = %v", got)
	}
	zero, err := Parse("m.toml",
		[]byte("[module]\nname = \"m\"\nversion = \"1\"\n[[services]]\nname = \"s\"\nexec = [\"bin/s\"]\nrestart "+
			"= { backoff_initial_s = 0 }\n"))
	if err != nil {
		t.Fatalf("backoff_initial_s = 0: %v", err)
	}
	if got := zero.Services[0].Restart.BackoffInitial; got != 0 {
		t.Errorf("backoff_initial_s = 0 read as %v", got)
	}
	if diff := cmp.Diff([]string{"slots"}, m.Services[0].Pools); diff != "" {
		t.Errorf("pools: %s", diff)
	}
	want := []string{`m.toml:8:1: services[0].pools: pool "containers" belongs to the agent's container ` +
		`broker and was dropped: the module's jobs reserve containers from the broker`}
	if diff := cmp.Diff(want, m.Warnings); diff != "" {
		t.Errorf("warnings: %s", diff)
	}
}

const head = "[module]\nname = \"m\"\nversion = \"1\"\n"
const svc = "[[services]]\nname = \"s\"\nexec = [\"bin/svc\"]\n"

// TestInvalid lists manifests that must be rejected, each with the exact
// messages, one per line, in file order.
func TestInvalid(t *testing.T) {
	cases := []struct {
		name, toml string
		want       []string
	}{
		{"syntax", "[module\n", []string{"module.toml:1:8: expected ']' to close table name"}},
		{"empty file", "", []string{
			`module.toml: [module] is missing: a manifest starts with [module] name = "..." and version = "..."`,
			`module.toml: the module declares no [[services]] and no [[probes]]`}},
		{"no services", head, []string{`module.toml: the module declares no [[services]] and no [[probes]]`}},
		{"missing name and version", "[module]\n" + svc, []string{
			`module.toml:1:2: module.name: is required`,
			`module.toml:1:2: module.version: is required`}},
		{"bad module name", "[module]\nname = \"Colima\"\nversion = \"1\"\n" + svc,
			[]string{`module.toml:2:1: module.name: "Colima" is not a valid module name: use 1-63 of a-z, 0-9 and ` +
				`'-', starting with a letter or digit`}},
		{"module name too long", "[module]\nname = \"" + strings.Repeat("a", 64) + "\"\nversion = \"1\"\n" + svc,
			[]string{`module.toml:2:1: module.name: "` + strings.Repeat("a",
				64) + `" is not a valid module name: use 1-63 of a-z, 0-9 and '-', starting with a letter or digit`}},
		{"version with space", "[module]\nname = \"m\"\nversion = \"1 2\"\n" + svc,
			[]string{`module.toml:3:1: module.version: "1 2" is not a valid version: use 1-64 printable characters ` +
				`without spaces`}},
		{"unknown top key", "servces = 1\n" + head + svc,
			[]string{`module.toml:1:1: servces: unknown key (did you mean "services"?)`}},
		{"unknown service key", head + svc + "runing = true\n",
			[]string{`module.toml:7:1: services[0].runing: unknown key (known: capabilities, exec, freeze_ok, ` +
				`idle_timeout_s, lifecycle, name, platforms, pools, reserves_host_memory, restart, start_timeout_s, yieldable)`}},
		{"typo in restart", head + svc + "restart = { max_failure = 3 }\n",
			[]string{`module.toml:7:13: services[0].restart.max_failure: unknown key (did you mean "max_failures"?)`}},
		{"service without name", head + "[[services]]\nexec = [\"bin/svc\"]\n",
			[]string{`module.toml:4:3: services[0].name: is required`}},
		{"bad service name", head + "[[services]]\nname = \"a/b\"\nexec = [\"bin/svc\"]\n",
			[]string{`module.toml:5:1: services[0].name: "a/b" is not a valid service name: use 1-63 of a-z, 0-9 ` +
				`and '-', starting with a letter or digit`}},
		{"duplicate service", head + svc + svc,
			[]string{`module.toml:8:1: services[1].name: service "s" is already declared by services[0]`}},
		{"duplicate probe", head +
			"[[probes]]\nname = \"p\"\nexec = [\"bin/svc\"]\n[[probes]]\nname = \"p\"\nexec = [\"bin/svc\"]\n",
			[]string{
				`module.toml:8:1: probes[1].name: probe "p" is already declared by probes[0]`,
				`module.toml:8:1: probes[1].name: capability "p" is declared twice in module "m": capability names are ` +
					`node-wide, each belongs to one service or probe`}},
		{"missing exec", head + "[[services]]\nname = \"s\"\n",
			[]string{`module.toml:4:3: services[0].exec: is required: the executable relative to the bundle root, ` +
				`then its arguments, e.g. ["bin/service"]`}},
		{"empty exec", head + "[[services]]\nname = \"s\"\nexec = []\n",
			[]string{`module.toml:6:1: services[0].exec: must not be empty: give the executable relative to the ` +
				`bundle root, e.g. ["bin/service"]`}},
		{"exec a string", head + "[[services]]\nname = \"s\"\nexec = \"bin/svc\"\n",
			[]string{`module.toml:6:1: services[0].exec: must be an array of strings, got string "bin/svc"`}},
		{"absolute exec", head + "[[services]]\nname = \"s\"\nexec = [\"/bin/sh\"]\n",
			[]string{`module.toml:6:9: services[0].exec[0]: "/bin/sh" must be relative to the bundle root (no PATH ` +
				`lookup, no absolute paths)`}},
		{"unclean exec", head + "[[services]]\nname = \"s\"\nexec = [\"./bin/svc\"]\n",
			[]string{`module.toml:6:9: services[0].exec[0]: "./bin/svc" is not a clean path: write "bin/svc"`}},
		{"exec leaves bundle", head + "[[services]]\nname = \"s\"\nexec = [\"../x\"]\n",
			[]string{`module.toml:6:9: services[0].exec[0]: "../x" leaves the bundle`}},
		{"exec backslash", head + "[[services]]\nname = \"s\"\nexec = ['bin\\svc']\n",
			[]string{`module.toml:6:9: services[0].exec[0]: "bin\\svc": use '/' to separate path elements`}},
		{"exec missing file", head + "[[services]]\nname = \"s\"\nexec = [\"bin/nope\"]\n",
			[]string{`module.toml:6:9: services[0].exec[0]: "bin/nope" does not exist in the bundle BUNDLE`}},
		{"exec not executable", head + "[[services]]\nname = \"s\"\nexec = [\"bin/noexec\"]\n",
			[]string{`module.toml:6:9: services[0].exec[0]: "bin/noexec" is not executable (mode -rw-r--r--): chmod +x it`}},
		{"exec a directory", head + "[[services]]\nname = \"s\"\nexec = [\"bin/dir\"]\n",
			[]string{`module.toml:6:9: services[0].exec[0]: "bin/dir" is not a regular file (d---------)`}},
		{"exec symlink out", head + "[[services]]\nname = \"s\"\nexec = [\"bin/link-out\"]\n",
			[]string{`module.toml:6:9: services[0].exec[0]: "bin/link-out" resolves to OUTSIDE, outside the bundle`}},
		{"exec symlinked dir out", head + "[[services]]\nname = \"s\"\nexec = [\"bin/up/x\"]\n",
			[]string{`module.toml:6:9: services[0].exec[0]: "bin/up/x" does not exist in the bundle BUNDLE`}},
		{"exec arg with NUL", head + "[[services]]\nname = \"s\"\nexec = [\"bin/svc\", \"a\\u0000b\"]\n",
			[]string{`module.toml:6:20: services[0].exec[1]: an argument must not contain a NUL byte`}},
		{"bad platform", head + svc + "platforms = [\"darwin\"]\n",
			[]string{`module.toml:7:14: services[0].platforms[0]: "darwin" is not a platform: use "linux", "macos", "windows"`}},
		{"empty platforms", head + svc + "platforms = []\n",
			[]string{`module.toml:7:1: services[0].platforms: must not be empty: leave it out to run on every platform`}},
		{"duplicate platform", head + svc + "platforms = [\"linux\", \"linux\"]\n",
			[]string{`module.toml:7:23: services[0].platforms[1]: platform "linux" is listed twice`}},
		{"bad lifecycle", head + svc + "lifecycle = \"sometimes\"\n",
			[]string{`module.toml:7:1: services[0].lifecycle: "sometimes" is not a lifecycle: use "on_demand", ` +
				`"always" or "manual"`}},
		{"zero idle timeout", head + svc + "idle_timeout_s = 0\n",
			[]string{`module.toml:7:1: services[0].idle_timeout_s: must be more than 0 seconds, got 0`}},
		{"string timeout", head + svc + "start_timeout_s = \"5m\"\n",
			[]string{`module.toml:7:1: services[0].start_timeout_s: must be a number, got string "5m"`}},
		{"initial over max", head + svc + "restart = { backoff_initial_s = 10, backoff_max_s = 5 }\n",
			[]string{`module.toml:7:13: services[0].restart.backoff_initial_s: backoff_initial_s (10s) must not ` +
				`exceed backoff_max_s (5s)`}},
		{"initial over default max", head + svc + "restart = { backoff_initial_s = 600 }\n",
			[]string{`module.toml:7:13: services[0].restart.backoff_initial_s: backoff_initial_s (10m0s) must not ` +
				`exceed backoff_max_s (5m0s)`}},
		{"negative initial", head + svc + "restart = { backoff_initial_s = -1 }\n",
			[]string{`module.toml:7:13: services[0].restart.backoff_initial_s: must be 0 or more seconds, got -1`}},
		{"zero max failures", head + svc + "restart = { max_failures = 0 }\n",
			[]string{`module.toml:7:13: services[0].restart.max_failures: must be at least 1, got 0`}},
		{"float max failures", head + svc + "restart = { max_failures = 2.5 }\n",
			[]string{`module.toml:7:13: services[0].restart.max_failures: must be an integer, got float 2.5`}},
		{"restart not a table", head + svc + "restart = 5\n",
			[]string{`module.toml:7:1: services[0].restart: must be a table, got integer 5`}},
		{"bad pool name", head + svc + "pools = [\"Docker Slots\"]\n",
			[]string{`module.toml:7:10: services[0].pools[0]: "Docker Slots" is not a valid pool name: use 1-63 of ` +
				`a-z, 0-9, '.', '_' and '-', starting with a letter or digit`}},
		{"pool twice in service", head + svc + "pools = [\"a\", \"a\"]\n",
			[]string{`module.toml:7:15: services[0].pools[1]: pool "a" is listed twice`}},
		{"capability in two services",
			head + svc + "capabilities = [\"docker\"]\n[[services]]\nname = \"t\"\nexec = " +
				"[\"bin/svc\"]\ncapabilities = [\"docker\"]\n",
			[]string{`module.toml:11:1: services[1].capabilities: capability "docker" is declared twice in module ` +
				`"m": capability names are node-wide, each belongs to one service or probe`}},
		{"probe name is a service capability",
			head + svc + "capabilities = [\"jdk\"]\n[[probes]]\nname = \"jdk\"\nexec = [\"bin/svc\"]\n",
			[]string{`module.toml:9:1: probes[0].name: capability "jdk" is declared twice in module "m": capability ` +
				`names are node-wide, each belongs to one service or probe`}},
		{"bool as string", head + svc + "yieldable = \"yes\"\n",
			[]string{`module.toml:7:1: services[0].yieldable: must be true or false, got string "yes"`}},
		{"probe bad name", head + "[[probes]]\nname = \"JDK 17\"\nexec = [\"bin/svc\"]\n",
			[]string{`module.toml:5:1: probes[0].name: "JDK 17" is not a valid capability name: use 1-63 of a-z, ` +
				`0-9, '.', '_' and '-', starting with a letter or digit`}},
		{"probe zero period", head + "[[probes]]\nname = \"p\"\nexec = [\"bin/svc\"]\nperiod_s = -5\n",
			[]string{`module.toml:7:1: probes[0].period_s: must be more than 0 seconds, got -5`}},
		{"probe with lifecycle", head + "[[probes]]\nname = \"p\"\nexec = [\"bin/svc\"]\nlifecycle = \"always\"\n",
			[]string{`module.toml:7:1: probes[0].lifecycle: unknown key (known: exec, name, period_s, platforms)`}},
		{"services a table", head + "[services]\nname = \"s\"\n",
			[]string{`module.toml:4:2: services: must be an array of tables ([[services]]), got a table`}},
		{"docker socket", head + "[sandbox]\nwrite = [\"/var/run/docker.sock\"]\n" + svc,
			[]string{`module.toml:5:10: sandbox.write[0]: "/var/run/docker.sock" gives access to ` +
				`/var/run/docker.sock (the Docker socket), which is never granted: services cannot start containers or ` +
				`VMs themselves; declare the images in [sandbox].containers and let jobs use the agent's broker`}},
		{"parent of kvm", head + "[sandbox]\nread = [\"/dev\"]\n" + svc,
			[]string{`module.toml:5:9: sandbox.read[0]: "/dev" gives access to /dev/kvm (the KVM device), which is ` +
				`never granted: services cannot start containers or VMs themselves; declare the images in ` +
				`[sandbox].containers and let jobs use the agent's broker`}},
		{"rootless podman", head + "[sandbox]\nread = [\"/run/user/1000/podman\"]\n" + svc,
			[]string{`module.toml:5:9: sandbox.read[0]: "/run/user/1000/podman" gives access to ` +
				`/run/user/*/podman/podman.sock (a rootless Podman socket), which is never granted: services cannot ` +
				`start containers or VMs themselves; declare the images in [sandbox].containers and let jobs use the ` +
				`agent's broker`}},
		{"socket by name", head + "[sandbox]\nread = [\"/home/u/.colima/default/docker.sock\"]\n" + svc,
			[]string{`module.toml:5:9: sandbox.read[0]: "/home/u/.colima/default/docker.sock" gives access to ` +
				`/home/u/.colima/default/docker.sock (a Docker socket), which is never granted: services cannot start ` +
				`containers or VMs themselves; declare the images in [sandbox].containers and let jobs use the agent's broker`}},
		{"relative grant", head + "[sandbox]\nread = [\"opt/x\"]\n" + svc,
			[]string{`module.toml:5:9: sandbox.read[0]: "opt/x" must be an absolute path`}},
		{"unclean grant", head + "[sandbox]\nwrite = [\"/srv/a/../b/\"]\n" + svc,
			[]string{`module.toml:5:10: sandbox.write[0]: "/srv/a/../b/" is not clean: write "/srv/b"`}},
		{"bad network", head + "[sandbox]\nnetwork = \"bridge\"\n" + svc,
			[]string{`module.toml:5:1: sandbox.network: "bridge" is not a network mode: use "host" or "none"`}},
		{"bad container ref", head + "[sandbox]\ncontainers = [\"postgres 16\"]\n" + svc,
			[]string{`module.toml:5:15: sandbox.containers[0]: "postgres 16" is not a container image reference`}},
		{"several errors at once", head + "[[services]]\nname = \"S\"\nexec = [\"/x\"]\nlifecycle = \"x\"\n", []string{
			`module.toml:5:1: services[0].name: "S" is not a valid service name: use 1-63 of a-z, 0-9 and '-', ` +
				`starting with a letter or digit`,
			`module.toml:6:9: services[0].exec[0]: "/x" must be relative to the bundle root (no PATH lookup, no absolute paths)`,
			`module.toml:7:1: services[0].lifecycle: "x" is not a lifecycle: use "on_demand", "always" or "manual"`}},
		{"invalid utf-8", head + "# \xff\n" + svc, []string{`module.toml:4:3: not valid UTF-8`}},
		{"duplicate key", head + svc + "name = \"t\"\n", []string{`module.toml:7:1: key name is already defined`}},
	}
	if len(cases) < 30 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if runtime.GOOS == "windows" && strings.Contains(tc.name, "executable") {
				t.Skip("no executable bit on windows")
			}
			dir := makeBundle(t, tc.toml)
			_, err := Load(dir)
			if err == nil {
				t.Fatal("Load accepted an invalid manifest")
			}
			root, _ := filepath.EvalSymlinks(dir)
			outside, _ := filepath.EvalSymlinks(filepath.Join(dir, "bin", "link-out"))
			got := strings.ReplaceAll(err.Error(), filepath.Join(dir, FileName), FileName)
			got = strings.ReplaceAll(got, outside, "OUTSIDE")
			got = strings.ReplaceAll(got, root, "BUNDLE")
			if diff := cmp.Diff(strings.Join(tc.want, "\n"), got); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadMissingManifest(t *testing.T) {
	dir := t.TempDir()
	_, err := Load(dir)
	want := filepath.Join(dir, FileName) + ": cannot read the manifest: no such file or directory"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
}

func TestCheckSet(t *testing.T) {
	mk := func(file, name, body string) *Module {
		m, err := Parse(file, []byte("[module]\nname = \""+name+"\"\nversion = \"1\"\n"+body))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	a := mk("a/module.toml", "a", svc+"pools = [\"slots\"]\ncapabilities = [\"docker\"]\n")
	b := mk("b/module.toml", "b", svc+"pools = [\"gpu\"]\n[[probes]]\nname = \"docker\"\nexec = [\"bin/p\"]\n")
	c := mk("c/module.toml", "a", "[[probes]]\nname = \"jdk\"\nexec = [\"bin/p\"]\n")
	d := mk("d/module.toml", "d", svc+"pools = [\"slots\"]\n")
	if err := CheckSet([]*Module{a, d}); err == nil ||
		err.Error() != `d/module.toml:7:1: services[0].pools: pool "slots" is declared by both module "a" `+
			`(a/module.toml:7:1) and module "d"; pool names are node-wide: rename one or disable one of the modules` {
		t.Errorf("pool clash: %v", err)
	}
	want := strings.Join([]string{
		`b/module.toml:9:1: probes[0].name: capability "docker" is declared by both module "a" ` +
			`(a/module.toml:8:1) and module "b"; capability names are node-wide: rename one or disable one of the modules`,
		`c/module.toml: module.name: module "a" is also the name of the bundle a/module.toml; module names are ` +
			`unique on a node`,
	}, "\n")
	if err := CheckSet([]*Module{a, b, c}); err == nil || err.Error() != want {
		t.Errorf("CheckSet:\n%v\nwant:\n%s", err, want)
	}
	if err := CheckSet([]*Module{b, d}); err != nil {
		t.Errorf("disjoint modules: %v", err)
	}
}

func TestForbidden(t *testing.T) {
	for _, tc := range []struct {
		path string
		bad  bool
	}{
		{"/", true}, {"/var", true}, {"/var/run", true}, {"/run", true}, {"/run/user", true},
		{"/run/user/1000", true}, {"/run/containerd", true}, {"/dev/kvm", true},
		{"/srv/docker.sock", true}, {"/opt/homebrew/bin", false}, {"/usr/local/bin", false},
		{"/run/user/1000/app", false}, {"/var/lib/data", false}, {"/dev/null", false},
	} {
		what, _ := Forbidden(tc.path)
		if (what != "") != tc.bad {
			t.Errorf("Forbidden(%q) = %q, want forbidden=%v", tc.path, what, tc.bad)
		}
	}
}
