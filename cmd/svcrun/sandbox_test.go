package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestSandboxCommand(t *testing.T) {
	code, out, errs := run(t, "sandbox")
	if code != 0 || !strings.HasPrefix(out, "sandbox: ") || !strings.Contains(out, "process containers:") {
		t.Fatalf("svcrun sandbox: exit %d\n%s%s", code, out, errs)
	}
	if runtime.GOOS != "linux" && !strings.Contains(out, "NOT enforced") {
		t.Errorf("svcrun sandbox does not say it is not enforced on %s:\n%s", runtime.GOOS, out)
	}

	code, out, errs = run(t, "sandbox", "--config", "../../examples/node.toml")
	if code != 0 || !strings.Contains(out, "module demo (sandbox best_effort, network none)") {
		t.Errorf("best_effort config: exit %d\n%s%s", code, out, errs)
	}

	// The same node in require mode, as a root svcrun without run_as (or
	// on a platform without the sandbox): refused, exit 1.
	if runtime.GOOS == "linux" && os.Geteuid() != 0 {
		t.Skip("the require case needs a layer missing: run as root")
	}
	data, err := os.ReadFile("../../examples/node.toml")
	if err != nil {
		t.Fatal(err)
	}
	demo, _ := filepath.Abs("../../examples/modules/demo")
	conf := strings.NewReplacer(`sandbox = "best_effort"`,
		`sandbox = "require"`, `"modules/demo"`, `"`+demo+`"`, `"state"`, `"`+t.TempDir()+`"`).Replace(string(data))
	file := filepath.Join(t.TempDir(), "node.toml")
	if err := os.WriteFile(file, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = run(t, "sandbox", "--config", file)
	if code != 1 || !strings.Contains(out, "REFUSED") ||
		!strings.Contains(errs, "1 module would be refused on this host") {
		t.Errorf("require config: exit %d\n%s%s", code, out, errs)
	}

	if code, _, errs := run(t, "sandbox", "extra"); code != 2 || !strings.Contains(errs, `unexpected argument "extra"`) {
		t.Errorf("stray argument: exit %d, %s", code, errs)
	}
}
