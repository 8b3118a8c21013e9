package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/oarbank/svcrun/internal/testhost"
	"github.com/oarbank/svcrun/nodeconfig"
)

// packagedConfig is packaging/svcrun.toml as the package installs it, with
// what a test must make its own: node id, data dir and socket, and the
// run_as user that postinst creates (svcrun-ops) replaced by the tests'
// (internal/testhost).
func packagedConfig(t *testing.T, node, dataDir, sock string) string {
	t.Helper()
	data, err := os.ReadFile("../../packaging/svcrun.toml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for old, repl := range map[string]string{
		`run_as = "svcrun-ops"`:              fmt.Sprintf("run_as = %q", testhost.RunAs(t).Name),
		`socket = "/run/svcrun/svcrun.sock"`: fmt.Sprintf("socket = %q\nnode_id = %q\ndata_dir = %q", sock, node, dataDir),
	} {
		if strings.Count(text, old) != 1 {
			t.Fatalf("packaging/svcrun.toml has not one line %s", old)
		}
		text = strings.Replace(text, old, repl, 1)
	}
	return text
}

// TestPackagedConfigValidates: the commented /etc/svcrun/svcrun.toml the
// Debian package installs is valid as it is, on a host with no module
// and the user postinst creates: exit 0, with the warning that it lists
// none.
func TestPackagedConfigValidates(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "svcrun.toml")
	if err := os.WriteFile(cfg, []byte(packagedConfig(t, "n1", "/var/lib/svcrun", "/run/svcrun/svcrun.sock")),
		0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "validate", "--config", cfg)
	if code != 0 || !strings.Contains(errs, "no [[modules]]") {
		t.Errorf("exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
}

// firstModuleSteps are the lines docs/operating.md ("Your first module")
// appends to the configuration, and the bundle directory they name.
func firstModuleSteps(t *testing.T) (appended, bundle string) {
	t.Helper()
	doc, err := os.ReadFile("../../docs/operating.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(doc), "### Your first module")
	m := regexp.MustCompile(`(?s)tee -a /etc/svcrun/svcrun.toml >/dev/null <<'EOF'\n(.*?)\nEOF\n`).FindStringSubmatch(sec)
	if !ok || m == nil {
		t.Fatal(`docs/operating.md has no "Your first module" with a tee -a of the configuration`)
	}
	b := regexp.MustCompile(`bundle = "([^"]+)"`).FindStringSubmatch(m[1])
	if b == nil {
		t.Fatalf("the docs' [[modules]] table names no bundle:\n%s", m[1])
	}
	return m[1] + "\n", b[1]
}

// TestFirstModuleAsShipped follows docs/operating.md with the packaged
// configuration: the demo bundle copied readable, its [[modules]] table
// appended, validate, serve, and a job that needs its capability runs.
// The file as shipped, with run_as commented out, is refused by validate,
// naming run_as.
func TestFirstModuleAsShipped(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	if os.Geteuid() != 0 {
		t.Skip("svcrun runs as root under the unit, and run_as needs root")
	}
	bin := buildSvcrun(t)
	// Every directory on the way must let the run_as user through, as
	// /opt does.
	root := testhost.SearchableDir(t)
	appended, docBundle := firstModuleSteps(t)
	bundle := filepath.Join(root, "opt", filepath.Base(docBundle))
	demo, _ := filepath.Abs("../../examples/modules/demo")
	testhost.CopyReadable(t, demo, bundle)
	sdir, err := os.MkdirTemp("", "fm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sdir) })
	node := testhost.NodeID("fm")
	sock := filepath.Join(sdir, "s.sock")
	cfg := filepath.Join(root, "svcrun.toml")
	text := packagedConfig(t, node, filepath.Join(root, "data"), sock) + strings.ReplaceAll(appended, docBundle, bundle)
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cli := func(args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		out, err := cmd.CombinedOutput()
		if err != nil && cmd.ProcessState == nil {
			t.Fatalf("svcrun %v: %v", args, err)
		}
		return string(out), cmd.ProcessState.ExitCode()
	}
	if out, code := cli("validate", "--config", cfg); code != 0 {
		if strings.Contains(out, "missing landlock") || strings.Contains(out, "missing netns") {
			testhost.SkipOrFail(t, "this host cannot apply the whole sandbox that sandbox = \"require\" asks for:\n"+out)
		}
		t.Fatalf("validate of the packaged configuration with the docs' module: exit %d\n%s", code, out)
	}

	// As shipped before run_as was set: validate refuses what the node
	// would refuse, and names the fix.
	unset := filepath.Join(root, "no-run-as.toml")
	if err := os.WriteFile(unset, regexp.MustCompile(`(?m)^run_as = `).ReplaceAll([]byte(text), []byte("#run_as = ")),
		0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := cli("validate", "--config", unset); code != 1 ||
		!strings.Contains(out, "module demo would be refused at run time") ||
		!strings.Contains(out, `run_as = "svcrun-ops"`) {
		t.Errorf("validate without run_as: exit %d, want 1 naming the refusal and run_as\n%s", code, out)
	}

	serve := exec.Command(bin, "serve", "--config", cfg, "--log-format", "text")
	serve.Stderr = &testLog{t}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		serve.Process.Signal(syscall.SIGTERM)
		serve.Wait()
		testhost.RemoveBase(t, node)
	})
	waitUntil(t, "svcrun serve answers", func() bool { return exec.Command(bin, "status", "--socket", sock).Run() == nil })
	if out, code := cli("run", "--socket", sock, "--capability", "kv", "--wait", "60s", "--", "echo",
		"it works"); code != 0 || !strings.Contains(out, "it works") {
		t.Fatalf("the first module's capability: exit %d\n%s", code, out)
	}
}

// TestSocketGroupRecipe: docs/operating.md's recipe for socket_group,
// applied to the packaged configuration after a module was added, gives a
// valid file with the group set at the top level.
func TestSocketGroupRecipe(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operating.md")
	if err != nil {
		t.Fatal(err)
	}
	recipe := regexp.MustCompile(
		`sed -i 's/(\^#socket_group = \.\*)/(socket_group = "svcrun-jobs")/' /etc/svcrun/svcrun.toml`)
	m := recipe.FindStringSubmatch(string(doc))
	if m == nil {
		t.Fatal("docs/operating.md has no sed recipe for socket_group")
	}
	appended, docBundle := firstModuleSteps(t)
	demo, _ := filepath.Abs("../../examples/modules/demo")
	text := packagedConfig(t, "n1", "/var/lib/svcrun", "/run/svcrun/svcrun.sock") +
		strings.ReplaceAll(appended, docBundle, demo)
	re := regexp.MustCompile("(?m)" + m[1])
	if len(re.FindAllString(text, -1)) != 1 {
		t.Fatalf("packaging/svcrun.toml has not one line %s", m[1])
	}
	// root: a group every host has, for the docs' svcrun-jobs.
	text = re.ReplaceAllString(text, strings.Replace(m[2], "svcrun-jobs", "root", 1))
	cfg := filepath.Join(t.TempDir(), "svcrun.toml")
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := nodeconfig.Load(cfg)
	if err != nil {
		t.Fatalf("the recipe's file: %v", err)
	}
	if c.SocketGroup != "root" {
		t.Errorf("the recipe's file: socket_group %q, want root", c.SocketGroup)
	}
}
