// Package modules tests the example modules: each runs through its whole
// lifecycle with `svcrun op`, once under sandbox = "require" with run_as
// and once as root under best_effort, with the daemon its Debian package
// installs; and each example's job (job.sh, or memcached's job.py) runs
// with `svcrun run` against a real `svcrun serve`, finding its daemon in
// OARBANK_SERVICES_FILE alone.
package modules

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oarbank/svcrun/internal/testhost"
)

// svcrunBin is the svcrun binary TestMain builds.
var svcrunBin string

// runtimeDir is TestMain's directory, the test process's own.
var runtimeDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "examples-svcrun-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	svcrunBin = filepath.Join(dir, "svcrun")
	// svcrun serve announces its socket for the commands given no
	// --socket: as root in /run/svcrun/socket, where a user's svcrun serve
	// announced its own. The tests' announcements stay in their directory.
	if err := os.Setenv("SVCRUN_RUNTIME_DIR", dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	runtimeDir = dir
	if out, err := exec.Command("go", "build", "-o", svcrunBin, "../../cmd/svcrun").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build svcrun: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// need skips the test when a daemon's package is missing, or fails it
// when REQUIRE_KERNEL_FEATURES=1 (CI installs every package).
func need(t *testing.T, pkg string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if matches, _ := filepath.Glob(p); len(matches) == 0 {
			if os.Getenv("REQUIRE_KERNEL_FEATURES") == "1" {
				t.Fatalf("REQUIRE_KERNEL_FEATURES=1: %s is missing (apt-get install %s)", p, pkg)
			}
			t.Skipf("%s is missing (apt-get install %s)", p, pkg)
		}
	}
}

// mode is how a node runs the module's ops.
type mode struct {
	name    string
	sandbox string
	runAs   string
}

// modes are the two the examples must work in. require needs root (run_as,
// the tests' own unprivileged user: testhost.RunAs); without root only
// best_effort runs, as this user.
func modes(t *testing.T) []mode {
	if os.Geteuid() != 0 {
		if os.Getenv("REQUIRE_KERNEL_FEATURES") == "1" {
			t.Fatal("REQUIRE_KERNEL_FEATURES=1: the examples are tested as root")
		}
		return []mode{{"best_effort", "best_effort", ""}}
	}
	return []mode{{"require+run_as", "require", testhost.RunAs(t).Name}, {"root+best_effort", "best_effort", ""}}
}

// node is a node configuration with one module, whose ops the test runs.
type node struct {
	t   *testing.T
	cfg string
	// id is the node id, the test's own (testhost.NodeID): svcrun serve
	// names and locks its base cgroup after it, and the labels of what a
	// job makes carry it.
	id     string
	module string
	// data is the module data dir.
	data string
}

// newNode writes a node configuration for bundle in a fresh directory that
// run_as can traverse; with run_as, the bundle is a copy it can reach
// (testhost.Reachable).
func newNode(t *testing.T, bundle, module string, m mode, settings string) *node {
	t.Helper()
	root := testhost.SearchableDir(t)
	abs, err := filepath.Abs(bundle)
	if err != nil {
		t.Fatal(err)
	}
	if m.runAs != "" {
		abs = testhost.Reachable(t, abs)
	}
	// The budget covers the examples' reserves and fits a small host.
	id := testhost.NodeID("examples")
	text := fmt.Sprintf("node_id = %q\ndata_dir = \"data\"\nmemory_budget_gb = 1\nsandbox = %q\n", id, m.sandbox)
	if m.runAs != "" {
		text += fmt.Sprintf("run_as = %q\n", m.runAs)
	}
	text += fmt.Sprintf("\n[[modules]]\nbundle = %q\nsettings = { %s }\n", abs, settings)
	cfg := filepath.Join(root, "svcrun.toml")
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if m.sandbox == "require" {
		// svcrun sandbox exits 1 when require would refuse the module: a
		// kernel without a layer, not a fault of the example.
		if out, err := exec.Command(svcrunBin, "sandbox", "--config", cfg).CombinedOutput(); err != nil {
			if os.Getenv("REQUIRE_KERNEL_FEATURES") == "1" {
				t.Fatalf("REQUIRE_KERNEL_FEATURES=1: sandbox = \"require\" refuses the module here: %v\n%s", err, out)
			}
			t.Skipf("sandbox = \"require\" refuses the module on this host:\n%s", out)
		}
	}
	return &node{t: t, cfg: cfg, id: id, module: module, data: filepath.Join(root, "data", "modules", module)}
}

// report is what `svcrun op --json` prints.
type report struct {
	OK             bool            `json:"ok"`
	Result         json.RawMessage `json:"result"`
	Message        string          `json:"message"`
	Failure        string          `json:"failure"`
	Reasons        []string        `json:"reasons"`
	StderrTail     string          `json:"stderr_tail"`
	Warnings       []string        `json:"warnings"`
	SandboxMissing []string        `json:"sandbox_missing"`
}

// result is the union of the results' fields.
type result struct {
	Healthy   bool             `json:"healthy"`
	Running   *bool            `json:"running"`
	Ready     bool             `json:"ready"`
	Changed   bool             `json:"changed"`
	Escalated bool             `json:"escalated"`
	Message   string           `json:"message"`
	Attrs     map[string]any   `json:"attrs"`
	Pools     map[string]int64 `json:"pools"`
	Reserve   *struct {
		MemGB float64 `json:"mem_gb"`
	} `json:"reserve"`
	Objects []struct {
		ID     string            `json:"id"`
		Labels map[string]string `json:"labels"`
		Busy   bool              `json:"busy"`
	} `json:"objects"`
}

// try runs one op of the service (or probe) and returns its report.
func (n *node) try(svc string, op ...string) (report, result) {
	n.t.Helper()
	// The tests check what the real daemons do, not how fast: a JVM or a
	// postgres on a loaded machine can take longer than the protocol's
	// 5 s for a fingerprint or a status, which svcrun check and the
	// benchmarks measure instead.
	args := append([]string{"op", "--json", "--timeout", "5m", "--config", n.cfg, n.module + "/" + svc}, op...)
	cmd := exec.Command(svcrunBin, args...)
	out, err := cmd.Output()
	var rep report
	if jerr := json.Unmarshal(out, &rep); jerr != nil {
		n.t.Fatalf("%s: %v, %v: %s", strings.Join(op, " "), err, jerr, out)
	}
	var res result
	if rep.OK {
		if err := json.Unmarshal(rep.Result, &res); err != nil {
			n.t.Fatalf("%s: result %s: %v", strings.Join(op, " "), rep.Result, err)
		}
	}
	if len(rep.Warnings) > 0 {
		n.t.Errorf("%s: warnings %v", strings.Join(op, " "), rep.Warnings)
	}
	return rep, res
}

// op runs one op that must succeed.
func (n *node) op(svc string, op ...string) result {
	n.t.Helper()
	rep, res := n.try(svc, op...)
	if !rep.OK {
		n.t.Fatalf("%s failed: %s %s %v\nstderr: %s",
			strings.Join(op, " "), rep.Failure, rep.Message, rep.Reasons, rep.StderrTail)
	}
	return res
}

// waitReady polls ready as svcrun does, about once a second; the bound is
// only a guard.
func (n *node) waitReady(svc string) {
	n.t.Helper()
	for i := 0; ; i++ {
		if n.op(svc, "ready").Ready {
			return
		}
		if i == 120 {
			n.t.Fatal("not ready after 120 polls")
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// snapshot lists the module data dir: every path with its size, mode and
// modification time, except the three files svcrun op rewrites each run.
func (n *node) snapshot() map[string]string {
	n.t.Helper()
	m := map[string]string{}
	filepath.WalkDir(n.data, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(n.data, p)
		switch rel {
		case ".", "settings.json", "tools.json", "limits.json":
			// svcrun op replaces the three files (a rename in the data
			// dir) at every run.
			return nil
		}
		if fi, err := d.Info(); err == nil {
			m[rel] = fmt.Sprintf("%d %v %d", fi.Size(), fi.Mode(), fi.ModTime().UnixNano())
		}
		return nil
	})
	return m
}

// fingerprintReadOnly runs fingerprint and fails if it changed anything
// under the module data dir.
func (n *node) fingerprintReadOnly(svc string) result {
	n.t.Helper()
	before := n.snapshot()
	res := n.op(svc, "fingerprint")
	after := n.snapshot()
	for p, v := range after {
		if before[p] != v {
			n.t.Errorf("fingerprint changed %s: %q -> %q", p, before[p], v)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			n.t.Errorf("fingerprint removed %s", p)
		}
	}
	return res
}

// processes lists the processes that run from the module data dir: their
// command line or working directory lies in it, or they have an op's
// environment.
func (n *node) processes() []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid := e.Name()
		if pid[0] < '0' || pid[0] > '9' || pid == fmt.Sprint(os.Getpid()) {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + pid + "/cmdline")
		cwd, _ := os.Readlink("/proc/" + pid + "/cwd")
		environ, _ := os.ReadFile("/proc/" + pid + "/environ")
		if strings.Contains(string(cmdline), n.data) || strings.HasPrefix(cwd, n.data) ||
			bytes.Contains(environ, []byte("OARBANK_MODULE_DATA="+n.data+"\x00")) {
			found = append(found, pid+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return found
}

// daemons returns the pids of procs whose parent is not in procs.
func daemons(procs []string) []string {
	pids := map[string]bool{}
	for _, p := range procs {
		pid, _, _ := strings.Cut(p, ":")
		pids[pid] = true
	}
	var roots []string
	for pid := range pids {
		stat, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) > 1 && !pids[fields[1]] {
			roots = append(roots, pid)
		}
	}
	slices.Sort(roots)
	return roots
}

// lifecycle is what a test of a service module gives runService.
type lifecycle struct {
	svc string
	// object makes an owned object for attempt on the running service and
	// returns its id; nil when the service owns none.
	object func(t *testing.T, n *node, attempt string) string
	// check looks at a running service's fingerprint.
	check func(t *testing.T, n *node, fp result)
}

// runService takes a service through fingerprint, start (twice), ready,
// status, list_owned, destroy (twice), stop (twice), checking each answer,
// that fingerprint is read-only and agrees with status, that the second
// start starts nothing and that stop leaves no process behind.
func runService(t *testing.T, n *node, l lifecycle) {
	n.op(l.svc, "fingerprint") // svcrun creates the module data dir
	fp := n.fingerprintReadOnly(l.svc)
	if !fp.Healthy || fp.Running == nil || *fp.Running {
		t.Fatalf("fingerprint before start: %+v, want healthy and not running", fp)
	}
	if st := n.op(l.svc, "status"); isTrue(st.Running) {
		t.Errorf("status before start: running")
	}
	if r := n.op(l.svc, "start"); !r.Changed {
		t.Errorf("start: changed false")
	}
	// A failed test leaves no daemon behind: stop, and kill what stop
	// could not.
	t.Cleanup(func() {
		if len(n.processes()) == 0 {
			return
		}
		n.try(l.svc, "stop")
		for _, p := range n.processes() {
			pid, _, _ := strings.Cut(p, ":")
			if id, err := strconv.Atoi(pid); err == nil {
				syscall.Kill(id, syscall.SIGKILL)
			}
		}
	})
	n.waitReady(l.svc)
	procs := n.processes()
	if len(procs) == 0 {
		t.Fatal("no process runs from the module data dir after start")
	}
	if r := n.op(l.svc, "start"); r.Changed {
		t.Errorf("second start: changed true")
	}
	// The daemons are the processes whose parent is none of them: a
	// second daemon would be one more, while a daemon's children (a
	// postgres backend for a connection) come and go.
	if before, after := daemons(procs), daemons(n.processes()); !slices.Equal(before, after) {
		t.Errorf("the second start changed the daemons from %v to %v:\n%s", before, after, strings.Join(procs, "\n"))
	}
	if st := n.op(l.svc, "status"); !isTrue(st.Running) || !st.Ready {
		t.Errorf("status after ready: %+v", st)
	}
	fp = n.op(l.svc, "fingerprint")
	if !fp.Healthy || fp.Running == nil || !*fp.Running {
		t.Errorf("fingerprint while running: %+v", fp)
	}
	if l.check != nil {
		l.check(t, n, fp)
	}
	if l.object != nil {
		id := l.object(t, n, "a1")
		owned := n.op(l.svc, "list_owned")
		var found bool
		for _, o := range owned.Objects {
			if o.ID != id {
				continue
			}
			found = true
			want := map[string]string{"oarbank.attempt_id": "a1", "oarbank.node": n.id,
				"oarbank.service": n.module + "/" + l.svc}
			for k, v := range want {
				if o.Labels[k] != v {
					t.Errorf("object %s: label %s = %q, want %q", id, k, o.Labels[k], v)
				}
			}
		}
		if !found {
			t.Fatalf("list_owned %+v lacks %s", owned.Objects, id)
		}
		if r := n.op(l.svc, "destroy", id); !r.Changed {
			t.Errorf("destroy %s: changed false", id)
		}
		if r := n.op(l.svc, "destroy", id); r.Changed {
			t.Errorf("second destroy %s: changed true", id)
		}
		for _, o := range n.op(l.svc, "list_owned").Objects {
			if o.ID == id {
				t.Errorf("%s still listed after destroy", id)
			}
		}
	}
	if r := n.op(l.svc, "destroy", "never-made", "--force"); r.Changed {
		t.Errorf("destroy of an unknown id: changed true")
	}
	if r := n.op(l.svc, "stop"); !r.Changed || r.Escalated {
		t.Errorf("stop: %+v, want changed and not escalated", r)
	}
	if ps := n.processes(); len(ps) > 0 {
		t.Errorf("processes left after stop:\n%s", strings.Join(ps, "\n"))
	}
	if r := n.op(l.svc, "stop"); r.Changed {
		t.Errorf("second stop: changed true")
	}
	if st := n.op(l.svc, "status"); isTrue(st.Running) {
		t.Errorf("status after stop: running")
	}
	fp = n.fingerprintReadOnly(l.svc)
	if fp.Running == nil || *fp.Running {
		t.Errorf("fingerprint after stop: running")
	}
}

// run runs cmd as the module's account would: as run_as when there is one.
func (n *node) run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func isTrue(b *bool) bool { return b != nil && *b }
