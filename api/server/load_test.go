package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oarbank/svcrun/agent"
	"github.com/oarbank/svcrun/api"
	"github.com/oarbank/svcrun/engine"
)

// loadScript is every service of the load module: "bin/svc NAME OP". Its
// state is a file in the module's data dir; every op answers at once.
const loadScript = `#!/bin/sh
f="$OARBANK_MODULE_DATA/$1.up"
r=false
[ -f "$f" ] && r=true
case $2 in
fingerprint) printf '{"healthy":true,"running":%s,"pools":{"pool-%s":%s}}\n' "$r" "$1" "${LOAD_SLOTS:-4}" ;;
start) : >"$f"; echo '{"ok":true,"changed":true}' ;;
stop) rm -f "$f"; echo '{"ok":true,"changed":true}' ;;
status|ready) printf '{"running":%s,"ready":%s}\n' "$r" "$r" ;;
list_owned) echo '{"objects":[]}' ;;
destroy) echo '{"ok":true,"changed":false}' ;;
*) echo "unknown op $2" >&2; exit 64 ;;
esac
`

// loadBundle writes a module "load" with n on_demand services s00.. each
// with pool pool-sNN (4 tokens) and capability cap-sNN.
func loadBundle(t testing.TB, n int) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "svc"), []byte(loadScript), 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("[module]\nname = \"load\"\nversion = \"1\"\n")
	for i := range n {
		name := fmt.Sprintf("s%02d", i)
		fmt.Fprintf(&b,
			"\n[[services]]\nname = %q\nexec = [\"bin/svc\", %q]\nidle_timeout_s = "+
				"600\nstart_timeout_s = 60\npools = [\"pool-%s\"]\ncapabilities = [\"cap-%s\"]\n", name, name, name, name)
	}
	if err := os.WriteFile(filepath.Join(dir, "module.toml"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestLoadConcurrentLeases: 500 concurrent acquire+release over the API
// against 50 services with 4 tokens each, so that requests queue. Every
// acquire gets one answer (all admitted), every lease is admitted and
// released exactly once (the journal), no snapshot shows more tokens or
// references than admitted leases account for, and at the end nothing is
// held.
func TestLoadConcurrentLeases(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	const services, clients = 50, 500
	bundle := loadBundle(t, services)
	n := startNode(t, fmt.Sprintf("[[modules]]\nbundle = %q\n", bundle))
	ctx := ctxT(t, 3*time.Minute)

	// A watcher checks every snapshot for double counting.
	watchCtx, stopWatch := context.WithCancel(ctx)
	var snapshots atomic.Int64
	var watchErr atomic.Value
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		for watchCtx.Err() == nil {
			st, err := n.c.Status(watchCtx)
			if err != nil {
				continue
			}
			snapshots.Add(1)
			if err := consistent(st); err != nil {
				watchErr.Store(err)
				return
			}
		}
	}()

	var (
		wg       sync.WaitGroup
		answers  atomic.Int64
		mu       sync.Mutex
		leases   = map[string]bool{}
		failures []string
		lat      []time.Duration
	)
	start := time.Now()
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("s%02d", i%services)
			t0 := time.Now()
			g, err := n.c.Acquire(ctx, api.AcquireRequest{
				Job: fmt.Sprintf("job-%d", i), Capabilities: []string{"cap-" + name},
				Pools: map[string]int64{"pool-" + name: 1}, Wait: api.Duration(2 * time.Minute),
			})
			answers.Add(1)
			if err != nil {
				mu.Lock()
				failures = append(failures, fmt.Sprintf("acquire %d: %v", i, err))
				mu.Unlock()
				return
			}
			d := time.Since(t0)
			time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond) // hold it a little
			rerr := n.c.Release(ctx, g.Lease)
			mu.Lock()
			defer mu.Unlock()
			lat = append(lat, d)
			if leases[g.Lease] {
				failures = append(failures, "lease granted twice: "+g.Lease)
			}
			leases[g.Lease] = true
			if len(g.Services) != 1 || g.Services[0] != "load/"+name {
				failures = append(failures, fmt.Sprintf("acquire %d: services %v", i, g.Services))
			}
			if rerr != nil {
				failures = append(failures, fmt.Sprintf("release %s: %v", g.Lease, rerr))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	stopWatch()
	<-watchDone
	if err, _ := watchErr.Load().(error); err != nil {
		t.Errorf("inconsistent snapshot: %v", err)
	}
	if len(failures) > 0 {
		t.Fatalf("%d failures, first: %s", len(failures), strings.Join(failures[:min(10, len(failures))], "\n"))
	}
	if answers.Load() != clients || len(leases) != clients {
		t.Fatalf("%d answers, %d distinct leases, want %d", answers.Load(), len(leases), clients)
	}
	st, err := n.c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Leases) != 0 || len(st.LiveAttempts) != 0 {
		t.Errorf("after every release: %d leases, %d live attempts", len(st.Leases), len(st.LiveAttempts))
	}
	ready := 0
	for _, s := range st.Services {
		if s.Refs != 0 || s.Waiting != 0 {
			t.Errorf("%s: refs %d, waiting %d after every release", s.Name, s.Refs, s.Waiting)
		}
		if s.Ready {
			ready++
		}
	}
	for _, p := range st.Pools {
		if p.Reserved != 0 {
			t.Errorf("pool %s: %d tokens still reserved", p.Name, p.Reserved)
		}
	}
	if ready != services {
		t.Errorf("%d of %d services ready", ready, services)
	}
	t.Logf("%d acquire+release over the API against %d services in %v; %d consistent snapshots; "+
		"acquire p50 %v p99 %v (includes the services' start)",
		clients, services, elapsed.Round(time.Millisecond), snapshots.Load(), pct(lat, 50), pct(lat, 99))

	// The journal: every lease admitted once and released once.
	n.stop(t)
	admitted, released := journalCounts(t, filepath.Join(n.dataDir, "journal", agent.JournalName))
	for id := range leases {
		if admitted[id] != 1 || released[id] != 1 {
			t.Errorf("lease %s: admitted %d times, released %d times in the journal", id, admitted[id], released[id])
		}
	}
}

// consistent checks a snapshot: per pool, reserved = the admitted leases'
// tokens <= capacity; per service, refs = the admitted leases that name it.
func consistent(st api.Status) error {
	reserved := map[string]int64{}
	refs := map[string]int{}
	for _, l := range st.Leases {
		if !l.Admitted {
			continue
		}
		for p, k := range l.Pools {
			reserved[p] += k
		}
		for _, s := range l.Services {
			refs[s]++
		}
	}
	for _, p := range st.Pools {
		if p.Reserved != reserved[p.Name] || p.Reserved > p.Capacity {
			return fmt.Errorf("pool %s: reserved %d of %d, admitted leases hold %d", p.Name,
				p.Reserved, p.Capacity, reserved[p.Name])
		}
	}
	for _, s := range st.Services {
		if s.Refs != refs[s.Name] {
			return fmt.Errorf("%s: refs %d, admitted leases naming it %d", s.Name, s.Refs, refs[s.Name])
		}
	}
	return nil
}

func journalCounts(t testing.TB, file string) (admitted, released map[string]int) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	admitted, released = map[string]int{}, map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e engine.JournalEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("journal: %v", err)
		}
		for _, fx := range e.Effects {
			if rest, ok := strings.CutPrefix(fx, "admitted "); ok {
				id, _, _ := strings.Cut(rest, " ")
				admitted[id]++
			} else if id, ok := strings.CutPrefix(fx, "released "); ok {
				released[id]++
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return admitted, released
}

// pct is the p-th percentile of d (sorted in place).
func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	i := (len(d)*p + 99) / 100
	return d[max(0, min(len(d)-1, i-1))]
}
