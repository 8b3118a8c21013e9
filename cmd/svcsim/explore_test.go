package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/oarbank/svcrun/internal/cli"
	"github.com/oarbank/svcrun/sim"
)

// fakeExplore fails the given seeds and records the seeds it ran.
type fakeExplore struct {
	mu   sync.Mutex
	ran  []uint64
	fail []uint64
}

func (f *fakeExplore) one(seed uint64, steps int) sim.Exploration {
	f.mu.Lock()
	f.ran = append(f.ran, seed)
	f.mu.Unlock()
	x := sim.Exploration{Seed: seed, Steps: steps, Inputs: []string{"run 1s"}}
	if slices.Contains(f.fail, seed) {
		x.Err = errors.New("invariant broken")
		x.Recent = []string{"the last line"}
	}
	return x
}

func runFakeExplore(f *fakeExplore, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	env := &cli.Env{Stdout: &out, Stderr: &errb}
	p := &cli.Program{Name: "svcsim",
		Commands: map[string]cli.Command{"explore": {Run: func(_ context.Context, env *cli.Env, args []string) error {
			return explore(env, args, f.one)
		}}}}
	code := p.Run(context.Background(), env, append([]string{"explore"}, args...))
	return code, out.String(), errb.String()
}

// TestExploreReportsFirstFailingSeed: whatever the workers, the failure
// reported is the first failing seed, in the words svcsim always used.
func TestExploreReportsFirstFailingSeed(t *testing.T) {
	dir := t.TempDir()
	var stderrs []string
	for _, workers := range []string{"1", "2", "4"} {
		out := filepath.Join(dir, "fail-"+workers+".txt")
		f := &fakeExplore{fail: []uint64{17, 19}}
		code, stdout, stderr := runFakeExplore(f, "--seeds", "30", "--seed", "11", "--steps", "10", "--workers", workers,
			"--out", out)
		if code != 1 {
			t.Fatalf("%s workers: exit %d\n%s%s", workers, code, stdout, stderr)
		}
		want := "svcsim explore: seed 17: invariant broken\n  the end of the trace:\n  the last line\n" +
			"svcsim explore: hint: reproduce: svcsim explore --seeds 1 --seed 17 --steps 10; the inputs as a scenario: " + out +
			" (svcsim run " + out + ")\n"
		if stderr != want {
			t.Errorf("%s workers: stderr\n%s\nwant\n%s", workers, stderr, want)
		}
		if !strings.Contains(stdout, "7 seed(s) in ") || !strings.Contains(stdout, " seeds/s on "+workers+" worker(s)") {
			t.Errorf("%s workers: no rate line for the 7 seeds reported:\n%s", workers, stdout)
		}
		data, err := os.ReadFile(out)
		if err != nil ||
			!strings.HasPrefix(string(data), "# svcsim explore --seeds 1 --seed 17 --steps 10\n# failed: invariant broken\n") {
			t.Errorf("%s workers: scenario file %v:\n%.200s", workers, err, data)
		}
		stderrs = append(stderrs, strings.ReplaceAll(stderr, out, "OUT"))
	}
	if stderrs[0] != stderrs[1] || stderrs[0] != stderrs[2] {
		t.Errorf("the failure report depends on the workers:\n%s", strings.Join(stderrs, "\n--\n"))
	}
}

func TestExploreShards(t *testing.T) {
	var all []uint64
	for i := range 3 {
		f := &fakeExplore{}
		shard := string(rune('1'+i)) + "/3"
		code, stdout, stderr := runFakeExplore(f, "--seeds", "10", "--seed", "1", "--steps", "5", "--workers", "2", "--shard",
			shard)
		if code != 0 || !strings.HasPrefix(stdout, "exploring shard "+shard+": ") || !strings.Contains(stdout, "ok: ") {
			t.Fatalf("shard %s: exit %d\n%s%s", shard, code, stdout, stderr)
		}
		all = append(all, f.ran...)
	}
	slices.Sort(all)
	if want := []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}; !slices.Equal(all, want) {
		t.Errorf("the three shards ran %v, want %v", all, want)
	}
	for _, args := range [][]string{
		{"--shard", "1/2"},                // no --seed: shards would split different runs
		{"--seed", "1", "--shard", "3/2"}, // no such shard
		{"--seed", "1", "--shard", "0/2"}, // shards count from 1
		{"--seed", "1", "--shard", "2"},   // not I/N
		{"--seed", "1", "--shard", "a/2"}, // not a number
		{"--seed", "1", "--workers", "0"}, // nobody to explore
	} {
		f := &fakeExplore{}
		if code, _, _ := runFakeExplore(f, args...); code != 2 || len(f.ran) != 0 {
			t.Errorf("%v: exit %d after %d seed(s), want a usage error before any", args, code, len(f.ran))
		}
	}
}

// TestExploreRealSeeds runs a few real seeds through the command on two
// workers.
func TestExploreRealSeeds(t *testing.T) {
	if code, out, errs := run(t, "explore", "--seeds", "4", "--seed", "1", "--steps", "50", "--workers", "2"); code != 0 ||
		!strings.Contains(out, "ok: 4 seed(s)") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
}

// TestExploreCollector: unless GOGC or GOMEMLIMIT says otherwise, the
// collector runs only once the heap reaches a fixed size per worker, not
// whenever it has grown by a share of a seed's small live heap; after the
// run it is as it was.
func TestExploreCollector(t *testing.T) {
	type policy struct {
		percent int
		limit   int64
	}
	current := func() policy {
		p := debug.SetGCPercent(-1)
		debug.SetGCPercent(p)
		return policy{p, debug.SetMemoryLimit(-1)}
	}
	before := current()
	for _, tc := range []struct {
		gogc, memlimit, workers string
		want                    policy
	}{
		{"", "", "1", policy{-1, exploreHeapPerWorker}},
		{"", "", "2", policy{-1, 2 * exploreHeapPerWorker}},
		{"", "", "8", policy{-1, 3 * exploreHeapPerWorker}}, // no more workers than the 3 seeds
		{"100", "", "2", before},
		{"", "1GiB", "2", before},
	} {
		t.Setenv("GOGC", tc.gogc)
		t.Setenv("GOMEMLIMIT", tc.memlimit)
		var during []policy
		var mu sync.Mutex
		one := func(seed uint64, steps int) sim.Exploration {
			mu.Lock()
			during = append(during, current())
			mu.Unlock()
			return sim.Exploration{Seed: seed, Steps: steps}
		}
		env := &cli.Env{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}}
		if err := explore(env, []string{"--seeds", "3", "--seed", "1", "--workers", tc.workers}, one); err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		for _, p := range during {
			if p != tc.want {
				t.Errorf("GOGC=%q GOMEMLIMIT=%q, %s workers: the collector at %+v during the run, want %+v",
					tc.gogc, tc.memlimit, tc.workers, p, tc.want)
			}
		}
		if after := current(); after != before {
			t.Errorf("%+v: the collector at %+v after the run, want %+v as before", tc, after, before)
		}
	}
}
