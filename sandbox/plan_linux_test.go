package sandbox

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oarbank/svcrun/internal/testhost"
	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/nodeconfig"
)

// planFixture is a node configuration and a module on a temporary root,
// built by hand: the plan needs no binary.
type planFixture struct {
	root string
	cfg  *nodeconfig.Config
	mod  *manifest.Module
	mc   nodeconfig.Module
}

func newPlanFixture(t *testing.T, mode nodeconfig.SandboxMode, network manifest.Network, runAs string) *planFixture {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &planFixture{root: root}
	bundle := filepath.Join(root, "bundle")
	for _, d := range []string{bundle, filepath.Join(root, "r"), filepath.Join(root, "w"), filepath.Join(root, "tools")} {
		mkdir(t, d, 0o755)
	}
	writeFile(t, filepath.Join(root, "tools", "tool"), "#!/bin/sh\n", 0o755)
	f.cfg = &nodeconfig.Config{File: filepath.Join(root, "svcrun.toml"), DataDir: filepath.Join(root, "data"),
		Socket: filepath.Join(root, "data", "svcrun.sock"), Sandbox: mode, RunAs: runAs}
	f.mod = &manifest.Module{Name: "m", Dir: bundle, Sandbox: manifest.Sandbox{Network: network}}
	f.mc = nodeconfig.Module{Bundle: bundle,
		Grants: nodeconfig.Grants{Read: []string{filepath.Join(root, "r")}, Write: []string{filepath.Join(root, "w")}},
		Tools:  map[string]string{"tool": filepath.Join(root, "tools", "tool")}}
	return f
}

func layers(p *Plan) []Layer {
	var out []Layer
	for _, m := range p.Missing {
		out = append(out, m.Layer)
	}
	return out
}

func TestPlanLayers(t *testing.T) {
	full := facts{goos: "linux", landlock: 7, euid: 0}
	// A plan as root looks run_as up: a user the tests made, not one the
	// host may lack.
	user := testhost.RunAs(t).Name
	for _, c := range []struct {
		name    string
		f       facts
		network manifest.Network
		runAs   string
		want    []Layer
	}{
		{"everything", full, manifest.NetworkNone, user, nil},
		{"no landlock", facts{goos: "linux", landlockReason: "the kernel has no Landlock", euid: 0},
			manifest.NetworkHost, user, []Layer{LayerLandlock}},
		{"abi 2", facts{goos: "linux", landlock: 2, euid: 0}, manifest.NetworkHost, user, []Layer{LayerTruncate, LayerScope}},
		{"abi 5", facts{goos: "linux", landlock: 5, euid: 0}, manifest.NetworkHost, user, []Layer{LayerScope}},
		{"no netns", facts{goos: "linux", landlock: 7, euid: 0, netnsReason: "unshare: EPERM"},
			manifest.NetworkNone, user, []Layer{LayerNetNS}},
		{"no netns, host network", facts{goos: "linux", landlock: 7, euid: 0, netnsReason: "unshare: EPERM"},
			manifest.NetworkHost, user, nil},
		{"root without run_as", full, manifest.NetworkHost, "", []Layer{LayerRunAs, LayerUnixSockets}},
		{"root without run_as, abi 9", facts{goos: "linux", landlock: 9, euid: 0}, manifest.NetworkHost, "",
			[]Layer{LayerRunAs}},
		{"not root", facts{goos: "linux", landlock: 7, euid: 1000}, manifest.NetworkHost, "",
			[]Layer{LayerRunAs, LayerUnixSockets}},
		{"not root with run_as", facts{goos: "linux", landlock: 7, euid: 1000}, manifest.NetworkHost, user,
			[]Layer{LayerRunAs, LayerUnixSockets}},
		{"no no_new_privs", facts{goos: "linux", landlock: 7, euid: 0, nnpReason: "prctl: EINVAL"},
			manifest.NetworkHost, user, []Layer{LayerNoNewPrivs}},
	} {
		t.Run(c.name, func(t *testing.T) {
			fx := newPlanFixture(t, nodeconfig.SandboxRequire, c.network, c.runAs)
			p, err := plan(fx.cfg, fx.mod, fx.mc, c.f)
			if err != nil {
				t.Fatal(err)
			}
			if got := layers(p); !slices.Equal(got, c.want) {
				t.Errorf("missing %v, want %v\n%s", got, c.want, p)
			}
			err = p.Err()
			if (err == nil) != (len(c.want) == 0) {
				t.Fatalf("require: Err %v with missing %v", err, c.want)
			}
			for _, l := range c.want {
				if !strings.Contains(err.Error(), "missing "+string(l)+": ") {
					t.Errorf("the error does not name %s: %v", l, err)
				}
			}
			p.Mode = nodeconfig.SandboxBestEffort
			if err := p.Err(); err != nil {
				t.Errorf("best_effort refused: %v", err)
			}
			if p.NetNS != (c.network == manifest.NetworkNone && c.f.netnsReason == "") {
				t.Errorf("NetNS %v", p.NetNS)
			}
			if (p.RunAs != nil) != (c.runAs != "" && c.f.euid == 0) {
				t.Errorf("RunAs %+v", p.RunAs)
			}
		})
	}
}

func TestPlanRules(t *testing.T) {
	fx := newPlanFixture(t, nodeconfig.SandboxRequire, manifest.NetworkHost, "")
	mkdir(t, filepath.Join(fx.root, "r", "sub"), 0o755)
	p, err := plan(fx.cfg, fx.mod, fx.mc, facts{goos: "linux", landlock: 7})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Access{
		"/proc":     ReadOnly,
		"/dev/null": Device,
		fx.mod.Dir:  ReadExec,
		filepath.Join(fx.root, "data", "modules", "m"): ReadWrite,
		filepath.Join(fx.root, "r"):                    ReadOnly,
		filepath.Join(fx.root, "w"):                    ReadWrite,
		filepath.Join(fx.root, "tools", "tool"):        ReadExec,
	}
	usr, _ := filepath.EvalSymlinks("/usr")
	want[usr] = ReadExec
	etc, _ := filepath.EvalSymlinks("/etc")
	want[etc] = ReadExec
	got := map[string]Access{}
	for _, r := range p.Rules {
		got[r.Path] = r.Access
		if strings.HasPrefix(r.Path, "/run") || strings.HasPrefix(r.Path, "/tmp/") &&
			!strings.HasPrefix(r.Path, fx.root) || r.Path == "/" {
			t.Errorf("rule %+v", r)
		}
	}
	for path, a := range want {
		if got[path] != a {
			t.Errorf("%s: %v, want %v", path, got[path], a)
		}
	}
	if len(p.Rules) > 20 {
		t.Errorf("%d rules: %v", len(p.Rules), p.Rules)
	}

	// An absent grant is noted, not granted.
	fx.mc.Grants.Read = append(fx.mc.Grants.Read, filepath.Join(fx.root, "absent"))
	p, err = plan(fx.cfg, fx.mod, fx.mc, facts{goos: "linux", landlock: 7})
	if err != nil || len(p.Notes) != 1 || !strings.Contains(p.Notes[0], "absent does not exist") {
		t.Errorf("absent grant: %v, notes %q", err, p.Notes)
	}
}

// TestPlanRefusesUnsound: whatever the mode, no rule may reach svcrun's
// state or socket, a forbidden path (once symlinks are resolved), or let
// an op rewrite its bundle.
func TestPlanRefusesUnsound(t *testing.T) {
	user := testhost.RunAs(t).Name
	for _, c := range []struct {
		name  string
		setup func(fx *planFixture)
		want  string
	}{
		{"read grant linking to /run", func(fx *planFixture) {
			link := filepath.Join(fx.root, "innocent")
			os.Symlink("/run", link)
			fx.mc.Grants.Read = []string{link}
		}, "reaches /run/docker.sock"},
		// Whether the host has /dev/kvm or not: a device can appear later.
		{"tool linking to /dev/kvm", func(fx *planFixture) {
			link := filepath.Join(fx.root, "tools", "kvm")
			os.Symlink("/dev/kvm", link)
			fx.mc.Tools["kvm"] = link
		}, "/dev/kvm"},
		{"tool linking through a relative link to /dev/kvm", func(fx *planFixture) {
			os.Symlink("/dev", filepath.Join(fx.root, "devices"))
			link := filepath.Join(fx.root, "tools", "kvm")
			os.Symlink("../devices/kvm", link)
			fx.mc.Tools["kvm"] = link
		}, "/dev/kvm"},
		{"read grant linking to a runtime socket not there yet", func(fx *planFixture) {
			link := filepath.Join(fx.root, "future")
			os.Symlink("/run/containerd-svcrun-test-absent/containerd.sock", link)
			fx.mc.Grants.Read = []string{link}
		}, "a containerd socket"},
		{"absent write grant that will contain the data dir", func(fx *planFixture) {
			fx.cfg.DataDir = filepath.Join(fx.root, "pending", "state")
			link := filepath.Join(fx.root, "later")
			os.Symlink(filepath.Join(fx.root, "pending"), link)
			fx.mc.Grants.Write = []string{link}
		}, "contains svcrun's data dir"},
		{"write grant containing the bundle", func(fx *planFixture) {
			fx.cfg.DataDir = filepath.Join(t.TempDir(), "data")
			fx.cfg.Socket = filepath.Join(fx.cfg.DataDir, "svcrun.sock")
			fx.mc.Grants.Write = []string{fx.root}
		}, "contains the module's bundle"},
		{"data dir under /usr", func(fx *planFixture) {
			fx.cfg.DataDir = "/usr/share/svcrun-sandbox-test-absent"
		}, "contains svcrun's data dir"},
		{"bundle containing the data dir", func(fx *planFixture) {
			fx.cfg.DataDir = filepath.Join(fx.mod.Dir, "state")
		}, "contains svcrun's data dir"},
		{"socket in a write grant", func(fx *planFixture) {
			fx.cfg.Socket = filepath.Join(fx.root, "w", "svcrun.sock")
		}, "contains svcrun's socket"},
		{"bundle in the data dir", func(fx *planFixture) {
			fx.cfg.DataDir = filepath.Join(fx.root, "data")
			fx.mod.Dir = filepath.Join(fx.root, "data", "modules", "m", "bundle")
			mkdir(t, fx.mod.Dir, 0o755)
		}, "contains the module's bundle"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, mode := range []nodeconfig.SandboxMode{nodeconfig.SandboxRequire, nodeconfig.SandboxBestEffort} {
				fx := newPlanFixture(t, mode, manifest.NetworkHost, user)
				c.setup(fx)
				_, err := plan(fx.cfg, fx.mod, fx.mc, facts{goos: "linux", landlock: 7})
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("%s: %v, want %q", mode, err, c.want)
				}
			}
		})
	}
}

// TestRunAsSocketGroups: a supplementary group of run_as that opens a
// socket no op may reach is dropped; a socket run_as can write through
// its own uid, primary group or others makes unix-sockets missing.
func TestRunAsSocketGroups(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	sock := func(name string, gid int, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		l, err := net.Listen("unix", p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		if err := os.Chown(p, 0, gid); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
		return p
	}
	a := &Account{Name: "x", UID: 4000, GID: 4000, Groups: []int{4000, 0, 4242, 4343}}
	open, notes := restrictGroups(a,
		[]string{sock("g.sock", 4242, 0o660), sock("r.sock", 4343, 0o640), sock("o.sock", 0, 0o777)})
	if !slices.Equal(a.Groups, []int{4000, 4343}) {
		t.Errorf("groups %v: want 0 and 4242 dropped", a.Groups)
	}
	if len(notes) != 2 || len(open) != 1 || !strings.Contains(open[0], "o.sock") {
		t.Errorf("open %q, notes %q", open, notes)
	}
}

func TestRights(t *testing.T) {
	if got := handledFS(1); got&unix.LANDLOCK_ACCESS_FS_REFER != 0 || got&unix.LANDLOCK_ACCESS_FS_TRUNCATE != 0 {
		t.Errorf("ABI 1 handles %#x", got)
	}
	for abi, bit := range map[int]uint64{2: unix.LANDLOCK_ACCESS_FS_REFER, 3: unix.LANDLOCK_ACCESS_FS_TRUNCATE,
		5: unix.LANDLOCK_ACCESS_FS_IOCTL_DEV, 9: unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX} {
		if handledFS(abi-1)&bit != 0 || handledFS(abi)&bit == 0 {
			t.Errorf("right %#x: from ABI %d", bit, abi)
		}
	}
	if scoped(5) != 0 || scoped(6) != unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET {
		t.Errorf("scoped: %#x %#x", scoped(5), scoped(6))
	}
	ScopeSignals = true
	if scoped(7) != unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET|unix.LANDLOCK_SCOPE_SIGNAL {
		t.Errorf("ScopeSignals: scoped %#x", scoped(7))
	}
	ScopeSignals = false
	if r := rights(ReadWrite, 7, false); r&^fileRights != 0 || r&unix.LANDLOCK_ACCESS_FS_EXECUTE != 0 {
		t.Errorf("read-write on a file: %#x", r)
	}
	if r := rights(ReadWrite, 7,
		true); r&(unix.LANDLOCK_ACCESS_FS_EXECUTE|unix.LANDLOCK_ACCESS_FS_MAKE_CHAR|
		unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK|unix.LANDLOCK_ACCESS_FS_IOCTL_DEV) != 0 {
		t.Errorf("read-write allows exec or devices: %#x", r)
	}
	if r := rights(ReadOnly, 7, true); r != unix.LANDLOCK_ACCESS_FS_READ_FILE|unix.LANDLOCK_ACCESS_FS_READ_DIR {
		t.Errorf("read-only: %#x", r)
	}
	if r := rights(Device, 2, false); r&unix.LANDLOCK_ACCESS_FS_TRUNCATE != 0 {
		t.Errorf("a right ABI 2 does not know: %#x", r)
	}
}

// TestStaleThreadExits: a module's confining thread stays while its policy
// is current, and exits once a new policy replaced it and it was idle for
// idleTimeout.
func TestStaleThreadExits(t *testing.T) {
	needLandlock(t, 1)
	old := idleTimeout
	idleTimeout = 50 * time.Millisecond
	defer func() { idleTimeout = old }()
	tidOf := func(c *confiner) int {
		var tid int
		if err := c.launch(func() error { tid = unix.Gettid(); return nil }); err != nil {
			t.Fatal(err)
		}
		if tid == unix.Getpid() {
			t.Errorf("the confining thread is the main thread")
		}
		return tid
	}
	alive := func(tid int) bool {
		_, err := os.Stat("/proc/self/task/" + strconv.Itoa(tid))
		return err == nil
	}
	c1 := confinerFor(&policy{key: "stale-test 1", module: "stale"})
	tid1 := tidOf(c1)
	time.Sleep(200 * time.Millisecond)
	if !alive(tid1) || tidOf(c1) != tid1 {
		t.Fatalf("the current policy's thread %d did not stay", tid1)
	}
	c2 := confinerFor(&policy{key: "stale-test 2", module: "stale"})
	tid2 := tidOf(c2)
	deadline := time.Now().Add(5 * time.Second)
	for alive(tid1) {
		if time.Now().After(deadline) {
			t.Fatalf("the stale confining thread %d is still there", tid1)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !alive(tid2) {
		t.Errorf("the current thread %d exited", tid2)
	}
	// An op still holding the stale hooks gets a thread again.
	if tid := tidOf(c1); tid == tid1 || tid == tid2 {
		t.Errorf("stale confiner: thread %d", tid)
	}
	c1.mu.Lock()
	defer c1.mu.Unlock()
	if c1.setups != 2 {
		t.Errorf("setups %d", c1.setups)
	}
}

// TestGoLockedAvoidsMain: a confining thread is never the main thread,
// however busy the scheduler.
func TestGoLockedAvoidsMain(t *testing.T) {
	var wg sync.WaitGroup
	for i := 0; i < 200; i++ {
		wg.Add(1)
		goLocked(func() {
			defer wg.Done()
			if unix.Gettid() == unix.Getpid() {
				t.Errorf("goLocked ran on the main thread")
			}
		})
	}
	wg.Wait()
}

func TestProbe(t *testing.T) {
	s := Probe()
	out := s.String()
	t.Logf("\n%s", out)
	if !s.Enforced || !strings.Contains(out, "sandbox: enforced on linux") ||
		!strings.Contains(out, "process containers:") {
		t.Errorf("Probe:\n%s", out)
	}
	if f := hostFacts(); f.landlock > 0 && !strings.Contains(out, "landlock: ABI ") {
		t.Errorf("no Landlock ABI in:\n%s", out)
	}
}

// TestResolveByName: links are followed by their targets' names whether or
// not those exist, relative to the link's directory; a loop stops.
func TestResolveByName(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	link := func(target, name string) {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	mkdir(t, filepath.Join(root, "d"), 0o755)
	link("/dev/kvm-svcrun-test-absent", "abs")
	link("d/missing", "rel")
	link("rel", "chain")
	link("../d", "d/up")
	link("loop-b", "loop-a")
	link("loop-a", "loop-b")
	for _, c := range []struct{ in, want string }{
		{"/", "/"},
		{root + "/d", root + "/d"},
		{root + "/absent/x", root + "/absent/x"},
		{root + "/abs", "/dev/kvm-svcrun-test-absent"},
		{root + "/abs/deeper", "/dev/kvm-svcrun-test-absent/deeper"},
		{root + "/rel", root + "/d/missing"},
		{root + "/chain/x", root + "/d/missing/x"},
		{root + "/d/up/up/up", root + "/d"},
	} {
		if got := resolveByName(c.in); got != c.want {
			t.Errorf("resolveByName(%s) = %s, want %s", c.in, got, c.want)
		}
	}
	if got := resolveByName(root + "/loop-a"); got != root+"/loop-a" && got != root+"/loop-b" {
		t.Errorf("a loop of links resolved to %s", got)
	}
}
