package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oarbank/svcrun/cgroup"
	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/executor"
	"github.com/oarbank/svcrun/internal/testhost"
	"github.com/oarbank/svcrun/nodeconfig"
)

func TestMain(m *testing.M) {
	// As svcrun does: every child is started through the executor.
	if err := executor.BecomeSubreaper(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// requireFeatures says that a missing kernel feature or privilege fails
// the test instead of skipping it (CI runs as root on a kernel with
// everything).
func requireFeatures() bool { return os.Getenv("REQUIRE_KERNEL_FEATURES") == "1" }

// skipUnless skips (or, with REQUIRE_KERNEL_FEATURES=1, fails) the test
// when why is not "".
func skipUnless(t testing.TB, reason string) {
	t.Helper()
	if reason == "" {
		return
	}
	if requireFeatures() {
		t.Fatalf("REQUIRE_KERNEL_FEATURES=1: %s", reason)
	}
	t.Skip(reason)
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// escapeBinary builds testdata/escape.c once per test binary.
func escapeBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		if _, err := exec.LookPath("gcc"); err != nil {
			buildErr = fmt.Errorf("gcc is needed to build testdata/escape.c: %v", err)
			return
		}
		buildDir, buildErr = os.MkdirTemp("", "sandbox-escape-")
		if buildErr != nil {
			return
		}
		buildErr = gcc(filepath.Join(buildDir, "escape"), "testdata/escape.c")
	})
	if buildErr != nil {
		skipUnless(t, buildErr.Error())
	}
	return filepath.Join(buildDir, "escape")
}

func gcc(out, src string, flags ...string) error {
	cmd := exec.Command("gcc", append(append([]string{"-O2", "-w"}, flags...), "-o", out, src)...)
	var msg bytes.Buffer
	cmd.Stdout, cmd.Stderr = &msg, &msg
	err := executor.RunCmd(cmd)
	if err != nil {
		return fmt.Errorf("gcc %s: %v\n%s", src, err, msg.Bytes())
	}
	return nil
}

// node is a node configuration on a temporary root, with modules whose
// bundles hold the escape binary (bin/escape), the shell service
// (bin/svc.sh, bin/helper.sh), and grants and a tool outside the system
// directories.
type node struct {
	root    string // every directory on the way is 0755: run_as must traverse it
	cfg     *nodeconfig.Config
	mods    []nodeconfig.LoadedModule
	secret  string // a readable file (0644) no module is granted
	rgrant  string // read grant (with a file "f")
	wgrant  string // write grant
	tool    string // the granted tool "mytool"
	sockDir string // a directory for test sockets, not granted
}

type nodeOptions struct {
	sandbox string // require or best_effort
	runAs   string // "" for none
	modules []testModule
}

type testModule struct {
	name    string
	network string
}

func newNode(t testing.TB, o nodeOptions) *node {
	t.Helper()
	esc := escapeBinary(t)
	root := testhost.SearchableDir(t)
	n := &node{
		root:    root,
		secret:  filepath.Join(root, "secret", "secret.txt"),
		rgrant:  filepath.Join(root, "rgrant"),
		wgrant:  filepath.Join(root, "wgrant"),
		tool:    filepath.Join(root, "tools", "mytool"),
		sockDir: filepath.Join(root, "sock"),
	}
	for _, d := range []string{filepath.Dir(n.secret), n.rgrant, n.wgrant, filepath.Dir(n.tool), n.sockDir} {
		mkdir(t, d, 0o755)
	}
	writeFile(t, n.secret, "secret\n", 0o644)
	writeFile(t, filepath.Join(n.rgrant, "f"), "readable\n", 0o644)
	os.Chmod(n.wgrant, 0o777)
	writeFile(t, n.tool, "#!/bin/sh\nexit 0\n", 0o755)

	var conf strings.Builder
	fmt.Fprintf(&conf, "node_id = \"n1\"\ndata_dir = %q\nsocket = %q\nmemory_budget_gb = 1\nsandbox = %q\n",
		filepath.Join(root, "data"), filepath.Join(root, "data", "svcrun.sock"), o.sandbox)
	if o.runAs != "" {
		fmt.Fprintf(&conf, "run_as = %q\n", o.runAs)
	}
	for _, m := range o.modules {
		bundle := filepath.Join(root, "bundles", m.name)
		mkdir(t, filepath.Join(bundle, "bin"), 0o755)
		copyFile(t, esc, filepath.Join(bundle, "bin", "escape"), 0o755)
		copyFile(t, "testdata/svc.sh", filepath.Join(bundle, "bin", "svc.sh"), 0o755)
		copyFile(t, "testdata/helper.sh", filepath.Join(bundle, "bin", "helper.sh"), 0o755)
		writeFile(t, filepath.Join(bundle, "module.toml"), fmt.Sprintf(`[module]
name = %q
version = "1.0.0"

[sandbox]
read = [%q]
write = [%q]
network = %q

[[services]]
name = "esc"
exec = ["bin/escape"]

[[services]]
name = "shell"
exec = ["bin/svc.sh"]
`, m.name, n.rgrant, n.wgrant, m.network), 0o644)
		fmt.Fprintf(&conf, "\n[[modules]]\nbundle = %q\ngrants = { read = [%q], write = [%q] }\ntools = { mytool = %q }\n",
			bundle, n.rgrant, n.wgrant, n.tool)
	}
	file := filepath.Join(root, "svcrun.toml")
	writeFile(t, file, conf.String(), 0o644)
	host := nodeconfig.Host{Hostname: "n1", MemoryBytes: 8 << 30, Cores: runtime.NumCPU(), Platform: "linux",
		UserExists: func(name string) bool { _, err := user.Lookup(name); return err == nil }}
	var err error
	n.cfg, err = nodeconfig.Parse(file, file, []byte(conf.String()), host)
	if err != nil {
		t.Fatal(err)
	}
	if n.mods, err = nodeconfig.LoadModules(n.cfg); err != nil {
		t.Fatal(err)
	}
	return n
}

// executor returns the real executor of the node, sandboxed as the agent
// wires it, with cgroup containers when cg is not nil.
func (n *node) executor(t testing.TB, cg *cgroup.Manager) (*executor.Executor, <-chan engine.OpDone) {
	t.Helper()
	return n.executorWith(t, cg, For(n.cfg))
}

// executorWith is executor with the given hooks (nil: unsandboxed).
func (n *node) executorWith(t testing.TB, cg *cgroup.Manager,
	hooks func(engine.Target, nodeconfig.LoadedModule) (executor.Hooks, error)) (*executor.Executor,
	<-chan engine.OpDone) {
	t.Helper()
	id, err := IdentityOf(n.cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan engine.OpDone, 16)
	x, err := executor.New(executor.Config{
		Node: n.cfg, Modules: n.mods, User: id.User, Owner: id.Owner,
		Hooks: hooks, Containers: cg,
	}, func(e engine.Event) {
		if d, ok := e.(*engine.OpDone); ok {
			done <- *d
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(x.Close)
	return x, done
}

var opID engine.OpID

// run runs the fingerprint op of module/service with args and returns its
// outcome.
func run(t testing.TB, x *executor.Executor, done <-chan engine.OpDone, module, service string,
	args ...string) engine.Outcome {
	t.Helper()
	opID++
	x.Run(engine.RunOp{ID: opID, Target: engine.Target{Module: module, Name: service}, Op: "fingerprint",
		Args: args, Timeout: 20 * time.Second})
	select {
	case d := <-done:
		return d.Outcome
	case <-time.After(30 * time.Second):
		t.Fatalf("no OpDone for %s/%s", module, service)
	}
	return engine.Outcome{}
}

// checks runs the escape service with checks (pairs of check and argument)
// and returns each result by "<check> <arg>".
func checks(t testing.TB, x *executor.Executor, done <-chan engine.OpDone, module string,
	pairs ...string) map[string]string {
	t.Helper()
	o := run(t, x, done, module, "esc", pairs...)
	if o.Failure != engine.FailNone || o.Result.Fingerprint == nil {
		t.Fatalf("escape op of %s: %+v", module, o)
	}
	got := map[string]string{}
	for i := 0; i+1 < len(pairs); i += 2 {
		key := fmt.Sprintf("%d-%s", i/2, pairs[i])
		v, _ := o.Result.Fingerprint.Attrs[key].(string)
		got[pairs[i]+" "+pairs[i+1]] = v
	}
	return got
}

func mkdir(t testing.TB, d string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(d, mode); err != nil {
		t.Fatal(err)
	}
	os.Chmod(d, mode)
}

func writeFile(t testing.TB, file, data string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(file, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	os.Chmod(file, mode)
}

func copyFile(t testing.TB, from, to string, mode os.FileMode) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, to, string(data), mode)
}
