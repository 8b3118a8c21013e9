package modules

import (
	"bytes"
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
