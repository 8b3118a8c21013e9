//go:build linux

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// chaosPause is how long TestChaosPauseDuringOps stops svcrun each time:
// past the 3 s it takes to notice a pause, and past the TTL of the lease
// held throughout.
const chaosPause = 4 * time.Second

// TestChaosPauseDuringOps stops the real svcrun (SIGSTOP, then SIGCONT
// 4 s later) in the middle of each kind of op, while `svcrun run` holds a
// lease with a 3 s TTL that it renews every second, and checks after each
// pause what the kill -9 chaos checks (no service with two daemons, a ready
// service with one, every answered lease held) and that the TTL lease was
// never lost: a pause of svcrun is charged to nobody.
func TestChaosPauseDuringOps(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary, stops it 8 times")
	}
	c := newChaos(t)
	c.serve()
	c.leases[c.acquire("cap-al")] = true
	c.settle()

	leaseFile := filepath.Join(t.TempDir(), "lease")
	run := exec.Command(c.bin, "run", "--socket", c.sock, "--capability", "cap-al", "--ttl", "3s", "--",
		"sh", "-c", `echo "$OARBANK_LEASE_ID" >`+leaseFile+`.tmp && mv `+leaseFile+`.tmp `+leaseFile+` && exec sleep 100000`)
	runErr := &lockedBuffer{}
	run.Stderr = runErr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		run.Process.Signal(syscall.SIGTERM)
		run.Wait()
	})
	waitUntil(t, "svcrun run holds its lease", func() bool {
		_, err := os.Stat(leaseFile)
		return err == nil
	})
	ttlLease := strings.TrimSpace(readFile(t, leaseFile))
	c.leases[ttlLease] = true

	var odAsk *exec.Cmd
	odOut := &lockedBuffer{}
	kinds := []struct {
		name, svc, op string
		provoke       func()
		after         func() // once svcrun runs again
	}{
		{"start of an on_demand service", "od", "start", func() {
			odAsk = exec.Command(c.bin, "acquire", "--socket", c.sock, "--capability", "cap-od", "--json", "--wait", "60s")
			odOut.mu.Lock()
			odOut.b.Reset()
			odOut.mu.Unlock()
			odAsk.Stdout = odOut
			if err := odAsk.Start(); err != nil {
				t.Fatal(err)
			}
		}, func() {
			if err := odAsk.Wait(); err != nil {
				t.Fatalf("the acquire whose start a pause interrupted: %v %s", err, odOut)
			}
			var g struct{ Lease string }
			json.Unmarshal([]byte(odOut.String()), &g)
			c.leases[g.Lease] = true
		}},
		{"stop of an idle service", "od", "stop", func() {
			for id := range c.leases {
				if id != c.al && id != ttlLease {
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
	// A pause during the ready poll after an adoption would need a restart
	// of svcrun, whose own length the TTL lease may not outlive on a
	// loaded machine: the kill -9 chaos covers that poll.
	const pauses = 8
	t0 := time.Now()
	for i := range pauses {
		k := kinds[i%len(kinds)]
		base := c.begun(k.svc, k.op)
		k.provoke()
		c.waitBegun(k.svc, k.op, base)
		if err := c.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		time.Sleep(chaosPause) // the fault itself: svcrun does not run for this long
		if err := c.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		if k.after != nil {
			k.after()
		}
		if !c.settle() {
			t.Fatalf("pause %d, during the %s: see above", i+1, k.name)
		}
	}
	if strings.Contains(runErr.String(), "unknown") || strings.Contains(runErr.String(), "expired") {
		t.Errorf("svcrun run lost its lease to a pause:\n%s", runErr)
	}
	t.Logf("%d pauses of svcrun during ops in %v", pauses, time.Since(t0).Round(time.Millisecond))
}
