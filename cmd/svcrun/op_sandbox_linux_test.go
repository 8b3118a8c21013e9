package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestOpBundleSandboxed: svcrun op --bundle runs the op in the module's
// sandbox, as the agent would: its data dir is writable, a directory
// nobody granted is not, and the report lists the layers it ran without.
func TestOpBundleSandboxed(t *testing.T) {
	outside := t.TempDir()
	bundle := t.TempDir()
	script := `#!/bin/sh
w() { if (echo x > "$1") 2>/dev/null; then echo yes; else echo no; fi; }
printf '{"healthy":true,"running":false,"attrs":{"data":"%s","outside":"%s"}}\n' "$(w "$OARBANK_MODULE_DATA/f")" "$(w ` + outside + `/f)"
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
