package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/oarbank/svcrun/cgroup"
	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/executor"
	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/nodeconfig"
	"github.com/oarbank/svcrun/protocol"
	"github.com/oarbank/svcrun/sandbox"
	"github.com/oarbank/svcrun/svcenv"
)

// Config is what Check runs.
type Config struct {
	// Node is the node the ops run in: its node id, sandbox mode, the
	// module data dir (ModuleDataDirs) and DataDir, where the executor
	// keeps the records of its ops in flight.
	Node *nodeconfig.Config
	// Module is the module checked, enabled in Node.
	Module nodeconfig.LoadedModule
	// Names are the services and probes to check; all of the module's
	// that run on this host when empty.
	Names []string
	// Identity is who the ops run as (run_as), as the daemon's.
	Identity sandbox.Identity
	// NoContainers runs every service in process groups, as on a host
	// without cgroup v2.
	NoContainers bool
	// Logger gets what the executor does on its own (a stop's leftovers
	// killed); nil discards it.
	Logger *slog.Logger
	// Job, when set, is run by each service's list-owned-labels while the
	// service runs, so that there are objects to list and destroy.
	Job JobRunner
}

// pipeGrace is how long an op's pipes are read after it exits before the
// op counts as leaving them held (svcrun's daemon waits 200 ms): a daemon
// forked in the background holds them until it has applied its
// redirections, which on a busy host can take longer than svcrun waits,
// and output must not fail a module for the host's load.
const pipeGrace = 2 * time.Second

// ErrUnknownName is wrapped by the error of a name that is no service or
// probe of the module.
var ErrUnknownName = errors.New("no such service or probe")

// Check runs the checks of cfg's services and probes and reports each. It
// fails only when the checks cannot run at all (an unknown name, an
// executor that cannot be built); a failing module is a Report with
// failed checks. Whatever it started is stopped and killed before it
// returns.
func Check(ctx context.Context, cfg Config) (*Report, error) {
	t0 := time.Now()
	targets, err := targetsOf(cfg.Module.Manifest, cfg.Names)
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var mgr *cgroup.Manager
	if !cfg.NoContainers {
		mgr = cgroup.New(cgroup.Options{Name: baseName(), DataDir: cfg.Node.DataDir, Logger: log})
		defer removeBase(mgr)
	}
	xcfg := sandbox.ExecutorConfig(cfg.Node, []nodeconfig.LoadedModule{cfg.Module}, cfg.Identity)
	xcfg.Containers, xcfg.Logger, xcfg.WaitDelay = mgr, log, pipeGrace
	// RunWait posts no OpDone; emptied containers are counted, not awaited.
	x, err := executor.New(xcfg, func(engine.Event) {})
	if err != nil {
		return nil, fmt.Errorf("check module %s: %w", cfg.Module.Manifest.Name, err)
	}
	s := &session{ctx: ctx, x: x, node: cfg.Node, mod: cfg.Module.Manifest, job: cfg.Job}
	rep := &Report{Module: s.mod.Name, DataDir: cfg.Node.ModuleDataDir(s.mod.Name), SandboxMissing: []string{}}
	if plan, err := sandbox.PlanFor(cfg.Node, cfg.Module); err == nil {
		for _, l := range plan.Missing {
			rep.SandboxMissing = append(rep.SandboxMissing, string(l.Layer))
		}
	}
	for _, t := range targets {
		rep.Results = append(rep.Results, s.checkTarget(t)...)
	}
	rep.Containers = "process-group: probes always run in process groups"
	for _, t := range targets {
		if !t.Probe {
			rep.Containers = x.ContainerMode(t.String())
			break
		}
	}
	x.Close()
	if mgr != nil {
		for _, t := range targets {
			if t.Probe {
				continue
			}
			if err := mgr.Remove(t.String()); err != nil && mgr.Err() == nil {
				rep.Leftovers = append(rep.Leftovers, fmt.Sprintf("the container of %s could not be removed: %v", t, err))
			}
		}
	}
	for _, r := range rep.Results {
		switch r.Status {
		case Pass:
			rep.Passed++
		case Fail:
			rep.Failed++
		default:
			rep.Skipped++
		}
	}
	rep.DurationMS = ms(time.Since(t0))
	return rep, nil
}

// targetsOf are the services and probes of mod named (all that run on
// this host when none is), services first, in the manifest's order.
func targetsOf(mod *manifest.Module, names []string) ([]engine.Target, error) {
	host := string(svcenv.HostPlatform())
	var all []engine.Target
	known := map[string]bool{}
	for _, s := range mod.Services {
		known[s.Name] = true
		if s.RunsOn(host) {
			all = append(all, engine.Target{Module: mod.Name, Name: s.Name})
		}
	}
	for _, p := range mod.Probes {
		known[p.Name] = true
		if p.RunsOn(host) {
			all = append(all, engine.Target{Module: mod.Name, Name: p.Name, Probe: true})
		}
	}
	if len(names) == 0 {
		return all, nil
	}
	var out []engine.Target
	for _, n := range names {
		i := slices.IndexFunc(all, func(t engine.Target) bool { return t.Name == n })
		switch {
		case i >= 0:
			if !slices.Contains(out, all[i]) {
				out = append(out, all[i])
			}
		case known[n]:
			return nil, fmt.Errorf("%s/%s does not run on %s", mod.Name, n, host)
		default:
			return nil, fmt.Errorf("%w %q in module %s", ErrUnknownName, n, mod.Name)
		}
	}
	return out, nil
}

// baseName is a base cgroup of this check's own, beside svcrun's: a
// running svcrun holds the lock of its node's base.
func baseName() string {
	b := make([]byte, 4)
	rand.Read(b)
	return fmt.Sprintf("svcrun-check-%d-%s", os.Getpid(), hex.EncodeToString(b))
}

// removeBase closes the Manager and removes its base cgroup, empty by now.
func removeBase(m *cgroup.Manager) {
	base := m.Base()
	m.Close()
	if base != "" && m.Err() == nil {
		os.Remove(base)
	}
}

// session runs the ops of one Check.
type session struct {
	ctx  context.Context
	x    *executor.Executor
	node *nodeconfig.Config
	mod  *manifest.Module
	job  JobRunner
	ids  engine.OpID
}

// run runs one op of t for check as the agent would, with the protocol's
// timeout.
func (s *session) run(t engine.Target, check string, op protocol.Op, args ...string) OpRun {
	s.ids++
	res, out := s.x.RunWait(engine.RunOp{ID: s.ids, Target: t, Op: op, Args: args})
	r := newOpRun(check, op, args, res, out)
	// A stop's leftovers are stop-empties' to judge (and svcrun kills
	// them); a probe leaves nothing the checks ask about.
	if !t.Probe && op != protocol.OpStop && res.Pid != 0 {
		r.groupHeld = s.inGroup(t, res.Pid)
		for _, p := range r.groupHeld {
			r.GroupHeld = append(r.GroupHeld, p.pid)
		}
	}
	return r
}

// startTimeout is the service's start_timeout_s.
func (s *session) startTimeout(t engine.Target) time.Duration {
	for _, svc := range s.mod.Services {
		if svc.Name == t.Name {
			return svc.StartTimeout
		}
	}
	return 0
}
