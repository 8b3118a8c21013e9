//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oarbank/svcrun/internal/testhost"
)

// pauseLength is how long the pause test stops svcrun: longer than the
// lease's TTL and than slow's start timeout, so that both fall due during
// it.
const pauseLength = 10 * time.Second

// TestPauseIsNotCharged stops the real svcrun (SIGSTOP) for 10 s while a
// lease with a 3 s TTL is renewed and a start with a 4 s timeout runs (its
// op ends, 2 s in, during the pause), then lets it go on (SIGCONT). The
// pause is svcrun's, not the holder's nor the module's: the renewal sent
// during the pause is answered, the lease is still held, the start
// succeeds and its daemon is not killed, and svcrun says once at WARN that
// it did not run, with the length.
func TestPauseIsNotCharged(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary, stops it for 10 s")
	}
	p := newPauseNode(t)
	p.serve()

	hold := p.acquire("cap-hold", "--ttl", "3s")
	if out, code := p.cli("renew", hold); code != 0 {
		t.Fatalf("renew before the pause: exit %d %s", code, out)
	}
	slow := exec.Command(p.bin, "acquire", "--socket", p.sock, "--capability", "cap-slow", "--json", "--wait", "60s")
	slowOut := &lockedBuffer{}
	slow.Stdout, slow.Stderr = slowOut, &testLog{t}
	if err := slow.Start(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "slow's start begins", func() bool {
		b, _ := os.ReadFile(filepath.Join(p.ctl, "slow", "begun"))
		return len(b) > 0
	})

	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	// The holder renews in time (its TTL is 3 s); svcrun reads the
	// request only when it runs again.
	renew := exec.Command(p.bin, "renew", "--socket", p.sock, "--json", hold)
	renewOut := &lockedBuffer{}
	renew.Stdout, renew.Stderr = renewOut, renewOut
	if err := renew.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(pauseLength) // the fault itself: svcrun does not run for this long
	if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	t.Logf("svcrun stopped for %v", time.Since(stopped).Round(time.Millisecond))

	if err := renew.Wait(); err != nil {
		t.Errorf("the renewal sent during the pause: %v\n%s", err, renewOut)
	}
	if err := slow.Wait(); err != nil {
		t.Errorf("the acquire of slow, whose start ran during the pause: %v\n%s", err, slowOut)
	}
	var st struct {
		Services []struct{ Name, State string }
		Leases   []leaseView
	}
	out, code := p.cli("status", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("status: exit %d %s", code, out)
	}
	held := false
	for _, l := range st.Leases {
		held = held || (l.ID == hold && l.Admitted)
	}
	if !held {
		t.Errorf("lease %s, renewed during the pause, is gone: %+v", hold, st.Leases)
	}
	for _, s := range st.Services {
		if s.Name == "pause/slow" && s.State != "ready" {
			t.Errorf("slow is %s after a start that succeeded during the pause", s.State)
		}
	}
	pid, _ := os.ReadFile(filepath.Join(p.ctl, "slow", "pid"))
	if n, _ := strconv.Atoi(strings.TrimSpace(string(pid))); n == 0 || syscall.Kill(n, 0) != nil {
		t.Errorf("slow's daemon %q, started during the pause, is not running", pid)
	}
	if starts := strings.Count(readFile(t, filepath.Join(p.ctl, "slow", "begun")), "start "); starts != 1 {
		t.Errorf("slow was started %d times, want once", starts)
	}
	logs := p.log.String()
	if n := strings.Count(logs, "svcrun did not run for a while"); n != 1 {
		t.Errorf("%d WARN lines about the pause, want 1:\n%s", n, logs)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// pauseNode is a svcrun on the pause module.
type pauseNode struct {
	t              *testing.T
	bin, cfg, sock string
	node, ctl      string
	cmd            *exec.Cmd
	log            *lockedBuffer
}

func newPauseNode(t *testing.T) *pauseNode {
	bundle, _ := filepath.Abs("testdata/pause")
	ensureExec(t, filepath.Join(bundle, "bin", "svc"))
	sdir, err := os.MkdirTemp("", "pz")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sdir) })
	data := t.TempDir()
	p := &pauseNode{t: t, bin: buildSvcrun(t), cfg: filepath.Join(data, "svcrun.toml"),
		sock: filepath.Join(sdir, "s.sock"),
		node: testhost.NodeID("pause"), ctl: filepath.Join(data, "data", "modules", "pause", "ctl"), log: &lockedBuffer{}}
	cfg := fmt.Sprintf("node_id = %q\ndata_dir = \"data\"\nsocket = %q\nmemory_budget_gb = 1\n"+
		"sandbox = \"best_effort\"\n\n[[modules]]\nbundle = %q\n",
		p.node, p.sock, bundle)
	if err := os.WriteFile(p.cfg, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.cmd != nil {
			p.cmd.Process.Signal(syscall.SIGCONT)
			p.cmd.Process.Signal(syscall.SIGKILL)
			p.cmd.Wait()
		}
		for _, svc := range []string{"hold", "slow"} {
			if b, err := os.ReadFile(filepath.Join(p.ctl, svc, "pid")); err == nil {
				if n, _ := strconv.Atoi(strings.TrimSpace(string(b))); n > 0 {
					killWithChildren(n)
				}
			}
		}
		testhost.RemoveBase(t, p.node)
	})
	return p
}

func (p *pauseNode) serve() {
	p.t.Helper()
	cmd := exec.Command(p.bin, "serve", "--config", p.cfg, "--log-format", "text")
	cmd.Stderr = io.MultiWriter(&testLog{p.t}, p.log)
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	p.cmd = cmd
	waitUntil(p.t, "svcrun serve answers",
		func() bool { return exec.Command(p.bin, "status", "--socket", p.sock).Run() == nil })
}

func (p *pauseNode) cli(args ...string) (string, int) {
	p.t.Helper()
	full := append([]string{args[0], "--socket", p.sock}, args[1:]...)
	cmd := exec.Command(p.bin, full...)
	cmd.Stderr = &testLog{p.t}
	out, err := cmd.Output()
	if err != nil && cmd.ProcessState == nil {
		p.t.Fatalf("svcrun %v: %v", args, err)
	}
	return string(out), cmd.ProcessState.ExitCode()
}

func (p *pauseNode) acquire(capability string, extra ...string) string {
	p.t.Helper()
	out, code := p.cli(append([]string{"acquire", "--capability", capability, "--json", "--wait", "60s"}, extra...)...)
	var g struct{ Lease string }
	if code != 0 || json.Unmarshal([]byte(out), &g) != nil || g.Lease == "" {
		p.t.Fatalf("acquire %s: exit %d %s", capability, code, out)
	}
	return g.Lease
}
