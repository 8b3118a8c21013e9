package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/oarbank/svcrun/internal/testhost"
)

// TestOpBundleSandboxed: svcrun op --bundle runs the op in the module's
// sandbox, as the agent would: its data dir is writable, a directory
// nobody granted is not, and the report lists the layers it ran without.
func TestOpBundleSandboxed(t *testing.T) {
	outside := t.TempDir()
	bundle := t.TempDir()
	script := `#!/bin/sh
w() { if (echo x > "$1") 2>/dev/null; then echo yes; else echo no; fi; }
printf '{"healthy":true,"running":false,"attrs":{"data":"%s","outside":"%s"}}\n' \
	"$(w "$OARBANK_MODULE_DATA/f")" "$(w ` + outside + `/f)"
`
	for name, content := range map[string]string{
		"module.toml": "[module]\nname = \"box\"\nversion = \"1\"\n\n[[services]]\nname = \"svc\"\nexec = [\"bin/svc\"]\n",
		"bin/svc":     script,
	} {
		p := filepath.Join(bundle, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := run(t, "op", "--json", "--bundle", bundle, "--data", t.TempDir(), "svc", "fingerprint")
	var r struct {
		OK             bool
		Result         struct{ Attrs map[string]string }
		SandboxMissing []string `json:"sandbox_missing"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 || !r.OK {
		t.Fatalf("exit %d, %v:\n%s%s", code, err, out, errs)
	}
	t.Logf("ran without: %v", r.SandboxMissing)
	if slices.Contains(r.SandboxMissing, "landlock") {
		if os.Getenv("REQUIRE_KERNEL_FEATURES") == "1" {
			t.Fatal("REQUIRE_KERNEL_FEATURES=1: no Landlock here")
		}
		t.Skip("no Landlock here")
	}
	if got := r.Result.Attrs; got["data"] != "yes" || got["outside"] != "no" {
		t.Errorf("writes: %v, want the data dir only", got)
	}
	if _, err := os.Stat(filepath.Join(outside, "f")); err == nil {
		t.Error("the op wrote outside its sandbox")
	}
}

// TestOpConfigRunAsEntersDataDir: `svcrun op --config` as root creates
// <data_dir> and <data_dir>/modules as the daemon does, traversable, so
// that a run_as op (this one, and the daemon's later) enters its module
// data dir.
func TestOpConfigRunAsEntersDataDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("run_as needs root")
	}
	// Every directory on the way must let the run_as user through.
	root := testhost.SearchableDir(t)
	bundle := filepath.Join(root, "bundle")
	script := `#!/bin/sh
if (echo x > "$OARBANK_MODULE_DATA/f") 2>/dev/null; then w=yes; else w=no; fi
printf '{"healthy":true,"running":false,"attrs":{"data":"%s"}}\n' "$w"
`
	writeBundle(t, bundle, map[string]string{
		"module.toml": "[module]\nname = \"box\"\nversion = \"1\"\n\n[[services]]\nname = \"svc\"\nexec = [\"bin/svc\"]\n",
		"bin/svc":     script,
	})
	cfg := filepath.Join(root, "svcrun.toml")
	// run_as is the tests' own unprivileged user, not the image's nobody.
	text := "node_id = \"n1\"\ndata_dir = \"data\"\nmemory_budget_gb = 1\nsandbox = \"best_effort\"\nrun_as = \"" +
		testhost.RunAs(t).Name + "\"\n\n[[modules]]\nbundle = \"" + bundle + "\"\n"
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		code, out, errs := run(t, "op", "--json", "--config", cfg, "box/svc", "fingerprint")
		var r struct {
			OK     bool
			Result struct{ Attrs map[string]string }
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 || !r.OK {
			t.Fatalf("op %d: exit %d, %v:\n%s%s", i+1, code, err, out, errs)
		}
		if r.Result.Attrs["data"] != "yes" {
			t.Errorf("op %d: the run_as op could not write into its module data dir", i+1)
		}
	}
	for _, d := range []string{"data", "data/modules"} {
		fi, err := os.Stat(filepath.Join(root, d))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			t.Errorf("%s is %v: other users cannot traverse it", d, fi.Mode().Perm())
		}
	}
}
