package sandbox

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/executor"
	"github.com/oarbank/svcrun/internal/testhost"
	"github.com/oarbank/svcrun/protocol"
	"github.com/oarbank/svcrun/svcenv"
)

// BenchmarkSandboxedFingerprintOp measures one sandboxed fingerprint op of
// the tiny static C service of BenchmarkFingerprintOp (executor), next to
// the same C floor (a posix_spawn loop, ../executor/testdata/spawnloop.c),
// both in one run:
//
//	go test -run '^$' -bench SandboxedFingerprintOp -benchtime 2000x ./sandbox
//
// x-c is each variant's time over the C loop's for as many runs (the C
// loop runs in blocks between its blocks). Target (docs/decisions.md,
// Targets): a full sandboxed op <= 1.3x the C floor; today's figure is
// bench/README.md's row op-sandboxed. Variants:
//
//   - unsandboxed: executor.Spawn without hooks (BenchmarkFingerprintOp's
//     "executor").
//   - sandboxed: executor.Spawn with the module's hooks: fork on the
//     confined thread (Landlock, no_new_privs), run_as nobody when root,
//     RLIMIT_CORE 0.
//   - sandboxed-netns: the same for a module with network = "none" (the
//     confined thread is in the empty network namespace).
//   - netns-per-op: the rejected design for network = "none":
//     CLONE_NEWNET in each op's Cloneflags.
//   - unsandboxed-cgroup and sandboxed-cgroup: the same cloned into the
//     service's cgroup v2, as BenchmarkFingerprintOp's "executor-cgroup":
//     the op end to end (spawn, environment, cgroup, Landlock, timeout,
//     read, validate).
//   - executor-full-unsandboxed and executor-full: the whole path the
//     agent runs, without and with the sandbox: Executor.Run (its
//     goroutine, the semaphore, OpDone posted to a channel) of a service
//     with its cgroup.
//   - c-posix_spawn: the C loop's own ns/op.
func BenchmarkSandboxedFingerprintOp(b *testing.B) {
	if _, err := exec.LookPath("gcc"); err != nil {
		b.Skip("gcc is needed to build the static C service")
	}
	runAs := ""
	if os.Geteuid() == 0 {
		runAs = testhost.RunAs(b).Name // the tests' own user, not the image's nobody
	}
	n := newNode(b, nodeOptions{sandbox: "best_effort", runAs: runAs,
		modules: []testModule{{"bench", "host"}, {"benchnone", "none"}}})
	for _, m := range []string{"bench", "benchnone"} {
		fp := filepath.Join(n.root, "bundles", m, "bin", "escape") // replaced by the static fp
		if err := gcc(fp, "../executor/testdata/fp.c", "-static"); err != nil {
			b.Fatal(err)
		}
	}
	loop := filepath.Join(b.TempDir(), "spawnloop")
	if err := gcc(loop, "../executor/testdata/spawnloop.c", "-static"); err != nil {
		b.Fatal(err)
	}
	id, err := IdentityOf(n.cfg)
	if err != nil {
		b.Fatal(err)
	}
	bundle := filepath.Join(n.root, "bundles", "bench")
	fp := filepath.Join(bundle, "bin", "escape")
	spec := executor.Spec{Path: fp, Args: []string{"fingerprint"}, Dir: bundle, Timeout: 5 * time.Second}
	env, err := svcenv.Environ(svcenv.Input{Platform: svcenv.Linux, NodeID: "n1", Module: "bench", Service: "esc",
		ModuleData: n.cfg.ModuleDataDir("bench"), User: id.User})
	if err != nil {
		b.Fatal(err)
	}
	spec.Env = env
	hooksFor := func(module string) executor.Hooks {
		b.Helper()
		for _, m := range n.mods {
			if m.Manifest.Name == module {
				p, err := PlanFor(n.cfg, m)
				if err != nil {
					b.Fatal(err)
				}
				b.Logf("%s: missing %v", module, p.Missing)
				return hooksOf(p)
			}
		}
		b.Fatalf("no module %s", module)
		return executor.Hooks{}
	}
	x, done := n.executor(b, nil) // prepares the data dirs with their owner
	for _, m := range []string{"bench", "benchnone"} {
		if o := run(b, x, done, m, "esc"); o.Failure != engine.FailNone {
			b.Fatalf("%s: %+v", m, o)
		}
	}
	ctx := context.Background()

	cLoop := func(b *testing.B, count int) float64 {
		cmd := exec.Command(loop, strconv.Itoa(count), bundle, fp, "fingerprint")
		cmd.Env = env
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := executor.RunCmd(cmd)
		if err != nil {
			b.Fatalf("spawnloop: %v: %s", err, errb.Bytes())
		}
		ns, err := strconv.ParseFloat(strings.TrimSpace(out.String()), 64)
		if err != nil {
			b.Fatal(err)
		}
		return ns
	}
	vsC := func(b *testing.B, op func() engine.Outcome) {
		const block = 250
		var cTotal float64
		cRuns := 0
		cBlock := func(count int) {
			b.StopTimer()
			cTotal += cLoop(b, count) * float64(count)
			cRuns += count
			b.StartTimer()
		}
		for i := 0; i < b.N; i++ {
			if i > 0 && i%block == 0 {
				cBlock(block)
			}
			if o := op(); o.Failure != engine.FailNone {
				b.Fatalf("outcome %+v", o)
			}
		}
		cBlock(b.N - cRuns)
		b.StopTimer()
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/cTotal, "x-c")
	}
	runSpec := func(s executor.Spec) func() engine.Outcome {
		return func() engine.Outcome {
			return executor.Outcome(protocol.OpFingerprint, protocol.RoleService, executor.Spawn(ctx, s))
		}
	}

	b.Run("unsandboxed", func(b *testing.B) { vsC(b, runSpec(spec)) })
	sb := spec
	sb.Hooks = hooksFor("bench")
	b.Run("sandboxed", func(b *testing.B) { vsC(b, runSpec(sb)) })
	sn := spec
	sn.Hooks = hooksFor("benchnone")
	sn.Path = filepath.Join(n.root, "bundles", "benchnone", "bin", "escape")
	sn.Dir = filepath.Join(n.root, "bundles", "benchnone")
	b.Run("sandboxed-netns", func(b *testing.B) {
		if hostFacts().netnsReason != "" {
			b.Skip(hostFacts().netnsReason)
		}
		vsC(b, runSpec(sn))
	})
	// inCgroup runs s cloned into the service's container, with the
	// Manager's op accounting, as the executor composes it.
	inCgroup := func(b *testing.B, s executor.Spec) func() engine.Outcome {
		cg := newContainers(b)
		inner := s.Hooks.SysProcAttr
		return func() engine.Outcome {
			fd, err := cg.OpStart("bench/esc")
			if err != nil {
				b.Fatal(err)
			}
			sc := s
			sc.Hooks.SysProcAttr = func(a *syscall.SysProcAttr) {
				if inner != nil {
					inner(a)
				}
				a.UseCgroupFD, a.CgroupFD = true, fd
			}
			o := runSpec(sc)()
			cg.OpEnd("bench/esc")
			return o
		}
	}
	b.Run("unsandboxed-cgroup", func(b *testing.B) { vsC(b, inCgroup(b, spec)) })
	b.Run("sandboxed-cgroup", func(b *testing.B) { vsC(b, inCgroup(b, sb)) })
	b.Run("executor-full-unsandboxed", func(b *testing.B) {
		cg := newContainers(b)
		x, done := n.executorWith(b, cg, nil)
		vsC(b, func() engine.Outcome { return run(b, x, done, "bench", "esc") })
	})
	b.Run("executor-full", func(b *testing.B) {
		cg := newContainers(b)
		x, done := n.executor(b, cg)
		vsC(b, func() engine.Outcome { return run(b, x, done, "bench", "esc") })
	})
	pn := sb
	inner := sb.Hooks.SysProcAttr
	pn.Hooks.SysProcAttr = func(a *syscall.SysProcAttr) {
		inner(a)
		a.Cloneflags |= syscall.CLONE_NEWNET
	}
	// Last: the kernel tears the namespaces down in the background.
	b.Run("netns-per-op", func(b *testing.B) {
		if hostFacts().netnsReason != "" {
			b.Skip(hostFacts().netnsReason)
		}
		vsC(b, runSpec(pn))
	})
	b.Run("c-posix_spawn", func(b *testing.B) {
		b.ReportMetric(cLoop(b, b.N), "ns/op")
	})
}
