package sandbox

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oarbank/svcrun/cgroup"
	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/executor"
	"github.com/oarbank/svcrun/internal/testhost"
	"github.com/oarbank/svcrun/nodeconfig"
	"github.com/oarbank/svcrun/protocol"
)

// The escape tests run the real executor with the sandbox's hooks, as the
// agent wires them, on ops that try to get out. They need root (run_as,
// network namespaces, cgroups) and a kernel with Landlock; without them
// they skip, unless REQUIRE_KERNEL_FEATURES=1.

func needRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		skipUnless(t, "the escape tests run as root (run_as, network namespaces, cgroups)")
	}
}

func needLandlock(t testing.TB, abi int) {
	t.Helper()
	if f := hostFacts(); f.landlock < abi {
		skipUnless(t, fmt.Sprintf("Landlock ABI %d needed, this kernel has %d (%s)", abi, f.landlock, f.landlockReason))
	}
}

func needNetNS(t testing.TB) {
	t.Helper()
	if f := hostFacts(); f.netnsReason != "" {
		skipUnless(t, "network namespaces: "+f.netnsReason)
	}
}

// credentials is "uid:gid:groups" of the user name, as the escape
// binary's "value uid" prints them.
func credentials(t *testing.T, name string) string {
	t.Helper()
	a, err := lookupAccount(name)
	if err != nil {
		t.Fatal(err)
	}
	groups := make([]string, len(a.Groups))
	for i, g := range a.Groups {
		groups[i] = strconv.Itoa(g)
	}
	return fmt.Sprintf("%d:%d:%s", a.UID, a.GID, strings.Join(groups, ","))
}

// newContainers is a cgroup Manager on a base of its own, removed at the
// end of the test; without a writable cgroup v2 the test is skipped.
func newContainers(t testing.TB) *cgroup.Manager {
	t.Helper()
	m := cgroup.New(cgroup.Options{Name: fmt.Sprintf("svcrun-sbtest-%d-%d", os.Getpid(), time.Now().UnixNano())})
	if err := m.Err(); err != nil {
		m.Close()
		skipUnless(t, fmt.Sprintf("cgroup v2 not usable here: %v", err))
	}
	t.Cleanup(func() {
		for _, s := range m.Services() {
			m.Kill(s, 5*time.Second)
			m.Remove(s)
		}
		m.Close()
		os.Remove(m.Base())
	})
	return m
}

// TestConfinedThreadLeavesSvcrunFree: the confinement lands in the op,
// never in svcrun. While a module's confining thread exists, every other
// thread of the process reads a file the op cannot, and only the
// confining threads carry no_new_privs.
func TestConfinedThreadLeavesSvcrunFree(t *testing.T) {
	needRoot(t)
	needLandlock(t, 1)
	n := newNode(t, nodeOptions{sandbox: "best_effort", modules: []testModule{{"confined", "host"}}})
	x, done := n.executor(t, nil)

	got := checks(t, x, done, "confined", "read", n.secret)
	if got["read "+n.secret] == "ok" {
		t.Fatalf("the op read %s", n.secret)
	}
	// Many goroutines, each on a thread of its own, read the secret
	// while ops run on the confining thread.
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	stop := make(chan struct{})
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := os.ReadFile(n.secret); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := 0; i < 20; i++ {
		if got := checks(t, x, done, "confined", "read", n.secret); got["read "+n.secret] == "ok" {
			t.Fatalf("op %d read %s", i, n.secret)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("svcrun's thread could not read the secret: %v", err)
	}
	if _, err := os.ReadFile(n.secret); err != nil {
		t.Errorf("svcrun cannot read the secret after the ops: %v", err)
	}
	if err := os.WriteFile(filepath.Join(n.root, "svcrun-writes"), []byte("x"), 0o600); err != nil {
		t.Errorf("svcrun cannot write: %v", err)
	}

	// no_new_privs is per thread: only the confining ones have it.
	tasks, _ := os.ReadDir("/proc/self/task")
	var nnp, all int
	for _, task := range tasks {
		data, err := os.ReadFile("/proc/self/task/" + task.Name() + "/status")
		if err != nil {
			continue
		}
		all++
		if strings.Contains(string(data), "NoNewPrivs:\t1") {
			nnp++
			if task.Name() == strconv.Itoa(os.Getpid()) {
				t.Errorf("the main thread has no_new_privs")
			}
		}
	}
	if nnp < 1 || nnp >= all {
		t.Errorf("%d of %d threads have no_new_privs; want the confining threads only", nnp, all)
	}
}

// result is what a check must give: "ok", or anything but "ok" (denied).
const (
	allowed = "ok"
	denied  = "denied"
)

type escapeCase struct {
	check, arg string
	want       string // allowed, denied, or an exact value
	reason     string
}

// TestEscapes runs, in both modes, the ops of a module with network
// "none" and of a module with the host's network, as run_as (require) and
// as root (best_effort: Landlock alone must stop the filesystem escapes),
// in cgroup containers.
func TestEscapes(t *testing.T) {
	needRoot(t)
	needLandlock(t, 6)
	needNetNS(t)
	// run_as is the tests' own unprivileged user (testhost.RunAs), not
	// the image's nobody.
	for _, v := range []struct {
		name, sandbox, runAs string
	}{
		{"require-run_as", "require", testhost.RunAs(t).Name},
		{"best_effort-root", "best_effort", ""},
	} {
		t.Run(v.name, func(t *testing.T) { testEscapes(t, v.sandbox, v.runAs) })
	}
}

func testEscapes(t *testing.T, mode, runAs string) {
	n := newNode(t, nodeOptions{sandbox: mode, runAs: runAs,
		modules: []testModule{{"isolated", "none"}, {"online", "host"}}})
	cg := newContainers(t)
	x, done := n.executor(t, cg)
	asRoot := runAs == ""

	// What the ops must not reach, made reachable for svcrun. The paths
	// outside the test's directory (in /root, /etc and /tmp) are named for
	// this test, so that another test process's neither collides with
	// them nor removes them, and a path left by anything else does not
	// read as the op's doing.
	own := fmt.Sprintf("svcrun-sandbox-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	rootSecret := "/root/." + own + "-secret"
	writeFile(t, rootSecret, "root secret\n", 0o644)
	t.Cleanup(func() { os.Remove(rootSecret) })
	planted := []string{"/etc/" + own, "/tmp/" + own, "/tmp/" + own + "-dir", "/root/" + own}
	t.Cleanup(func() {
		for _, p := range planted {
			os.Remove(p) // there only if an op escaped, which the test reports
		}
	})
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	go acceptAll(tcp)
	port := strconv.Itoa(tcp.Addr().(*net.TCPAddr).Port)
	mkdir(t, filepath.Dir(n.cfg.Socket), 0o755)
	svcrunSock := listenUnix(t, n.cfg.Socket, 0o600) // as the API does
	openSock := listenUnix(t, filepath.Join(n.sockDir, "open.sock"), 0o777)
	closedSock := listenUnix(t, filepath.Join(n.sockDir, "closed.sock"), 0o755)
	abstract := fmt.Sprintf("svcrun-sandbox-test-%d", os.Getpid())
	listenUnix(t, "@"+abstract, 0)
	os.Setenv("SVCRUN_SANDBOX_TEST_SECRET", "hunter2")
	defer os.Unsetenv("SVCRUN_SANDBOX_TEST_SECRET")
	dataOf := func(m string) string { return n.cfg.ModuleDataDir(m) }
	bundleOf := func(m string) string { return filepath.Join(n.root, "bundles", m) }

	for _, m := range []string{"isolated", "online"} {
		t.Run(m, func(t *testing.T) {
			cgPath, err := cg.Path(m + "/esc")
			if err != nil {
				t.Fatal(err)
			}
			// Both data dirs exist before they are tried.
			mustRun(t, x, done, "isolated")
			mustRun(t, x, done, "online")
			copyFile(t, "/bin/true", filepath.Join(dataOf(m), "true"), 0o755)
			otherData := dataOf(map[string]string{"isolated": "online", "online": "isolated"}[m])

			cases := []escapeCase{
				// Reads outside the grants.
				{"read", n.secret, denied, "a secret in a directory no rule grants"},
				{"read", rootSecret, denied, "a secret under /root"},
				{"read", filepath.Join(otherData, "settings.json"), denied, "another module's data"},
				{"read", "/proc/" + strconv.Itoa(os.Getpid()) + "/mem", denied, "svcrun's memory through /proc"},
				{"read", "/dev/kvm", denied, "/dev/kvm"},
				{"read", "/sys/kernel/mm/transparent_hugepage/enabled", denied, "/sys"},
				{"env", "SVCRUN_SANDBOX_TEST_SECRET", "unset", "a variable of svcrun's environment"},
				// Writes outside the data dir and write grants.
				{"write", filepath.Join(bundleOf(m), "bin", "planted"), denied, "a new file in its own bundle"},
				{"append", filepath.Join(bundleOf(m), "bin", "helper.sh"), denied, "its own executable"},
				{"append", n.tool, denied, "its granted tool"},
				{"write", filepath.Join(bundleOf(m), "module.toml"), denied, "its own manifest"},
				{"write", planted[0], denied, "/etc"},
				{"write", planted[1], denied, "/tmp"},
				{"mkdir", planted[2], denied, "/tmp"},
				{"write", planted[3], denied, "/root"},
				{"write", filepath.Join(n.rgrant, "f"), denied, "a read grant"},
				{"write", filepath.Join(otherData, "planted"), denied, "another module's data"},
				{"writepid", filepath.Join(cg.Base(), "cgroup.procs"), denied, "moving itself out of its cgroup"},
				{"writepid", filepath.Join(cg.Support().Mount, "cgroup.procs"), denied, "moving itself to the root cgroup"},
				{"exec", filepath.Join(dataOf(m), "true"), denied, "executing from its data dir"},
				// svcrun and its neighbours.
				{"abstract", abstract, denied, "an abstract Unix socket outside its domain"},
				// What it may do.
				{"value", "nnp", "1", "no_new_privs"},
				{"value", "cgroup", strings.TrimPrefix(cgPath, cg.Support().Mount), "cloned into its service's cgroup"},
				{"write", "$OARBANK_MODULE_DATA/state", allowed, "its data dir"},
				{"write", "$TMPDIR/x", allowed, "its TMPDIR"},
				{"write", "$HOME/x", allowed, "its HOME"},
				{"mkdir", "$XDG_RUNTIME_DIR/d", allowed, "its XDG_RUNTIME_DIR"},
				{"write", filepath.Join(n.wgrant, m), allowed, "a write grant"},
				{"read", filepath.Join(n.rgrant, "f"), allowed, "a read grant"},
				{"read", "/etc/passwd", allowed, "/etc"},
				{"read", "/usr/bin/env", allowed, "/usr"},
				{"read", "/proc/self/status", allowed, "/proc"},
				{"read", "/dev/urandom", allowed, "/dev/urandom"},
				{"read", "/dev/zero", allowed, "/dev/zero"},
				{"write", "/dev/null", allowed, "/dev/null"},
				{"read", filepath.Join(bundleOf(m), "module.toml"), allowed, "its bundle"},
				{"exec", filepath.Join(bundleOf(m), "bin", "helper.sh"), allowed, "its bundle's executables"},
				{"exec", n.tool, allowed, "its granted tool"},
				{"exec", "/bin/true", allowed, "system executables"},
			}
			// The hard limit needs CAP_SYS_RESOURCE for another user's
			// process; the soft one is inherited.
			core := "0/0"
			if !asRoot && !hasCapability(unix.CAP_SYS_RESOURCE) {
				core = "0/-1"
				t.Logf("no CAP_SYS_RESOURCE here: run_as ops keep svcrun's hard RLIMIT_CORE")
			}
			cases = append(cases, escapeCase{"value", "core", core, "RLIMIT_CORE 0"})
			environ := "/proc/" + strconv.Itoa(os.Getpid()) + "/environ"
			if asRoot {
				cases = append(cases,
					escapeCase{"value", "uid", "0:0:", "root: best_effort without run_as"})
			} else {
				cases = append(cases,
					escapeCase{"read", environ, denied, "svcrun's environment through /proc"},
					escapeCase{"kill", "ppid", denied, "signalling svcrun (root; the op is run_as)"},
					escapeCase{"value", "uid", credentials(t, runAs), "run_as"},
					escapeCase{"unix", svcrunSock, denied, "svcrun's API socket"},
					escapeCase{"unix", closedSock, denied, "a socket its user cannot write"},
				)
			}
			if hostFacts().landlock >= 9 {
				cases = append(cases, escapeCase{"unix", openSock, denied, "a world-writable socket not granted (Landlock ABI 9)"})
			}
			if m == "isolated" {
				cases = append(cases,
					escapeCase{"tcp", port, denied, "a loopback listener of the host (network none)"},
					escapeCase{"value", "lo", "down", "an empty network namespace"})
			} else {
				cases = append(cases, escapeCase{"tcp", port, allowed, "a loopback listener (network host)"})
			}
			var pairs []string
			for _, c := range cases {
				pairs = append(pairs, c.check, c.arg)
			}
			got := checks(t, x, done, m, pairs...)
			for _, c := range cases {
				g := got[c.check+" "+c.arg]
				ok := g == c.want
				if c.want == denied {
					ok = g != allowed && g != "" && g != "unknown check"
				}
				if !ok {
					t.Errorf("%s %s (%s): got %q, want %s", c.check, c.arg, c.reason, g, c.want)
				} else if testing.Verbose() {
					t.Logf("%-8s %-60s %-22s %s", c.check, c.arg, g, c.reason)
				}
			}
			if asRoot {
				g := checks(t, x, done, m, "read", environ, "kill", "ppid")
				t.Logf("known gaps of a missing run_as: a root op reads svcrun's %s: %q, signals svcrun: %q", environ,
					g["read "+environ], g["kill ppid"])
			}
			if hostFacts().landlock < 9 {
				g := checks(t, x, done, m, "unix", openSock)["unix "+openSock]
				t.Logf("known gap below Landlock ABI 9: a world-writable pathname socket outside the grants: %q", g)
			}
			for _, p := range planted {
				if _, err := os.Stat(p); err == nil {
					t.Errorf("the op made %s", p)
				}
			}

			// The shell service: the ordinary work of a service.
			if o := run(t, x, done, m, "shell"); o.Failure != engine.FailNone {
				t.Errorf("shell service: %+v", o)
			}
		})
	}
}

func mustRun(t *testing.T, x *executor.Executor, done <-chan engine.OpDone, m string) {
	t.Helper()
	if got := checks(t, x, done, m, "value", "nnp"); got["value nnp"] != "1" {
		t.Fatalf("no_new_privs: %q", got["value nnp"])
	}
}

// TestRequireRefuses: with a layer missing, require mode fails every op
// of the module with FailPrepare (the node's fault, never counted against
// the service) and a message naming the layer, and best_effort runs it.
func TestRequireRefuses(t *testing.T) {
	needRoot(t)
	needLandlock(t, 1)
	// As root without run_as, the run_as layer is missing.
	n := newNode(t, nodeOptions{sandbox: "require", modules: []testModule{{"rootops", "host"}}})
	x, done := n.executor(t, nil)
	o := run(t, x, done, "rootops", "esc", "value", "uid")
	if o.Failure != engine.FailPrepare || !strings.Contains(o.Message, "missing run_as:") ||
		!strings.Contains(o.Message, `sandbox = "require"`) {
		t.Errorf("require without run_as: %+v", o)
	}
	n = newNode(t, nodeOptions{sandbox: "best_effort", modules: []testModule{{"rootops", "host"}}})
	x, done = n.executor(t, nil)
	if got := checks(t, x, done, "rootops", "value", "uid", "read", n.secret); got["value uid"] != "0:0:" ||
		got["read "+n.secret] == "ok" {
		t.Errorf("best_effort as root: %v", got)
	}
	if r := Report(n.cfg, n.mods); len(r) == 0 || !strings.Contains(strings.Join(r, "\n"), "runs without run_as:") {
		t.Errorf("Report: %q", r)
	}
}

func acceptAll(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}

// listenUnix listens on the pathname (or, with a leading @, abstract)
// socket path with mode, for the test's duration.
func listenUnix(t *testing.T, path string, mode os.FileMode) string {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if !strings.HasPrefix(path, "@") {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
	go acceptAll(l)
	return path
}

// demoNode is examples/node.toml with a node id of the test's own and its
// data dir in a temporary directory, run_as the tests' user when root, in
// mode.
func demoNode(t *testing.T, mode string) *node {
	t.Helper()
	cfg, err := nodeconfig.Load("../examples/node.toml")
	if err != nil {
		t.Fatal(err)
	}
	root := testhost.SearchableDir(t)
	cfg.NodeID = testhost.NodeID("sbdemo")
	cfg.DataDir = filepath.Join(root, "state")
	cfg.Socket = filepath.Join(cfg.DataDir, "svcrun.sock")
	cfg.Sandbox = nodeconfig.SandboxMode(mode)
	if os.Geteuid() == 0 {
		cfg.RunAs = testhost.RunAs(t).Name
		for i := range cfg.Modules {
			cfg.Modules[i].Bundle = testhost.Reachable(t, cfg.Modules[i].Bundle)
		}
	}
	mods, err := nodeconfig.LoadModules(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &node{root: root, cfg: cfg, mods: mods}
}

func demoOp(t *testing.T, x *executor.Executor, done <-chan engine.OpDone, op protocol.Op) engine.Outcome {
	t.Helper()
	opID++
	x.Run(engine.RunOp{ID: opID, Target: engine.Target{Module: "demo", Name: "kv"}, Op: op, Timeout: 20 * time.Second})
	select {
	case d := <-done:
		if d.Outcome.Failure != engine.FailNone {
			t.Fatalf("%s: %+v", op, d.Outcome)
		}
		return d.Outcome
	case <-time.After(30 * time.Second):
		t.Fatalf("no OpDone for %s", op)
	}
	return engine.Outcome{}
}

// TestDemoDaemonAcrossReload: the example module, sandboxed whole, starts
// its daemon, sees it running (kill -0 on its pid file) in later ops and
// after a reload, and stops it: all its ops and its daemon share one
// domain.
func TestDemoDaemonAcrossReload(t *testing.T) {
	needRoot(t)
	needLandlock(t, 6)
	needNetNS(t)
	n := demoNode(t, "require")
	cg := newContainers(t)
	x, done := n.executor(t, cg)
	demoOp(t, x, done, protocol.OpStart)
	running := func() bool { return *demoOp(t, x, done, protocol.OpFingerprint).Result.Fingerprint.Running }
	if !running() {
		t.Fatal("the daemon is not running after start")
	}
	cfg, err := nodeconfig.Load("../examples/node.toml")
	if err != nil {
		t.Fatal(err)
	}
	cfg.NodeID, cfg.DataDir, cfg.Socket, cfg.Sandbox, cfg.RunAs = n.cfg.NodeID, n.cfg.DataDir, n.cfg.Socket,
		n.cfg.Sandbox, n.cfg.RunAs
	for i := range cfg.Modules {
		cfg.Modules[i].Bundle = n.cfg.Modules[i].Bundle // the copy run_as reaches
	}
	mods, err := nodeconfig.LoadModules(cfg)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := IdentityOf(cfg)
	if err := x.Update(executor.Config{Node: cfg, Modules: mods, User: id.User, Owner: id.Owner,
		Hooks: For(cfg)}); err != nil {
		t.Fatal(err)
	}
	if !running() {
		t.Fatal("the daemon is not running after a reload")
	}
	if o := demoOp(t, x, done, protocol.OpStop); !o.Result.OpResult.Changed {
		t.Errorf("stop did not stop the daemon: %+v", o.Result.OpResult)
	}
	if running() {
		t.Error("the daemon runs after stop")
	}
}

// TestScopeSignals: with ScopeSignals, even a root op cannot signal
// svcrun; and, the reason it is off, an op of a new domain (here: a
// policy changed by a new grant) no longer sees the daemon an op of the
// old domain left.
func TestScopeSignals(t *testing.T) {
	needRoot(t)
	needLandlock(t, 6)
	needNetNS(t)
	ScopeSignals = true
	defer func() { ScopeSignals = false }()
	n := newNode(t, nodeOptions{sandbox: "best_effort", modules: []testModule{{"scoped", "host"}}})
	x, done := n.executor(t, nil)
	if got := checks(t, x, done, "scoped", "kill", "ppid")["kill ppid"]; got == allowed {
		t.Errorf("a root op signalled svcrun despite ScopeSignals")
	}

	d := demoNode(t, "best_effort")
	x, done = d.executor(t, newContainers(t))
	demoOp(t, x, done, protocol.OpStart)
	d.mods[0].Config.Grants.Read = []string{"/opt"} // a new policy: a new domain
	if _, err := os.Stat("/opt"); err != nil {
		t.Skip("/opt is needed as a grant")
	}
	d.mods[0].Manifest.Sandbox.Read = []string{"/opt"}
	id, _ := IdentityOf(d.cfg)
	if err := x.Update(executor.Config{Node: d.cfg, Modules: d.mods, User: id.User, Owner: id.Owner,
		Hooks: For(d.cfg)}); err != nil {
		t.Fatal(err)
	}
	if *demoOp(t, x, done, protocol.OpFingerprint).Result.Fingerprint.Running {
		t.Errorf("the new domain sees the old domain's daemon: has signal scoping changed?")
	} else {
		t.Logf("as expected with ScopeSignals: after a policy change the module's ops report its live daemon not running")
	}
}

// TestCoreLimit: an op is born with a soft RLIMIT_CORE of 0 whatever
// svcrun's, and svcrun's own limit is put back after the fork.
func TestCoreLimit(t *testing.T) {
	needRoot(t)
	needLandlock(t, 1)
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_CORE, &old); err != nil {
		t.Fatal(err)
	}
	if old.Max == 0 {
		t.Skip("the hard RLIMIT_CORE is 0 here")
	}
	raised := unix.Rlimit{Cur: min(old.Max, 1<<20), Max: old.Max}
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &raised); err != nil {
		t.Fatal(err)
	}
	defer unix.Setrlimit(unix.RLIMIT_CORE, &old)
	n := newNode(t, nodeOptions{sandbox: "best_effort", runAs: testhost.RunAs(t).Name,
		modules: []testModule{{"core", "host"}}})
	x, done := n.executor(t, nil)
	got := checks(t, x, done, "core", "value", "core")["value core"]
	if !strings.HasPrefix(got, "0/") {
		t.Errorf("the op's RLIMIT_CORE is %s, want a soft limit of 0", got)
	}
	var now unix.Rlimit
	unix.Getrlimit(unix.RLIMIT_CORE, &now)
	if now != raised {
		t.Errorf("svcrun's RLIMIT_CORE is %+v after the op, want %+v back", now, raised)
	}
}

// TestBundleReplacedAcrossReload replaces a module's bundle as a package
// upgrade does (mv B B.old, cp -a B.old B). Landlock's rules hold the
// directories opened when the confining thread was set up, so ops from
// the new bundle would be refused (permission denied) until svcrun
// restarts; the executor refuses them first, naming the fix (a reload),
// and after the reload they run, confined to the new bundle.
func TestBundleReplacedAcrossReload(t *testing.T) {
	needLandlock(t, 1)
	n := newNode(t, nodeOptions{sandbox: "best_effort", modules: []testModule{{name: "m", network: "host"}}})
	x, done := n.executor(t, nil)
	if o := run(t, x, done, "m", "esc"); o.Failure != engine.FailNone {
		t.Fatalf("op before the upgrade: %+v", o)
	}
	bundle := n.mods[0].Manifest.Dir
	if err := os.Rename(bundle, bundle+".old"); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", bundle+".old", bundle).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v: %s", err, out)
	}
	if o := run(t, x, done, "m", "esc"); o.Failure != engine.FailPrepare ||
		!strings.Contains(o.Message, "run `svcrun reload`") {
		t.Errorf("op after the upgrade, before a reload: %+v", o)
	}

	mods, err := nodeconfig.LoadModules(n.cfg)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := IdentityOf(n.cfg)
	if err := x.Update(executor.Config{Node: n.cfg, Modules: mods, User: id.User, Owner: id.Owner,
		Hooks: For(n.cfg)}); err != nil {
		t.Fatal(err)
	}
	if o := run(t, x, done, "m", "esc"); o.Failure != engine.FailNone {
		t.Errorf("op after the reload: %+v", o)
	}
	// Confined to the new bundle: the old one is out of reach.
	got := checks(t, x, done, "m", "read", filepath.Join(bundle+".old", "module.toml"), "read",
		filepath.Join(bundle, "module.toml"))
	if got["read "+filepath.Join(bundle+".old", "module.toml")] == "ok" ||
		got["read "+filepath.Join(bundle, "module.toml")] != "ok" {
		t.Errorf("reads after the reload: %v, want the new bundle only", got)
	}
}
