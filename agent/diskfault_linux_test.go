package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/internal/testhost"
	"github.com/oarbank/svcrun/store"
)

// TestFullDataDir runs svcrun on a data dir that fills up (a tmpfs): it
// stays up, refuses new leases with the reason once a checkpoint finds no
// space, still releases, answers status and metrics, logs the failing
// journal once a minute at most, keeps every lease it acknowledged, and
// takes leases again once space is freed.
func TestFullDataDir(t *testing.T) {
	cfg := testConfig(t)
	data := filepath.Join(filepath.Dir(cfg), "data")
	testhost.Tmpfs(t, data, "24m")

	logs := testhost.NewLogLines(t)
	a, err := Open(Options{PressureFile: noPressure, ConfigPath: cfg,
		Logger: slog.New(slog.NewTextHandler(logs, nil)), NoContainers: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil && !errors.Is(err, store.ErrFull) {
				t.Errorf("Run: %v", err)
			}
		}
	}
	defer stop()
	guard, stopGuard := context.WithTimeout(context.Background(), 120*time.Second) // only a guard against a hang
	defer stopGuard()

	filler := filepath.Join(data, "filler")
	testhost.FillDisk(t, filler)
	began := time.Now()
	// Leases with long job names, held: the checkpoint of the log must
	// grow the state file, and finds no space.
	var held []engine.LeaseID
	var refusal error
	for len(held) < 10000 {
		g, err := a.Acquire(guard, AcquireRequest{Job: strings.Repeat("j", 400)})
		if err != nil {
			refusal = err
			break
		}
		held = append(held, g.Lease)
	}
	if !errors.Is(refusal, store.ErrFull) || !errors.Is(refusal, syscall.ENOSPC) ||
		!strings.HasPrefix(refusal.Error(), "the data dir is full: "+data+": no space left on device") {
		t.Fatalf("after %d leases: Acquire = %v, want the data dir is full", len(held), refusal)
	}
	t.Logf("refused after %d leases: %v", len(held), refusal)
	if _, err := a.Renew(guard, held[0]); !errors.Is(err, store.ErrFull) {
		t.Errorf("Renew while full = %v", err)
	}
	// Releases still are stored (in the log's reserve).
	for _, id := range held[:10] {
		if err := a.Release(guard, id); err != nil {
			t.Fatalf("Release while full: %v", err)
		}
	}
	held = held[10:]
	st, err := a.Status(guard)
	if err != nil || len(st.Leases) != len(held) || !strings.HasPrefix(st.StoreFull, "the data dir is full: ") {
		t.Fatalf("status while full: %d leases (want %d), store_full %q, %v", len(st.Leases), len(held), st.StoreFull, err)
	}
	var m bytes.Buffer
	if err := a.WriteMetrics(guard, &m); err != nil || !strings.Contains(m.String(), "svcrun_store_full 1\n") {
		t.Errorf("metrics while full: %v\n%s", err, m.String())
	}
	if n, most := logs.Count("journal: steps are not journaled"), 1+int(time.Since(began)/time.Minute); n == 0 ||
		n > most {
		t.Errorf("%d log lines about the failing journal in %v, want 1 to %d", n, time.Since(began).Round(time.Second), most)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	for { // the checkpoint is tried again after its backoff (seconds)
		g, err := a.Acquire(guard, AcquireRequest{Job: "after"})
		if err == nil {
			held = append(held, g.Lease)
			break
		}
		if !errors.Is(err, store.ErrFull) {
			t.Fatalf("Acquire once space is freed: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	logs.WaitFor("the data dir has space again")
	if st, _ := a.Status(guard); st.StoreFull != "" {
		t.Errorf("status after space returned: store_full %q", st.StoreFull)
	}
	stop()
	if got := len(storedLeases(t, cfg)); got != len(held) {
		t.Errorf("%d leases stored, want %d", got, len(held))
	}
}

// TestFrozenDataDir: with the data dir's file system frozen (fsfreeze -f,
// on an ext4 loop device), status and metrics answer from the last stored
// step while an acquire's write waits; the wait is logged at ERROR, and
// once the file system thaws the acquire completes and the write is
// logged with its duration.
func TestFrozenDataDir(t *testing.T) {
	if os.Geteuid() != 0 {
		testhost.SkipOrFail(t, "a loop device and fsfreeze need root")
	}
	cfg := testConfig(t)
	data := filepath.Join(filepath.Dir(cfg), "data")
	img := filepath.Join(t.TempDir(), "ext4.img")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("sh", "-c",
		"truncate -s 64M "+img+" && mkfs.ext4 -q -F "+img+" && mount -o loop "+img+" "+data).CombinedOutput(); err != nil {
		testhost.SkipOrFail(t, fmt.Sprintf("an ext4 loop device: %v: %s", err, out))
	}
	t.Cleanup(func() { exec.Command("umount", data).Run() })
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			if out, err := exec.Command("fsfreeze", "-u", data).CombinedOutput(); err != nil {
				t.Errorf("thaw: %v: %s", err, out)
			}
		}
	}

	logs := testhost.NewLogLines(t)
	a, err := Open(Options{PressureFile: noPressure, ConfigPath: cfg,
		Logger: slog.New(slog.NewTextHandler(logs, nil)), NoContainers: true})
	if err != nil {
		t.Fatal(err)
	}
	a.slowWrite = 100 * time.Millisecond // the test waits for the log lines, not the clock
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() { cancel(); <-done }()
	guard, stopGuard := context.WithTimeout(context.Background(), 60*time.Second) // only a guard against a hang
	defer stopGuard()
	if _, err := a.Acquire(guard, AcquireRequest{Job: "before"}); err != nil {
		t.Fatal(err)
	}

	waits, slows := logs.Count("level=ERROR",
		"write waiting for the disk"), logs.Count("level=ERROR", `msg="slow `, "write\" took=")
	if out, err := exec.Command("fsfreeze", "-f", data).CombinedOutput(); err != nil {
		testhost.SkipOrFail(t, fmt.Sprintf("fsfreeze: %v: %s", err, out))
	}
	defer thaw() // before Run is stopped, also when the test fails
	acquired := make(chan error, 1)
	go func() {
		_, err := a.Acquire(guard, AcquireRequest{Job: "frozen"})
		acquired <- err
	}()
	// The loop waits in the acquire's store write, or before it in the
	// journal write of an earlier step: either is logged.
	logs.WaitForMore(waits, "level=ERROR", "write waiting for the disk")
	st, err := answersAtOnce(t, func() (Status, error) { return a.Status(guard) })
	if err != nil || len(st.Leases) != 1 {
		t.Fatalf("status while the data dir is frozen: %d leases (want 1: the last stored step), %v", len(st.Leases), err)
	}
	m, err := answersAtOnce(t, func() (string, error) {
		var m bytes.Buffer
		err := a.WriteMetrics(guard, &m)
		return m.String(), err
	})
	if err != nil || !strings.Contains(m, `svcrun_leases{state="admitted"} 1`) {
		t.Errorf("metrics while the data dir is frozen: %v\n%s", err, m)
	}
	thaw()
	if err := <-acquired; err != nil {
		t.Fatalf("Acquire once thawed: %v", err)
	}
	logs.WaitForMore(slows, "level=ERROR", `msg="slow `, `write" took=`)
}
