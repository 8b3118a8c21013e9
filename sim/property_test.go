package sim

import (
	"flag"
	"os"
	"testing"

	"pgregory.net/rapid"
)

// TestMain raises rapid's default to 200 checks per property; pass
// -rapid.checks=N (or RAPID_CHECKS) for long runs.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.checks" })
	if !set && os.Getenv("RAPID_CHECKS") == "" {
		_ = flag.Set("rapid.checks", "200")
	}
	os.Exit(m.Run())
}

const propNode = "n1"

// rapidDraw adapts rapid to Draw, so that failures shrink.
func rapidDraw(t *rapid.T) drawer {
	return func(name string, lo, hi int) int { return rapid.IntRange(lo, hi).Draw(t, name) }
}

// TestProperties drives random histories through the simulated world and
// checks every invariant after every step.
func TestProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := genNode(rapidDraw(t), propNode)
		w := Build(n.Config, n.Modules, n.Behaviours)
		c := watchInvariants(w, n.Modules, propNode)
		w.Boot()
		w.RunFor(0)
		a := newActor(w, n, c)
		actions := map[string]func(*rapid.T){
			"": func(t *rapid.T) {
				if err := w.Err(); err != nil {
					t.Fatal(err)
				}
				if err := c.err(); err != nil {
					t.Fatal(err)
				}
			},
		}
		for _, kind := range actionKinds {
			kind := kind
			actions[kind] = func(t *rapid.T) {
				before := admittedLeases(w)
				if !a.Act(kind, rapidDraw(t)) {
					t.Skip("nothing to " + kind)
				}
				if after := admittedLeases(w); kind == "agent restart" && before != after {
					c.Failf("leases before the restart %s, after %s", before, after)
				}
			}
		}
		t.Repeat(actions)
	})
}
