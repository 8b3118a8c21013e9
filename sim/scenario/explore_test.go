package scenario

import (
	"strings"
	"testing"

	"github.com/oarbank/svcrun/sim"
)

// TestExplorationAsScenario checks that an exploration's inputs read back
// as a scenario file that runs. Seed 32's holds every kind of module change,
// also while svcrun is down, a disabled module shadowing an enabled one's
// capability and pool, a capability moved to a probe, fingerprints that
// fail and say unhealthy, and issue 25's faults: a pause of svcrun, ops it
// cannot prepare, a master that dies alone, a container holding a stray
// process at boot.
func TestExplorationAsScenario(t *testing.T) {
	for _, seed := range []uint64{32, 11, 29} {
		text := Explored(sim.Explore(seed, 150))
		sc, err := Parse("explore.txt", []byte(text))
		if err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, text)
		}
		if _, err := sc.Run(); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if seed != 32 {
			continue
		}
		for _, want := range []string{"module disabled\n", "module later\n", " reload m", " enable m", " disable m",
			" remove m", " owner-stop m", " mem_gb=", " restart\n",
			" down\n", " op=fingerprint", "healthy=false", "[[probes]]\nname = \"c", " pause ", " member-exited m",
			"outcomes=prepare", " stray"} {
			if !strings.Contains(text, want) {
				t.Errorf("seed %d: no %q in the scenario:\n%s", seed, want, text)
			}
		}
	}
}
