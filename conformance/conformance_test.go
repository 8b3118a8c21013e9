package conformance

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oarbank/svcrun/api"
	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/nodeconfig"
	"github.com/oarbank/svcrun/protocol"
	"github.com/oarbank/svcrun/svcenv"
)

// testNode is the node id of the tests' checks.
const testNode = "node-1"

// configFor is the Config of a check of bundle on a node of its own in a
// temporary directory, as svcrun check --bundle builds it.
func configFor(t *testing.T, bundle string, noContainers bool) Config {
	t.Helper()
	mod, err := manifest.Load(bundle)
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mc := nodeconfig.Module{Bundle: mod.Dir, Enabled: true, Settings: map[string]any{}}
	node := &nodeconfig.Config{
		File: "(test)", NodeID: testNode, Platform: string(svcenv.HostPlatform()),
		DataDir: root, Socket: filepath.Join(root, "svcrun.sock"),
		Sandbox: nodeconfig.SandboxBestEffort, Modules: []nodeconfig.Module{mc},
	}
	return Config{Node: node, Module: nodeconfig.LoadedModule{Config: mc, Manifest: mod}, NoContainers: noContainers}
}

// check runs the checks of bundle and fails the test if nothing of the
// module is left running afterwards.
func check(t *testing.T, bundle string, noContainers bool) *Report {
	t.Helper()
	return checkConfig(t, configFor(t, bundle, noContainers))
}

// checkConfig runs Check of cfg as check does.
func checkConfig(t *testing.T, cfg Config) *Report {
	t.Helper()
	rep, err := Check(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if left := leftovers(t, cfg.Node.ModuleDataDir(cfg.Module.Manifest.Name)); len(left) > 0 {
		t.Errorf("processes of the module outlived the check: %v", left)
	}
	return rep
}

// outcome lists the checks of rep that ended with status, as "target
// check" (module name left out).
func outcome(rep *Report, status Status) []string {
	out := []string{}
	for _, r := range rep.Results {
		if r.Status == status {
			_, name, _ := strings.Cut(r.Target, "/")
			out = append(out, name+" "+r.Check)
		}
	}
	return out
}

// TestEachFlawFailsItsCheckOnly: every module of testdata/flaw-* has one
// flaw, and fails exactly the check of that flaw; the checks that need
// the one that failed, or whose op broke the rule that failed, are
// skipped. The good modules pass every check. All of it holds in cgroup
// containers and in the fallback's process groups. Every check has its
// flaw, and every flaw its row.
func TestEachFlawFailsItsCheckOnly(t *testing.T) {
	dependents := []string{"svc start-twice", "svc stop-twice", "svc stop-empties", "svc fingerprint-running",
		"svc list-owned-labels", "svc destroy-unknown", "svc destroy-force"}
	rows := map[string]bool{}
	for _, tc := range []struct {
		dir     string
		job     bool // with the job of good-job (svcrun check --job)
		failed  []string
		skipped []string
	}{
		{dir: "good"},
		{dir: "good-job", job: true},
		{dir: "flaw-job-labels", job: true, failed: []string{"svc list-owned-labels"}},
		{dir: "flaw-job-destroy", job: true, failed: []string{"svc list-owned-labels"}},
		{dir: "good-probe"},
		{dir: "flaw-fingerprint", failed: []string{"svc fingerprint"}},
		{dir: "flaw-lifecycle", failed: []string{"svc lifecycle"}, skipped: dependents},
		// Its second daemon stays in the start's process group, where the
		// fallback sees it: process-group fails too.
		{dir: "flaw-start-twice", failed: []string{"svc start-twice", "svc process-group"}},
		{dir: "flaw-stop-twice", failed: []string{"svc stop-twice"}},
		// Its daemon's child stays in the start's process group, where the
		// fallback sees what a stop leaves: process-group fails too.
		{dir: "flaw-stop-empties", failed: []string{"svc stop-empties", "svc process-group"}},
		{dir: "flaw-fingerprint-running", failed: []string{"svc fingerprint-running"}},
		{dir: "flaw-list-owned-labels", failed: []string{"svc list-owned-labels"}},
		{dir: "flaw-destroy-unknown", failed: []string{"svc destroy-unknown"}},
		{dir: "flaw-destroy-force", failed: []string{"svc destroy-force"}},
		{dir: "flaw-output", failed: []string{"svc output"}, skipped: []string{"svc destroy-force"}},
		{dir: "flaw-detach", failed: []string{"svc output"}},
		{dir: "flaw-pgroup", failed: []string{"svc process-group"}},
		{dir: "flaw-timeouts", failed: []string{"svc timeouts"}, skipped: append([]string{"svc lifecycle"}, dependents...)},
		{dir: "flaw-probe-fingerprint", failed: []string{"sh fingerprint"}},
	} {
		rows[tc.dir] = true
		for _, mode := range []struct {
			name         string
			noContainers bool
		}{{"containers", false}, {"process_groups", true}} {
			t.Run(tc.dir+"/"+mode.name, func(t *testing.T) {
				cfg := configFor(t, filepath.Join("testdata", tc.dir), mode.noContainers)
				if tc.job {
					cfg.Job = shJob(t, "testdata/good-job/job.sh")
				}
				rep := checkConfig(t, cfg)
				failed, skipped := outcome(rep, Fail), outcome(rep, Skip)
				if !slices.Equal(failed, orEmpty(tc.failed)) || !slices.Equal(skipped, orEmpty(tc.skipped)) {
					t.Errorf("failed %q, skipped %q; want failed %q, skipped %q", failed, skipped, orEmpty(tc.failed),
						orEmpty(tc.skipped))
					for _, r := range rep.Results {
						t.Logf("%s %s: %s", r.Status, r.Name(), r.Summary)
					}
				}
				for _, r := range rep.Results {
					for _, o := range r.Ops {
						if r.Kind == "probe" && o.Op != "fingerprint" {
							t.Errorf("%s: a probe was asked %s", r.Name(), o.Op)
						}
					}
				}
				if rep.OK() != (len(tc.failed) == 0) {
					t.Errorf("OK() = %t with %d failed", rep.OK(), rep.Failed)
				}
			})
		}
	}

	// Every flaw-* module has a row, and every check a flaw.
	dirs, err := filepath.Glob("testdata/flaw-*")
	if err != nil {
		t.Fatal(err)
	}
	flawed := map[string]bool{}
	for _, d := range dirs {
		name := strings.TrimPrefix(filepath.Base(d), "flaw-")
		if name == "pgroup" { // named by issue 28
			name = "process-group"
		}
		flawed[name] = true
		if !rows[filepath.Base(d)] {
			t.Errorf("%s has no row", d)
		}
	}
	for _, name := range Names(false) {
		if !flawed[name] {
			t.Errorf("check %s has no testdata/flaw-%s", name, name)
		}
	}
	if !flawed["probe-fingerprint"] {
		t.Error("the probes' checks have no testdata/flaw-probe-fingerprint")
	}
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// TestDemoPasses: the demo module passes every check, in its cgroup
// containers and in the process groups of the fallback.
func TestDemoPasses(t *testing.T) {
	for _, mode := range []struct {
		name         string
		noContainers bool
	}{{"containers", false}, {"process_groups", true}} {
		t.Run(mode.name, func(t *testing.T) {
			rep := check(t, "../examples/modules/demo", mode.noContainers)
			want := len(Names(false)) + len(Names(true)) // kv and posix-sh
			if !rep.OK() || rep.Passed != want {
				t.Errorf("passed %d of %d (want %d): failed %q, skipped %q", rep.Passed, len(rep.Results), want,
					outcome(rep, Fail), outcome(rep, Skip))
				for _, r := range rep.Results {
					t.Logf("%s %s: %s", r.Status, r.Name(), r.Summary)
				}
			}
			if mode.noContainers && !strings.HasPrefix(rep.Containers, "process-group") {
				t.Errorf("containers %q with NoContainers", rep.Containers)
			}
		})
	}
}

// TestChecksCountInContainers: as root on a cgroup v2 host the services'
// ops run in cgroup containers, which the checks count processes in.
func TestChecksCountInContainers(t *testing.T) {
	rep := check(t, "testdata/good", false)
	if rep.Containers != "cgroup" {
		if os.Getenv("REQUIRE_KERNEL_FEATURES") == "1" {
			t.Fatalf("REQUIRE_KERNEL_FEATURES=1: the checks ran in %s", rep.Containers)
		}
		t.Skipf("no cgroup containers here: %s", rep.Containers)
	}
}

// TestUnknownName: a name that is no service or probe of the module is
// refused before anything runs.
func TestUnknownName(t *testing.T) {
	cfg := configFor(t, "testdata/good", true)
	cfg.Names = []string{"nope"}
	if _, err := Check(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("Check with an unknown name: %v", err)
	}
}

// shJob runs the sh script as a job with the services file of its grant:
// a stand-in for svcrun's own writer, which cmd/svcrun tests with svcrun
// check --job.
func shJob(t *testing.T, script string) JobRunner {
	return func(ctx context.Context, g api.Grant) JobRun {
		sf := api.ServicesFile{NodeID: g.NodeID, Lease: g.Lease, Attempt: g.Attempt, Probes: g.Uses.Probes}
		for _, s := range g.Uses.Services {
			sf.Services = append(sf.Services, api.FileService{UsedService: s, Labels: map[string]string{
				protocol.LabelAttemptID: g.Attempt, protocol.LabelNode: g.NodeID, protocol.LabelService: s.Name}})
		}
		b, err := json.Marshal(sf)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), "services.json")
		if err := os.WriteFile(file, b, 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(ctx, "sh", script)
		cmd.Env = append(os.Environ(), "OARBANK_SERVICES_FILE="+file, "OARBANK_ATTEMPT_ID="+g.Attempt,
			"OARBANK_NODE_ID="+g.NodeID)
		out, err := cmd.CombinedOutput()
		if cmd.ProcessState == nil {
			t.Fatalf("sh %s: %v", script, err)
		}
		j := JobRun{Command: script, Attempt: g.Attempt, Stdout: string(out), ExitCode: cmd.ProcessState.ExitCode()}
		if err != nil {
			j.StderrTail = string(out)
		}
		return j
	}
}
