package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oarbank/svcrun/api"
	"github.com/oarbank/svcrun/internal/loglimit"
	"github.com/oarbank/svcrun/internal/testhost"
)

// TestAcceptErrorsSummarised runs the real svcrun at `ulimit -n 64` and
// holds more connections than it can accept: Go's http.Server logs an
// accept error at every retry (5 ms doubling to 1 s); svcrun logs a few
// and counts the others (in metrics, asked on a connection opened
// before), and says how many it left out as it stops.
func TestAcceptErrorsSummarised(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSvcrun(t)
	sdir, err := os.MkdirTemp("", "fd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sdir) })
	dir := t.TempDir()
	cfg := filepath.Join(dir, "svcrun.toml")
	sock := filepath.Join(sdir, "s.sock")
	node := testhost.NodeID("fd")
	t.Cleanup(func() { testhost.RemoveBase(t, node) })
	if err := os.WriteFile(cfg,
		[]byte(fmt.Sprintf(
			"node_id = %q\ndata_dir = \"data\"\nsocket = %q\nmemory_budget_gb = 1\nsandbox = \"best_effort\"\n", node, sock)),
		0o644); err != nil {
		t.Fatal(err)
	}
	logs := testhost.NewLogLines(t)
	cmd := exec.Command("sh", "-c", `ulimit -n 64 && exec "$0" serve --config "$1" --log-format text`, bin, cfg)
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := false
	t.Cleanup(func() {
		if !exited {
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
		}
	})
	logs.WaitFor("API listening")
	// A connection of its own, kept by the client, before there are none.
	client := api.NewClient(sock)
	ctx := context.Background()
	if _, err := client.Metrics(ctx); err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	// Connections the kernel queues although svcrun cannot accept them.
	for range 120 {
		c, err := net.Dial("unix", sock)
		if err != nil {
			break
		}
		conns = append(conns, c)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		m, err := client.Metrics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(m, "\nsvcrun_log_lines_left_out_total 0\n") &&
			strings.Contains(m, "\nsvcrun_log_lines_left_out_total ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no accept error left out within 60 s:\n%s", m)
		}
		time.Sleep(20 * time.Millisecond) // polling a real daemon's metrics
	}
	const accept = `msg="http: Accept error`
	if n := logs.Count(accept); n == 0 || n > loglimit.Burst {
		t.Errorf("%d accept errors logged, want 1 to %d", n, loglimit.Burst)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	exited = true
	if n := logs.Count("log lines left out by the rate limit", "subject=api", "too many open files"); n != 1 {
		t.Errorf("%d summaries of the accept errors as svcrun stopped, want 1", n)
	}
}

// TestOOMScoreAdj: svcrun serve lowers its own oom_score_adj, so that the
// kernel kills a daemon before it, and the daemons its ops leave do not
// inherit it. Without CAP_SYS_RESOURCE (a container) svcrun cannot lower
// it: it is started at 500 instead, which it keeps, and its daemons must
// still get 0.
func TestOOMScoreAdj(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	c := newChaos(t)
	want := "-900"
	if !hasCapSysResource(t) {
		// A capability the host's container withholds, not a kernel
		// feature: what matters to the daemons is still checked.
		c.shell, want = "echo 500 >/proc/self/oom_score_adj", "500"
	}
	c.serve()
	c.acquire("cap-al")
	if !c.settle() {
		t.Fatal("not at rest")
	}
	adj := func(pid int) string {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/oom_score_adj", pid))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	if got := adj(c.cmd.Process.Pid); got != want {
		t.Errorf("svcrun's oom_score_adj %s, want %s", got, want)
	}
	ds := c.daemons("al")
	if len(ds) == 0 {
		t.Fatal("no daemon of chaos/al")
	}
	for _, pid := range ds {
		if got := adj(pid); got != "0" {
			t.Errorf("daemon %d's oom_score_adj %s, want 0", pid, got)
		}
	}
}

// hasCapSysResource says whether the test has CAP_SYS_RESOURCE (bit 24 of
// CapEff), which lowering oom_score_adj needs.
func hasCapSysResource(t *testing.T) bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for l := range strings.Lines(string(b)) {
		if hex, ok := strings.CutPrefix(l, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			return err == nil && caps&(1<<24) != 0
		}
	}
	return false
}
