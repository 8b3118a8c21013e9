package scenario

import (
	"testing"

	"github.com/oarbank/svcrun/sim"
)

// TestExplorationAsScenario checks that an exploration's inputs read back
// as a scenario file that runs.
func TestExplorationAsScenario(t *testing.T) {
	for _, seed := range []uint64{3, 11, 29} {
		text := Explored(sim.Explore(seed, 150))
		sc, err := Parse("explore.txt", []byte(text))
		if err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, text)
		}
		if _, err := sc.Run(); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}
