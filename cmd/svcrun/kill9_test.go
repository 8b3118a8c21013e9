//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oarbank/svcrun/cgroup"
	"github.com/oarbank/svcrun/internal/testhost"
)

// buildSvcrun builds the real binary once per test.
func buildSvcrun(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "svcrun")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestKill9KeepsLeasesAndAdopts kills svcrun with SIGKILL while it holds a
// lease on a running service, starts it again, and checks that the lease is
// still held, the service was adopted (started once in all), and the lease
// can be released.
func TestKill9KeepsLeasesAndAdopts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSvcrun(t)
	demo, _ := filepath.Abs("../../examples/modules/demo")
	sdir, err := os.MkdirTemp("", "k9")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sdir) })
	data := t.TempDir()
	cfg := filepath.Join(data, "svcrun.toml")
	sock := filepath.Join(sdir, "s.sock")
	node := testhost.NodeID("k9") // a base cgroup of its own
	config := func(sock string) string {
		return fmt.Sprintf("node_id = %q\ndata_dir = \"data\"\nsocket = %q\nmemory_budget_gb = 1\n"+
			"sandbox = \"best_effort\"\n\n[[modules]]\nbundle = %q\n", node, sock, demo)
	}
	os.WriteFile(cfg, []byte(config(sock)), 0o644)

	serve := func() *exec.Cmd {
		cmd := exec.Command(bin, "serve", "--config", cfg, "--log-format", "text")
		cmd.Stderr = &testLog{t}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			if err := exec.Command(bin, "status", "--socket", sock).Run(); err == nil {
				return cmd
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatal("svcrun serve did not answer within 10 s")
			}
			time.Sleep(20 * time.Millisecond) // polling a real daemon's readiness, not synchronizing the engine
		}
	}
	cli := func(args ...string) string {
		full := append([]string{args[0], "--socket", sock}, args[1:]...)
		out, err := exec.Command(bin, full...).Output()
		if err != nil {
			t.Fatalf("svcrun %v: %v", args, err)
		}
		return string(out)
	}

	s1 := serve()
	var grant struct{ Lease string }
	if err := json.Unmarshal([]byte(cli("acquire", "--capability", "kv", "--json", "--wait", "20s")),
		&grant); err != nil || grant.Lease == "" {
		t.Fatalf("acquire: %v %+v", err, grant)
	}
	// A second svcrun on the same data dir is refused, in the format of
	// every command's error.
	var second strings.Builder
	dup := exec.Command(bin, "serve", "--config", cfg, "--log-format", "text")
	dup.Stderr = &second
	if err := dup.Run(); dup.ProcessState == nil || dup.ProcessState.ExitCode() != 1 ||
		!strings.HasPrefix(second.String(), "svcrun serve: ") ||
		!strings.Contains(second.String(), "locked by another svcrun") {
		t.Errorf("second serve: %v\n%s", err, second.String())
	}
	// So is one on another data dir with the same node_id, where cgroup v2
	// containers work: it would wreck the first one's.
	if sup := cgroup.ProbeWith(cgroup.Options{NodeID: node}); sup.Available() {
		cfg2 := filepath.Join(t.TempDir(), "svcrun.toml")
		os.WriteFile(cfg2, []byte(config(filepath.Join(sdir, "s2.sock"))), 0o644)
		second.Reset()
		// The bound only guards against a second svcrun that runs.
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		dup = exec.CommandContext(ctx, bin, "serve", "--config", cfg2, "--log-format", "text")
		dup.Stderr = &second
		err := dup.Run()
		want := fmt.Sprintf(
			"svcrun serve: %s: the process containers of node_id %s (%s) are in use by another svcrun (pid %d",
			cfg2, node, sup.Base, s1.Process.Pid)
		if dup.ProcessState == nil || dup.ProcessState.ExitCode() != 1 || !strings.Contains(second.String(), want) {
			t.Errorf("serve with the same node_id: %v, want %q\n%s", err, want, second.String())
		}
	} else if os.Getenv("REQUIRE_KERNEL_FEATURES") == "1" {
		t.Errorf("REQUIRE_KERNEL_FEATURES=1: %s", sup.Containers.Reason)
	}
	s1.Process.Signal(syscall.SIGKILL)
	s1.Wait()

	s2 := serve()
	t.Cleanup(func() {
		s2.Process.Signal(syscall.SIGTERM)
		s2.Wait()
		// Leave nothing running: the demo daemon's pid file names it.
		if pid, err := os.ReadFile(filepath.Join(data, "data", "modules", "demo", "kv.pid")); err == nil {
			var p int
			fmt.Sscan(string(pid), &p)
			if p > 0 {
				syscall.Kill(p, syscall.SIGKILL)
			}
		}
		// And no cgroup: svcrun leaves its containers for the next start.
		testhost.RemoveBase(t, node)
	})
	var st struct {
		Leases []struct {
			ID       string `json:"id"`
			Admitted bool   `json:"admitted"`
		} `json:"leases"`
	}
	if err := json.Unmarshal([]byte(cli("status", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Leases) != 1 || st.Leases[0].ID != grant.Lease || !st.Leases[0].Admitted {
		t.Fatalf("after kill -9: leases %+v, want %s admitted", st.Leases, grant.Lease)
	}
	cli("release", grant.Lease)
	journal, err := os.ReadFile(filepath.Join(data, "data", "journal", "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(journal), "run demo/kv start"); n != 1 {
		t.Errorf("demo/kv started %d times across kill -9, want 1 (adopted)", n)
	}
}

// TestServeAnnouncesItsSocket: with neither --socket, --config nor
// $SVCRUN_SOCKET (and nothing at the default path), a command finds the
// svcrun serve started last, as a new user expects after
// `svcrun serve --config examples/node.toml`; the announcement goes when
// that svcrun stops.
func TestServeAnnouncesItsSocket(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	if _, err := os.Stat(DefaultSocket); err == nil {
		t.Skipf("a svcrun listens at the default %s", DefaultSocket)
	}
	bin := buildSvcrun(t)
	demo, _ := filepath.Abs("../../examples/modules/demo")
	sdir, err := os.MkdirTemp("", "an")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sdir) })
	cfg := filepath.Join(t.TempDir(), "svcrun.toml")
	sock := filepath.Join(sdir, "s.sock")
	node := testhost.NodeID("an")
	os.WriteFile(cfg, []byte(fmt.Sprintf("node_id = %q\ndata_dir = \"data\"\nsocket = %q\nmemory_budget_gb = 1\n"+
		"sandbox = \"best_effort\"\n\n[[modules]]\nbundle = %q\n", node, sock, demo)), 0o644)
	serve := exec.Command(bin, "serve", "--config", cfg, "--log-format", "text", "--stop-services-on-exit")
	serve.Stderr = &testLog{t}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer serve.Process.Kill()
	t.Cleanup(func() { testhost.RemoveBase(t, node) })
	env := []string{EnvRuntimeDir + "=" + os.Getenv(EnvRuntimeDir), "TMPDIR=" + os.Getenv("TMPDIR"),
		"PATH=" + os.Getenv("PATH")} // no SVCRUN_SOCKET
	status := func() ([]byte, error) {
		c := exec.Command(bin, "status", "--json")
		c.Env = env
		return c.Output()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := status()
		if err == nil {
			if !strings.Contains(string(out), `"node_id": "`+node+`"`) {
				t.Fatalf("status of another svcrun:\n%s", out)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status without --socket or --config never reached the svcrun just started: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	run := exec.Command(bin, "run", "--capability", "kv", "--", "echo", "hi")
	run.Env = env
	var stderr strings.Builder
	run.Stderr = &stderr
	if out, err := run.Output(); err != nil || strings.TrimSpace(string(out)) != "hi" {
		t.Errorf("svcrun run --capability kv -- echo hi: %v\n%s%s", err, out, stderr.String())
	}
	// The announced socket is a guess: the command says it took it.
	if want := "svcrun run: using " + sock +
		", the socket of the svcrun serve started last"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr does not say which socket was used and why:\n%s\nwant: %s", stderr.String(), want)
	}
	serve.Process.Signal(syscall.SIGTERM)
	serve.Wait()
	if s := announced(); s != "" {
		t.Errorf("still announced after svcrun stopped: %s", s)
	}
}
