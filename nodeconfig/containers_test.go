package nodeconfig

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestContainersInvalid(t *testing.T) {
	for _, tc := range []struct{ name, toml, want string }{
		{"max zero", "[containers]\nmax = 0\n", `svcrun.toml:2:1: containers.max: must be between 1 and 10000, got 0`},
		{"default over maximum", "[containers]\nmem_gb = 8\nmax_mem_gb = 2\n", `svcrun.toml:2:1: containers.mem_gb: ` +
			`8 is more than max_mem_gb (2): the default of a container must be within the maximum`},
		{"negative cpus", "[containers]\ncpus = -1\n", `svcrun.toml:2:1: containers.cpus: must be more than 0, got -1`},
		{"pids zero", "[containers]\nmax_pids = 0\n", `svcrun.toml:2:1: containers.max_pids: must be at least 1, got 0`},
		{"network host", "[containers]\nnetworks = [\"host\"]\n",
			`svcrun.toml:2:13: containers.networks[0]: "host" is not a container network: use "none" or "bridge"`},
		{"pull policy", "[containers]\npull = \"sometimes\"\n",
			`svcrun.toml:2:1: containers.pull: "sometimes" is not a pull policy: use "missing", "never" or "always"`},
		{"typo", "[containers]\nenable = true\n",
			`svcrun.toml:2:1: containers.enable: unknown key (did you mean "enabled"?)`},
		{"bad grant", "[[modules]]\nbundle = \"x\"\ngrants = { containers = [\"Postgres\"] }\n", `svcrun.toml:3:26: ` +
			`modules[0].grants.containers[0]: "Postgres" is not a container image reference: ` +
			`the name "Postgres" must be lowercase path components of a-z, 0-9, '.', '_' and '-'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(t, tc.toml)
			if err == nil {
				t.Fatal("accepted")
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestContainersMaxDefaultAndWarning(t *testing.T) {
	for _, tc := range []struct {
		name, toml string
		max        int
		warn       bool
	}{
		{"two per core", "memory_budget_gb = 16\n[containers]\nenabled = true\n", 4, false},
		{"bounded by the budget", "memory_budget_gb = 2\n[containers]\nenabled = true\n", 2, false},
		{"over the budget", "memory_budget_gb = 2\n[containers]\nenabled = true\nmax = 3\n", 3, true},
		{"over the budget but disabled", "memory_budget_gb = 2\n[containers]\nmax = 3\n", 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parse(t, tc.toml)
			if err != nil {
				t.Fatal(err)
			}
			if c.Containers.Max != tc.max {
				t.Errorf("max %d, want %d", c.Containers.Max, tc.max)
			}
			warned := slices.ContainsFunc(c.Warnings, func(w string) bool { return strings.Contains(w, "containers.max") })
			if warned != tc.warn {
				t.Errorf("warned %v, want %v: %q", warned, tc.warn, c.Warnings)
			}
		})
	}
}

func TestContainerGrants(t *testing.T) {
	dir := t.TempDir()
	digest := "sha256:" + strings.Repeat("ab", 32)
	writeBundle(t, filepath.Join(dir, "a"),
		"[module]\nname = \"a\"\nversion = \"1\"\n[sandbox]\ncontainers = [\"postgres:16\", \"quay.io/x/y@"+digest+
			"\", \"alpine\"]\n[[services]]\nname = \"s\"\nexec = [\"bin/svc\"]\n")
	load := func(grants string) ([]LoadedModule, error) {
		c, err := Parse("svcrun.toml", filepath.Join(dir, "svcrun.toml"),
			[]byte("[[modules]]\nbundle = \"a\"\ngrants = { containers = "+grants+" }\n"), testHost)
		if err != nil {
			return nil, err
		}
		return LoadModules(c)
	}
	for _, tc := range []struct{ name, grants, want string }{
		{"short names normalised", `["docker.io/library/postgres:16", "alpine:latest"]`, ""},
		{"pinned as asked", `["quay.io/x/y@` + digest + `"]`, ""},
		{"an unpinned request pinned", `["alpine@` + digest + `"]`, ""},
		{"another tag", `["postgres:17"]`, `svcrun.toml:2:1: modules[0].grants.containers: "docker.io/library/postgres:17" ` +
			`is not asked for by module "a", whose [sandbox].containers asks for docker.io/library/postgres:16, quay.io/x/y@` +
			digest + `, docker.io/library/alpine:latest: grant only what the manifest asks`},
		{"a pinned request without its digest", `["quay.io/x/y"]`, `svcrun.toml:2:1: modules[0].grants.containers: ` +
			`"quay.io/x/y:latest" is not asked for by module "a", whose [sandbox].containers asks for ` +
			`docker.io/library/postgres:16, quay.io/x/y@` + digest +
			`, docker.io/library/alpine:latest: the manifest pins quay.io/x/y to digest ` + digest +
			`: approve it with that digest`},
		{"another registry", `["ghcr.io/library/postgres:16"]`, `svcrun.toml:2:1: modules[0].grants.containers: ` +
			`"ghcr.io/library/postgres:16" is not asked for by module "a", whose [sandbox].containers asks for ` +
			`docker.io/library/postgres:16, quay.io/x/y@` + digest +
			`, docker.io/library/alpine:latest: grant only what the manifest asks`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mods, err := load(tc.grants)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
			if err == nil && len(mods[0].Config.Grants.Containers) == 0 {
				t.Error("no grants kept")
			}
		})
	}
}

func TestReservedModuleName(t *testing.T) {
	dir := t.TempDir()
	writeBundle(t, filepath.Join(dir, "x"),
		"[module]\nname = \"svcrun\"\nversion = \"1\"\n[[services]]\nname = \"s\"\nexec = [\"bin/svc\"]\n")
	c, err := Parse("svcrun.toml", filepath.Join(dir, "svcrun.toml"), []byte("[[modules]]\nbundle = \"x\"\n"), testHost)
	if err != nil {
		t.Fatal(err)
	}
	_, err = LoadModules(c)
	want := `svcrun.toml:2:1: modules[0].bundle: module name "svcrun" is reserved for svcrun's built-in container ` +
		`broker (service svcrun/containers): rename the module`
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}
