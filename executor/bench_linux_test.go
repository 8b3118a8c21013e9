package executor

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/protocol"
)

// BenchmarkFingerprintOp measures one fingerprint op of a tiny static C
// service through Run and Outcome (spawn, environment, process group,
// timeout, pipes, Decode), next to the C floor: the same binary run by a
// posix_spawn loop doing the same work (testdata/spawnloop.c). Both come
// from one run:
//
//	go test -run '^$' -bench FingerprintOp -benchtime 2000x ./executor
//
// executor reports ns/op and x-c: its time over the C loop's for as many
// runs, the C loop running in blocks between its blocks so that both see the
// same machine. c-posix_spawn reports the C loop's own ns/op. Target:
// x-c <= 1.2 unsandboxed (docs/decisions.md, Targets: <= 1.3 sandboxed).
func BenchmarkFingerprintOp(b *testing.B) {
	if _, err := exec.LookPath("gcc"); err != nil {
		b.Skip("gcc is needed to build the static C service")
	}
	f := newFixture(b)
	fp := filepath.Join(f.bundle, "bin", "fp")
	loop := filepath.Join(b.TempDir(), "spawnloop")
	gccStatic(b, "testdata/fp.c", fp)
	gccStatic(b, "testdata/spawnloop.c", loop)
	spec := Spec{Path: fp, Args: []string{"fingerprint"}, Dir: f.bundle, Env: f.env, Timeout: 5 * time.Second}
	ctx := context.Background()

	// cLoop runs the C loop n times with the op's environment and returns
	// its ns per run.
	cLoop := func(b *testing.B, n int) float64 {
		cmd := exec.Command(loop, append([]string{strconv.Itoa(n), f.bundle, fp}, spec.Args...)...)
		cmd.Env = f.env
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		// The reaper is on (TestMain): children are started through it.
		err := RunCmd(cmd)
		if err != nil {
			b.Fatalf("spawnloop: %v: %s", err, errb.Bytes())
		}
		ns, err := strconv.ParseFloat(strings.TrimSpace(out.String()), 64)
		if err != nil {
			b.Fatal(err)
		}
		return ns
	}

	// vsC runs op b.N times against the C loop.
	vsC := func(b *testing.B, op func() Result) {
		// The C loop runs in blocks between blocks of ops, so that both
		// see the same machine: x-c is robust to a noisy neighbour.
		const block = 250
		var cTotal float64 // ns
		cRuns := 0
		cBlock := func(n int) {
			b.StopTimer()
			cTotal += cLoop(b, n) * float64(n)
			cRuns += n
			b.StartTimer()
		}
		for i := 0; i < b.N; i++ {
			if i > 0 && i%block == 0 {
				cBlock(block)
			}
			res := op()
			if o := Outcome(protocol.OpFingerprint, protocol.RoleService, res); o.Failure != engine.FailNone {
				b.Fatalf("outcome %+v", o)
			}
		}
		cBlock(b.N - cRuns)
		b.StopTimer()
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/cTotal, "x-c")
	}
	b.Run("executor", func(b *testing.B) {
		vsC(b, func() Result { return Run(ctx, spec) })
	})
	// The same op cloned into a cgroup v2, with the Manager's op
	// accounting, as the adapter runs a service's op.
	b.Run("executor-cgroup", func(b *testing.B) {
		m := newContainers(b)
		cspec := spec
		vsC(b, func() Result {
			fd, err := m.OpStart("bench/fp")
			if err != nil {
				b.Fatal(err)
			}
			cspec.Hooks.SysProcAttr = withCgroupFD(nil, fd)
			res := Run(ctx, cspec)
			m.OpEnd("bench/fp")
			return res
		})
	})
	b.Run("c-posix_spawn", func(b *testing.B) {
		b.ReportMetric(cLoop(b, b.N), "ns/op")
	})
}

func gccStatic(b *testing.B, src, out string) {
	b.Helper()
	cmd := exec.Command("gcc", "-static", "-O2", "-o", out, src)
	var msg bytes.Buffer
	cmd.Stdout, cmd.Stderr = &msg, &msg
	err := RunCmd(cmd)
	if err != nil {
		b.Fatalf("gcc %s: %v\n%s", src, err, msg.Bytes())
	}
}
