//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oarbank/svcrun/api"
	"github.com/oarbank/svcrun/internal/testhost"
)

// TestChaosKill9DuringOps kills the real svcrun with SIGKILL in the middle
// of each kind of op (a slow start of an on_demand and of an always
// service, a slow stop, a destroy, a ready poll), more than 50 times, and
// after every restart checks that no service has two daemons and that
// every lease answered before a kill is still held. The ops of the module
// in testdata/chaos say when they begin (ctl/<service>/begun); each kill
// follows such a line, never a sleep.
func TestChaosKill9DuringOps(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary, kills it 50 times")
	}
	c := newChaos(t)
	c.serve()
	c.leases[c.acquire("cap-al")] = true
	c.settle()

	kinds := []struct {
		name, svc, op string // the op of the service svcrun is killed in
		provoke       func() // makes the op begin
		after         func() // once the new svcrun answers
	}{
		{"start of an on_demand service", "od", "start", func() {
			c.acquireAsync("cap-od") // fails when svcrun dies
		}, func() {
			// A job asks again at once, while the old start still runs.
			c.leases[c.acquire("cap-od")] = true
		}},
		{"ready poll after adoption", "al", "ready", func() {
			c.kill() // at rest: the next svcrun adopts al and polls ready
			c.serve()
		}, nil},
		{"stop of an idle service", "od", "stop", func() {
			for id := range c.leases {
				if id != c.al {
					c.cli("release", id)
					delete(c.leases, id)
				}
			}
		}, nil},
		{"start of an always service after its crash", "al", "start", func() {
			c.killDaemon("al")
		}, nil},
		{"destroy of an orphaned object", "al", "destroy", func() {
			c.orphan("al")
		}, nil},
	}
	const kills = 55
	t0 := time.Now()
	for i := range kills {
		k := kinds[i%len(kinds)]
		base := c.begun(k.svc, k.op)
		k.provoke()
		c.waitBegun(k.svc, k.op, base)
		c.kill()
		c.serve()
		if k.after != nil {
			k.after()
		}
		if !c.settle() {
			t.Fatalf("kill %d, during the %s: see above", i+1, k.name)
		}
	}
	t.Logf("%d kills of svcrun during ops in %v", kills, time.Since(t0).Round(time.Millisecond))
}

// chaos is one node on the chaos module, served by the real binary.
type chaos struct {
	t      *testing.T
	bin    string
	cfg    string
	sock   string
	node   string
	ctl    string // the module data dir's ctl/
	cmd    *exec.Cmd
	asking *exec.Cmd       // an acquire whose answer svcrun's kill cuts off
	leases map[string]bool // answered, not released: must survive every kill
	al     string          // the lease held on al throughout
	// shell, when set, is a sh command run before svcrun serve is
	// exec'd in its process.
	shell string
}

func newChaos(t *testing.T) *chaos {
	bin := buildSvcrun(t)
	bundle, _ := filepath.Abs("testdata/chaos")
	ensureExec(t, filepath.Join(bundle, "bin", "svc"))
	sdir, err := os.MkdirTemp("", "ch")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sdir) })
	data := t.TempDir()
	c := &chaos{
		t: t, bin: bin, cfg: filepath.Join(data, "svcrun.toml"), sock: filepath.Join(sdir, "s.sock"),
		node: testhost.NodeID("chaos"), ctl: filepath.Join(data, "data", "modules", "chaos", "ctl"),
		leases: map[string]bool{},
	}
	// The orphans it makes belong to attempts no lease of this node had:
	// only a sweep lists a service for them, so sweeps come every second.
	cfg := fmt.Sprintf("node_id = %q\ndata_dir = \"data\"\nsocket = %q\nmemory_budget_gb = 1\nsandbox = \"best_effort\"\n"+
		"status_period_s = 0.2\nfingerprint_period_s = 1\nreap_period_s = 0.3\nreap_sweep_period_s = 1\n\n[[modules]]\n"+
		"bundle = %q\n", c.node, c.sock, bundle)
	if err := os.WriteFile(c.cfg, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c.cmd != nil {
			c.cmd.Process.Signal(syscall.SIGKILL)
			c.cmd.Wait()
		}
		for _, pid := range c.daemons("") {
			killWithChildren(pid)
		}
		testhost.RemoveBase(t, c.node)
	})
	return c
}

func ensureExec(t *testing.T, path string) {
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&0o111 != 0o111 {
		os.Chmod(path, fi.Mode()|0o755)
	}
}

// serve starts svcrun and waits until it answers.
func (c *chaos) serve() {
	c.t.Helper()
	cmd := exec.Command(c.bin, "serve", "--config", c.cfg, "--log-format", "text", "--log-level", "warn")
	if c.shell != "" {
		cmd = exec.Command("sh", append([]string{"-c", c.shell + ` && exec "$0" "$@"`, c.bin}, cmd.Args[1:]...)...)
	}
	cmd.Stderr = &testLog{c.t}
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.cmd = cmd
	deadline := time.Now().Add(60 * time.Second)
	for exec.Command(c.bin, "status", "--socket", c.sock).Run() != nil {
		if time.Now().After(deadline) {
			c.t.Fatal("svcrun serve did not answer within 60 s")
		}
		time.Sleep(10 * time.Millisecond) // polling a real daemon's readiness, not synchronizing the engine
	}
}

// kill ends svcrun with SIGKILL, and then a command still asking it.
func (c *chaos) kill() {
	c.cmd.Process.Signal(syscall.SIGKILL)
	c.cmd.Wait()
	c.cmd = nil
	if c.asking != nil {
		c.asking.Process.Kill()
		c.asking.Wait()
		c.asking = nil
	}
}

func (c *chaos) cli(args ...string) string {
	c.t.Helper()
	full := append([]string{args[0], "--socket", c.sock}, args[1:]...)
	out, err := exec.Command(c.bin, full...).Output()
	if err != nil {
		c.t.Fatalf("svcrun %v: %v", args, err)
	}
	return string(out)
}

// acquire takes a lease on capability and returns it once answered.
func (c *chaos) acquire(capability string) string {
	c.t.Helper()
	var grant struct{ Lease string }
	out := c.cli("acquire", "--capability", capability, "--json", "--wait", "60s")
	if err := json.Unmarshal([]byte(out), &grant); err != nil || grant.Lease == "" {
		c.t.Fatalf("acquire %s: %v %q", capability, err, out)
	}
	if capability == "cap-al" {
		c.al = grant.Lease
	}
	return grant.Lease
}

// acquireAsync asks for a lease and does not wait for the answer: svcrun is
// killed before it comes, and so is the asking command (kill), which would
// otherwise ask the next svcrun again and hold a lease the test does not
// know of.
func (c *chaos) acquireAsync(capability string) {
	cmd := exec.Command(c.bin, "acquire", "--socket", c.sock, "--capability", capability, "--json", "--wait", "60s")
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.asking = cmd
}

// begun counts the ops of svc that began so far.
func (c *chaos) begun(svc, op string) int {
	data, _ := os.ReadFile(filepath.Join(c.ctl, svc, "begun"))
	n := 0
	for line := range strings.Lines(string(data)) {
		if strings.HasPrefix(line, op+" ") {
			n++
		}
	}
	return n
}

// waitBegun waits for an op of svc to begin after the first base.
func (c *chaos) waitBegun(svc, op string, base int) {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for c.begun(svc, op) <= base {
		if time.Now().After(deadline) {
			c.t.Fatalf("no %s of chaos/%s began within 60 s", op, svc)
		}
		time.Sleep(2 * time.Millisecond) // a file growing: the op's own marker
	}
}

// killDaemon crashes a service's daemon.
func (c *chaos) killDaemon(svc string) {
	c.t.Helper()
	ds := c.daemons(svc)
	if len(ds) != 1 {
		c.t.Fatalf("chaos/%s has daemons %v, want one", svc, ds)
	}
	syscall.Kill(ds[0], syscall.SIGKILL)
}

// orphan gives the service an object of an attempt that is gone: the next
// reap round destroys it.
func (c *chaos) orphan(svc string) {
	c.t.Helper()
	dir := filepath.Join(c.ctl, svc, "objects")
	os.MkdirAll(dir, 0o755)
	id := fmt.Sprintf("vol-%d", time.Now().UnixNano())
	obj := fmt.Sprintf(
		`{"id":%q,"kind":"volume","labels":{"oarbank.node":%q,"oarbank.service":"chaos/%s","oarbank.attempt_id":"gone-%s"}}`,
		id, c.node, svc, id)
	if err := os.WriteFile(filepath.Join(dir, id+".json"), []byte(obj), 0o644); err != nil {
		c.t.Fatal(err)
	}
}

// daemons lists the live daemons of svc ("" for every service): processes
// whose argv carries the marker of the service and node.
func (c *chaos) daemons(svc string) []int {
	marker := []byte("chaosd-" + svc)
	if svc == "" {
		marker = []byte("chaosd-")
	}
	node := []byte("-" + c.node)
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		args := bytes.Split(bytes.TrimSuffix(cmdline, []byte{0}), []byte{0})
		last := args[len(args)-1]
		if !bytes.HasPrefix(last, marker) || !bytes.HasSuffix(last, node) {
			continue
		}
		if stat, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil && !bytes.Contains(stat, []byte(") Z")) {
			out = append(out, pid)
		}
	}
	return out
}

type chaosStatus struct {
	OpsInFlight int `json:"ops_in_flight"`
	Services    []struct {
		Name  string `json:"name"`
		State string `json:"state"`
	} `json:"services"`
	Leases []struct {
		ID       string `json:"id"`
		Admitted bool   `json:"admitted"`
	} `json:"leases"`
}

// settle waits until both services are at rest (al ready, od ready or
// stopped, no op in flight), checking meanwhile and then that no service
// has more than one daemon, that a ready service has one, and that every
// answered lease is held. It reports false (having logged why) when not.
func (c *chaos) settle() bool {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		for _, svc := range []string{"od", "al"} {
			if ds := c.daemons(svc); len(ds) > 1 {
				c.t.Errorf("chaos/%s has %d daemons: %v", svc, len(ds), ds)
				return false
			}
		}
		var st chaosStatus
		if err := json.Unmarshal([]byte(c.cli("status", "--json")), &st); err != nil {
			c.t.Fatal(err)
		}
		state := map[string]string{}
		for _, s := range st.Services {
			state[strings.TrimPrefix(s.Name, "chaos/")] = s.State
		}
		if st.OpsInFlight == 0 && state["al"] == "ready" && (state["od"] == "ready" || state["od"] == "stopped") {
			var held []string
			for _, l := range st.Leases {
				if l.Admitted {
					held = append(held, l.ID)
				}
			}
			for id := range c.leases {
				if !slices.Contains(held, id) {
					c.t.Errorf("lease %s, answered before the kill, is gone: held %v", id, held)
					return false
				}
			}
			for svc, s := range state {
				want := 0
				if s == "ready" {
					want = 1
				}
				if ds := c.daemons(svc); len(ds) != want {
					c.t.Errorf("chaos/%s is %s with daemons %v", svc, s, ds)
					return false
				}
			}
			return true
		}
		if time.Now().After(deadline) {
			c.t.Errorf("not at rest within 60 s: %+v", st)
			return false
		}
		time.Sleep(20 * time.Millisecond) // polling a real daemon's state
	}
}

// killWithChildren kills pid and its children: a chaos daemon is a sh
// waiting for its sleep, which killing the sh alone would leave running
// for ever, reparented and outside any cgroup the test removes.
func killWithChildren(pid int) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The parent is the second field after the command, which ends at
		// the last ')'.
		rest := stat[bytes.LastIndexByte(stat, ')')+1:]
		if f := bytes.Fields(rest); len(f) > 1 && string(f[1]) == strconv.Itoa(pid) {
			if child, err := strconv.Atoi(e.Name()); err == nil {
				syscall.Kill(child, syscall.SIGKILL)
			}
		}
	}
	syscall.Kill(pid, syscall.SIGKILL)
}

// TestChaosDataDirDeleted deletes the data dir (rm -rf) under the real
// svcrun while it holds a lease on a running service: within a bounded
// wait (on status saying so, not on the clock) every request that needs a
// write is refused with the reason and what to do, status and metrics
// show it, and svcrun and the service's daemon run on. After a restart
// the state is empty (the leases are gone with it) and no service has two
// daemons.
func TestChaosDataDirDeleted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	c := newChaos(t)
	c.serve()
	lease := c.acquire("cap-al")
	if !c.settle() {
		t.Fatal("not at rest before the fault")
	}
	daemon := c.daemons("al")
	deadline := time.Now().Add(60 * time.Second)
	// rm -rf, again while an op writes into the dir it empties.
	data := filepath.Dir(filepath.Dir(filepath.Dir(c.ctl)))
	for err := os.RemoveAll(data); err != nil; err = os.RemoveAll(data) {
		if !errors.Is(err, syscall.ENOTEMPTY) || time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
	var st struct {
		StoreUnlinked string `json:"store_unlinked"`
	}
	for st.StoreUnlinked == "" {
		if time.Now().After(deadline) {
			t.Fatal("svcrun did not notice its data dir deleted within 60 s")
		}
		time.Sleep(20 * time.Millisecond) // polling a real daemon's state
		if err := json.Unmarshal([]byte(c.cli("status", "--json")), &st); err != nil {
			t.Fatal(err)
		}
	}
	const why = "was deleted under svcrun (its open file is no longer linked at that path)"
	for _, args := range [][]string{
		{"renew", lease},
		{"acquire", "--capability", "cap-od", "--wait", "0"},
		{"release", lease},
		{"reap"},
		{"reload"},
	} {
		cmd := exec.Command(c.bin, append([]string{args[0], "--socket", c.sock}, args[1:]...)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Run(); err == nil || !strings.Contains(stderr.String(), why) ||
			!strings.Contains(stderr.String(), "restart svcrun") {
			t.Errorf("svcrun %v: %v, want refused with %q and what to do\n%s", args, err, why, stderr.String())
		}
	}
	if !strings.Contains(st.StoreUnlinked, why) {
		t.Errorf("status store_unlinked = %q", st.StoreUnlinked)
	}
	if out := c.cli("status"); !strings.Contains(out, "REFUSING WRITES") {
		t.Errorf("svcrun status does not say it refuses writes:\n%s", out)
	}
	m, err := api.NewClient(c.sock).Metrics(context.Background())
	if err != nil || !strings.Contains(m, "\nsvcrun_store_unlinked 1\n") {
		t.Errorf("metrics: %v, want svcrun_store_unlinked 1\n%s", err, m)
	}
	if err := c.cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("svcrun is gone: %v", err)
	}
	if now := c.daemons("al"); !slices.Equal(now, daemon) {
		t.Errorf("chaos/al's daemons %v became %v: running services must be left alone", daemon, now)
	}

	// The restart starts from an empty state: the lease is gone with its
	// file; the services are adopted, not started a second time, although
	// their module's files in the data dir are gone too (the fingerprint
	// says running: false while the container holds the daemon).
	t.Run("restart", func(t *testing.T) {
		c.t = t
		c.kill()
		c.serve()
		c.leases, c.al = map[string]bool{}, ""
		if !c.settle() {
			t.Fatal("after the restart: see above")
		}
	})
}
