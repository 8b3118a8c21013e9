package api

import (
	"os/exec"
	"strings"
	"testing"
)

// TestClientLinksNoDaemon keeps the daemon out of the client: a program
// that talks to svcrun links neither the agent, the engine, the store, the
// executor nor the module loader.
func TestClientLinksNoDaemon(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH to list the package's dependencies")
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		switch dep {
		case "github.com/oarbank/svcrun/agent", "github.com/oarbank/svcrun/engine", "github.com/oarbank/svcrun/store",
			"github.com/oarbank/svcrun/executor", "github.com/oarbank/svcrun/api/server",
			"github.com/oarbank/svcrun/manifest", "go.etcd.io/bbolt":
			t.Errorf("package api links %s", dep)
		}
	}
}
