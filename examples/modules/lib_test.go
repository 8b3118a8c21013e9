package modules

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestLibraryCopies: the sh examples ship svcrun.sh inside their bundles
// (an op reads nothing outside its bundle and the system's directories), and
// every copy is the library of sdk/sh.
func TestLibraryCopies(t *testing.T) {
	want, err := os.ReadFile("../../sdk/sh/svcrun.sh")
	if err != nil {
		t.Fatal(err)
	}
	copies, _ := filepath.Glob("*/lib/svcrun.sh")
	if len(copies) == 0 {
		t.Fatal("no example ships svcrun.sh")
	}
	for _, c := range copies {
		got, err := os.ReadFile(c)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from sdk/sh/svcrun.sh: cp sdk/sh/svcrun.sh examples/modules/%s", c, c)
		}
	}
}

// TestPythonSDKCopies: the Python examples ship oarbank_sdk inside their
// bundles, and every copy is sdk/python/oarbank_sdk, file for file
// (bytecode caches aside).
func TestPythonSDKCopies(t *testing.T) {
	want := pyTree(t, "../../sdk/python/oarbank_sdk")
	copies, _ := filepath.Glob("*/lib/oarbank_sdk")
	if len(copies) == 0 {
		t.Fatal("no example ships oarbank_sdk")
	}
	for _, c := range copies {
		got := pyTree(t, c)
		bundle := filepath.Dir(filepath.Dir(c))
		fix := fmt.Sprintf("rm -r examples/modules/%s && cp -r sdk/python/oarbank_sdk examples/modules/%s/lib/", c, bundle)
		for p, data := range want {
			if g, ok := got[p]; !ok || !bytes.Equal(g, data) {
				t.Errorf("%s/%s differs from sdk/python/oarbank_sdk/%s: %s", c, p, p, fix)
			}
		}
		for p := range got {
			if _, ok := want[p]; !ok {
				t.Errorf("%s/%s is not in sdk/python/oarbank_sdk: %s", c, p, fix)
			}
		}
	}
}

// pyTree reads the files under dir by their relative path.
func pyTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == "__pycache__" {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		files[rel], err = os.ReadFile(p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
