package schemas

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLibraryNotLinked keeps the JSON Schema library a dependency of tests
// only: linked into svcrun, its init would compile the meta-schemas of five
// drafts at every process start, svcrun run's included.
func TestLibraryNotLinked(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go tool on PATH: %v", err)
	}
	// Without -test, go list -deps follows the packages' own imports only.
	out, err := exec.Command(goTool, "list", "-deps", "github.com/oarbank/svcrun/...").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed only %v", deps)
	}
	for _, d := range deps {
		if strings.HasPrefix(d, "github.com/santhosh-tekuri/jsonschema") {
			t.Errorf("%s is linked into the module's packages; it may be imported by tests only", d)
		}
	}
}
