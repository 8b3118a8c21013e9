package executor

import (
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/oarbank/svcrun/cgroup"
	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/nodeconfig"
	"github.com/oarbank/svcrun/protocol"
	"github.com/oarbank/svcrun/svcenv"
)

const testManifest = `[module]
name = "test"
version = "1.0"

[[services]]
name = "envsvc"
exec = ["bin/svc.sh", "env"]

[[services]]
name = "daemon"
exec = ["bin/svc.sh", "leavedaemon"]

[[services]]
name = "pidfile"
exec = ["bin/svc.sh", "pidfile"]

[[services]]
name = "slowstatus"
exec = ["bin/svc.sh", "slowstatus"]

[[services]]
name = "spread"
exec = ["bin/svc.sh", "spread"]

[[services]]
name = "where"
exec = ["bin/svc.sh", "cgroup"]

[[services]]
name = "count"
exec = ["bin/svc.sh", "concurrency"]

[[services]]
name = "hang"
exec = ["bin/svc.sh", "hang"]

[[services]]
name = "nginx"
exec = ["bin/svc.sh", "nginx"]

[[services]]
name = "handoff"
exec = ["bin/svc.sh", "handoff"]

[[services]]
name = "slowstart"
exec = ["bin/svc.sh", "slowstart"]

[[services]]
name = "elsewhere"
exec = ["bin/svc.sh", "ok"]
platforms = ["windows"]

[[probes]]
name = "okprobe"
exec = ["bin/svc.sh", "ok"]
`

const testNode = `node_id = "n1"
data_dir = "state"
memory_budget_gb = 1
max_concurrent_ops = 2

[limits]
pids = 100

[[modules]]
bundle = "bundle"
settings = { slots = 3 }
tools = { sh = "/bin/sh" }
`

type adapterFixture struct {
	x       *Executor
	done    chan engine.OpDone
	emptied chan emptiedAt
	// populated are the services of the ContainerPopulated events.
	populated chan string
	// memberExited are the MemberExited events and when they were posted.
	memberExited chan emptiedAt
	node         *nodeconfig.Config
	data         string // the module data dir
}

// emptiedAt is a ContainerEmptied (or MemberExited, with killed) and when
// it was posted.
type emptiedAt struct {
	service string
	at      time.Time
	killed  bool
}

func newAdapter(t *testing.T) *adapterFixture { return newAdapterWith(t, nil) }

// newAdapterWith builds the executor with containers (nil: none).
func newAdapterWith(t testing.TB, containers *cgroup.Manager) *adapterFixture {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return newAdapterIn(t, root, containers, nil)
}

// newAdapterIn builds the executor of the node in root (a second one on the
// same root is the next svcrun), logging to log (nil: nowhere).
func newAdapterIn(
	t testing.TB, root string, containers *cgroup.Manager, log *slog.Logger, opts ...func(*Config)) *adapterFixture {
	t.Helper()
	copyExecutable(t, "testdata/svc.sh", filepath.Join(root, "bundle", "bin", "svc.sh"))
	if err := os.WriteFile(filepath.Join(root, "bundle", manifest.FileName), []byte(testManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "svcrun.toml")
	node, err := nodeconfig.Parse(
		file, file, []byte(testNode), nodeconfig.Host{Hostname: "h", MemoryBytes: 8 << 30, Cores: 2, Platform: "linux"})
	if err != nil {
		t.Fatal(err)
	}
	mods, err := nodeconfig.LoadModules(node)
	if err != nil {
		t.Fatal(err)
	}
	a := &adapterFixture{
		done: make(chan engine.OpDone, 100), emptied: make(chan emptiedAt, 100), populated: make(chan string, 100),
		memberExited: make(chan emptiedAt, 100), node: node, data: node.ModuleDataDir("test")}
	cfg := Config{Node: node, Modules: mods, WaitDelay: 100 * time.Millisecond, Containers: containers, Logger: log}
	for _, o := range opts {
		o(&cfg)
	}
	a.x, err = New(cfg, func(ev engine.Event) {
		switch ev := ev.(type) {
		case *engine.OpDone:
			a.done <- *ev
		case engine.ContainerEmptied:
			a.emptied <- emptiedAt{service: ev.Service.String(), at: time.Now()}
		case engine.ContainerPopulated:
			a.populated <- ev.Service.String()
		case engine.MemberExited:
			a.memberExited <- emptiedAt{ev.Service.String(), time.Now(), ev.Killed}
		default:
			t.Errorf("unexpected event %T", ev)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// What ops left in process groups (the daemons of starts that no
		// stop followed) ends with the test, as a container's contents do.
		a.x.gmu.Lock()
		for tg := range a.x.groups {
			a.x.pruneLocked(tg)
			for g := range a.x.groups[tg] {
				syscall.Kill(-g, syscall.SIGKILL)
			}
		}
		a.x.gmu.Unlock()
		a.x.Close()
	})
	return a
}

// run runs one op and waits for its OpDone.
func (a *adapterFixture) run(t testing.TB, id engine.OpID, name string, probe bool, op protocol.Op) engine.Outcome {
	t.Helper()
	target := engine.Target{Module: "test", Name: name, Probe: probe}
	a.x.Run(engine.RunOp{ID: id, Target: target, Op: op, Timeout: 30 * time.Second})
	d := <-a.done
	if d.ID != id {
		t.Fatalf("OpDone for op %d, want %d", d.ID, id)
	}
	return d.Outcome
}

func TestExecutorRunsOpsInTheirEnvironment(t *testing.T) {
	a := newAdapter(t)
	if o := a.run(t, 1, "envsvc", false, protocol.OpFingerprint); o.Failure != engine.FailNone {
		t.Fatalf("outcome %+v", o)
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	want, err := svcenv.Environ(svcenv.Input{
		Platform: svcenv.Linux, NodeID: "n1", Module: "test", Service: "envsvc",
		ModuleData: a.data, User: u.Username, ToolDirs: []string{"/bin"},
	})
	if err != nil {
		t.Fatal(err)
	}
	environ, err := os.ReadFile(filepath.Join(a.data, "environ"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, strings.Split(strings.TrimSuffix(string(environ), "\n"), "\n")); diff != "" {
		t.Errorf("environment (-want +got):\n%s", diff)
	}
	// The files were written before the first op.
	for file, content := range map[string]string{
		"settings.json": "{\n  \"slots\": 3\n}\n",
		"tools.json":    "{\n  \"sh\": \"/bin/sh\"\n}\n",
		"limits.json":   "{\n  \"pids\": 100\n}\n",
	} {
		got, err := os.ReadFile(filepath.Join(a.data, file))
		if err != nil || string(got) != content {
			t.Errorf("%s = %q (%v), want %q", file, got, err, content)
		}
	}
}

func TestExecutorRefusals(t *testing.T) {
	a := newAdapter(t)
	o := a.run(t, 1, "okprobe", true, protocol.OpFingerprint)
	if o.Failure != engine.FailNone || o.Result.Fingerprint == nil {
		t.Errorf("probe fingerprint: %+v", o)
	}
	for _, tc := range []struct {
		name  string
		probe bool
		op    protocol.Op
		msg   string
	}{
		{"okprobe", true, protocol.OpStart, "start: probe test/okprobe implements only fingerprint"},
		{"nope", false, protocol.OpStatus, "status: no service test/nope in the loaded modules"},
		{"okprobe", false, protocol.OpStatus, "status: no service test/okprobe in the loaded modules"},
		{"elsewhere", false, protocol.OpStatus, "status: no service test/elsewhere in the loaded modules"},
	} {
		if o := a.run(t, 2, tc.name, tc.probe, tc.op); o.Failure != engine.FailSpawn || o.Message != tc.msg {
			t.Errorf("%s %s: %+v, want %q", tc.name, tc.op, o, tc.msg)
		}
	}
}

func TestExecutorCapsConcurrentOps(t *testing.T) {
	a := newAdapter(t) // max_concurrent_ops = 2
	const n = 6
	t0 := time.Now()
	for i := range n {
		target := engine.Target{Module: "test", Name: "count"}
		a.x.Run(engine.RunOp{ID: engine.OpID(i + 1), Target: target, Op: protocol.OpFingerprint, Timeout: 30 * time.Second})
	}
	for range n {
		if d := <-a.done; d.Outcome.Failure != engine.FailNone {
			t.Errorf("op %d: %+v", d.ID, d.Outcome)
		}
	}
	// Each op runs 0.2 s: at most 2 at once take at least 3 rounds.
	if el := time.Since(t0); el < 3*200*time.Millisecond {
		t.Errorf("%d ops took %v: more than 2 ran at once", n, el)
	}
	counts, err := os.ReadFile(filepath.Join(a.data, "counts"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range strings.Fields(string(counts)) {
		if k, _ := strconv.Atoi(c); k > 2 || k < 1 {
			t.Errorf("an op saw %d ops running at once; the cap is 2 (all counts: %q)", k, counts)
		}
	}
}

func TestExecutorKillFreezeThaw(t *testing.T) {
	a := newAdapter(t)
	if o := a.run(t, 1, "daemon", false, protocol.OpStart); o.Failure != engine.FailNone {
		t.Fatalf("start: %+v", o)
	}
	data, err := os.ReadFile(filepath.Join(a.data, "daemon.pid"))
	if err != nil {
		t.Fatal(err)
	}
	daemon, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	killGroupAtEnd(t, daemon)
	groups := a.x.Groups("test/daemon")
	if len(groups) != 1 {
		t.Fatalf("groups %v: the start op's group (holding the daemon) is not tracked", groups)
	}
	if pgid := syscallGetpgid(t, daemon); pgid != groups[0] {
		t.Fatalf("daemon %d is in group %d, tracked %v", daemon, pgid, groups)
	}
	state := func() byte { _, s, _ := procStat(daemon); return s }

	a.x.Freeze(engine.Target{Module: "test", Name: "daemon"})
	eventually(t, 10*time.Second, "the daemon was not stopped", func() bool { return state() == 'T' })
	a.x.Thaw(engine.Target{Module: "test", Name: "daemon"})
	eventually(t, 10*time.Second, "the daemon was not continued", func() bool { return state() != 'T' })
	a.x.Kill(engine.Target{Module: "test", Name: "daemon"})
	eventually(t, 10*time.Second, "the daemon survived Kill", func() bool { return !alive(daemon) })
	eventually(
		t, 10*time.Second, "the emptied group is still tracked", func() bool { return len(a.x.Groups("test/daemon")) == 0 })

	// Ops that left nothing behind leave no group.
	if o := a.run(t, 2, "envsvc", false, protocol.OpFingerprint); o.Failure != engine.FailNone {
		t.Fatal(o)
	}
	if g := a.x.Groups("test/envsvc"); len(g) != 0 {
		t.Errorf("groups of a finished op: %v", g)
	}
}

func TestExecutorCloseCancelsOps(t *testing.T) {
	a := newAdapter(t)
	a.x.Run(
		engine.RunOp{ID: 7, Target: engine.Target{Module: "test", Name: "hang"}, Op: protocol.OpStart, Timeout: time.Hour})
	a.x.Close()
	d := <-a.done
	if d.ID != 7 || d.Outcome.Failure != engine.FailTimeout || !strings.Contains(d.Outcome.Message, "cancel") {
		t.Errorf("OpDone %+v", d)
	}
}

func TestExecutorUpdateRewritesFiles(t *testing.T) {
	a := newAdapter(t)
	if o := a.run(t, 1, "okprobe", true, protocol.OpFingerprint); o.Failure != engine.FailNone {
		t.Fatal(o)
	}
	node := *a.node
	node.Modules = slices.Clone(node.Modules)
	node.Modules[0].Settings = map[string]any{"slots": 9}
	mods, err := nodeconfig.LoadModules(&node)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.x.Update(Config{Node: &node, Modules: mods}); err != nil {
		t.Fatal(err)
	}
	if o := a.run(t, 2, "okprobe", true, protocol.OpFingerprint); o.Failure != engine.FailNone {
		t.Fatal(o)
	}
	if got, _ := os.ReadFile(filepath.Join(a.data, "settings.json")); string(got) != "{\n  \"slots\": 9\n}\n" {
		t.Errorf("settings.json after Update: %q", got)
	}
}
