package scenario

import (
	"flag"
	"testing"

	"github.com/oarbank/svcrun/sim"
)

var (
	replaySeeds = flag.Int("replay-seeds", 25, "TestExploredJournalsReplay: how many seeds (from 1)")
	replaySteps = flag.Int("replay-steps", 200, "TestExploredJournalsReplay: the steps of each history")
)

// TestExploredJournalsReplay: the journals of random histories (crashes,
// restarts, objects and reaps, pressure, doctor, several services with
// pools and memory, ops at the same instant) become scenarios that
// reproduce them step by step.
func TestExploredJournalsReplay(t *testing.T) {
	for seed := uint64(1); seed <= uint64(*replaySeeds); seed++ {
		sc, err := Parse("explore.txt", []byte(Explored(sim.Explore(seed, *replaySteps))))
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		lines := recordJournal(t, sc)
		if _, err := FromJournal("svcsim replay", lines, JournalWindow{}); err != nil {
			t.Errorf("seed %d: %v", seed, err)
		}
	}
}
