package modules

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestWritingAModulePython: the Python module of docs/writing-a-module.md,
// built from the page's own code blocks with the SDK copied in as the page
// says, passes svcrun check --job with its job.
func TestWritingAModulePython(t *testing.T) {
	need(t, "python3", "/usr/bin/python3")
	page, err := os.ReadFile("../../docs/writing-a-module.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(page)
	start := strings.Index(text, "## In Python")
	end := strings.Index(text, "## Where next")
	if start < 0 || end < start {
		t.Fatal(`docs/writing-a-module.md lacks "## In Python" before "## Where next"`)
	}
	blocks := map[string][]string{}
	for _, m := range regexp.MustCompile("(?s)```(\\w*)\n(.*?)```").FindAllStringSubmatch(text[start:end], -1) {
		blocks[m[1]] = append(blocks[m[1]], m[2])
	}
	if len(blocks["toml"]) != 1 || len(blocks["python"]) != 2 {
		t.Fatalf("the Python section has %d toml and %d python blocks, want the manifest, then the service and the job",
			len(blocks["toml"]), len(blocks["python"]))
	}
	bundle := filepath.Join(t.TempDir(), "hello-py")
	files := map[string]string{"module.toml": blocks["toml"][0], "bin/hello-service": blocks["python"][0],
		"job.py": blocks["python"][1]}
	for name, body := range files {
		p := filepath.Join(bundle, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The vendoring, as the page does it.
	if err := os.MkdirAll(filepath.Join(bundle, "lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	cp := exec.Command("cp", "-r", "../../sdk/python/oarbank_sdk", filepath.Join(bundle, "lib")+"/")
	if out, err := cp.CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	cmd := exec.Command(svcrunBin, "check", "--bundle", bundle, "--job", filepath.Join(bundle, "job.py"))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "12 checks: 12 passed") {
		t.Errorf("svcrun check of the page's module: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "removed it from list_owned") {
		t.Errorf("list-owned-labels ran without the job's object:\n%s", out)
	}
}
