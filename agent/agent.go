// Package agent is svcrun's daemon: the engine and the shared driver loop
// (package runtime) on real time, real executables and the bbolt store, and
// what only production has: the event journal, configuration reloads,
// logs, and the entry points the local API calls.
//
// # Concurrency
//
// One goroutine, Run's, owns the engine: it takes events from a
// clockwork.Real scheduler and steps the driver. Everything else (API
// handlers, executor goroutines, signal handlers) only posts events to
// that scheduler; a call that needs an answer registers a waiter first and
// is answered from the loop through the driver's Answer hook. Queries of
// state run as closures on the loop, so the engine is never shared.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"sync"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/oarbank/svcrun/cgroup"
	"github.com/oarbank/svcrun/clockwork"
	"github.com/oarbank/svcrun/executor"
	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/nodeconfig"
	"github.com/oarbank/svcrun/runtime"
	"github.com/oarbank/svcrun/sandbox"
	"github.com/oarbank/svcrun/store"
)

// StateFile is the bbolt file in the data dir.
const StateFile = "state.db"

// Options configure an Agent.
type Options struct {
	ConfigPath string
	Logger     *slog.Logger
	// StopServicesOnExit stops every running service before Run returns;
	// by default services are left running for the next start to adopt.
	StopServicesOnExit bool
	// ShutdownGrace bounds how long Run waits for ops in flight when it is
	// asked to stop. Default 10 s.
	ShutdownGrace time.Duration
	// Clock is the real clock; tests may pass a mock.
	Clock clock.Clock
	// NewExecutor builds the executor; nil uses package executor.
	NewExecutor func(executor.Config, func(runtime.Event)) (Executor, error)
	// NoContainers runs ops in process groups only, without cgroup v2
	// containers (tests that must not touch the host's cgroups).
	NoContainers bool
}

// Executor is what the agent needs of its executor.
type Executor interface {
	runtime.Executor
	Update(executor.Config) error
	Close()
}

// Agent is a running svcrun.
type Agent struct {
	opts   Options
	log    *slog.Logger
	cfg    *nodeconfig.Config
	mods   []*manifest.Module
	db     *store.DB
	sched  *clockwork.Real[runtime.Event]
	exec   Executor
	engine *runtime.Engine
	driver *runtime.Driver
	jour   *Journal
	// containers are the per-service cgroups; nil when not used.
	containers *cgroup.Manager
	// identity is who ops run as (run_as when svcrun is root).
	identity sandbox.Identity
	// sandboxHost is what this host can enforce, probed once at start;
	// sandboxMissing what each module runs without (or is refused for).
	sandboxHost    string
	sandboxMissing []string

	mu      sync.Mutex
	waiters map[runtime.LeaseID][]chan runtime.Effect
	subs    map[chan Record]bool
	stopped bool
	started time.Time
	steps   uint64
}

// call is an agent-internal event: a closure run on the loop.
type call struct{ fn func() }

func (call) EventName() string { return "call" }

// Open loads the configuration and its modules and opens the store; it
// does not start anything yet.
func Open(opts Options) (*Agent, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.ShutdownGrace <= 0 {
		opts.ShutdownGrace = 10 * time.Second
	}
	if opts.Clock == nil {
		opts.Clock = clock.New()
	}
	cfg, err := nodeconfig.Load(opts.ConfigPath)
	if err != nil {
		return nil, err
	}
	mods, err := nodeconfig.LoadModules(cfg)
	if err != nil {
		return nil, err
	}
	for _, m := range mods {
		for _, w := range m.Warnings {
			opts.Logger.Warn(w, "module", m.Name)
		}
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("data dir %s: %w", cfg.DataDir, err)
	}
	db, err := store.Open(filepath.Join(cfg.DataDir, StateFile), store.Options{})
	if err != nil {
		return nil, err
	}
	jour, err := OpenJournal(filepath.Join(cfg.DataDir, "journal"))
	if err != nil {
		db.Close()
		return nil, err
	}
	a := &Agent{
		opts: opts, log: opts.Logger, cfg: cfg, mods: mods, db: db, jour: jour,
		sched:   clockwork.NewReal[runtime.Event](opts.Clock),
		waiters: map[runtime.LeaseID][]chan runtime.Effect{},
		subs:    map[chan Record]bool{},
	}
	if !opts.NoContainers {
		a.containers = cgroup.New(cgroup.Options{NodeID: cfg.NodeID})
		if err := a.containers.Err(); err != nil {
			a.log.Warn("no cgroup v2 process containers: ops run in process groups (kill, freeze and crash detection by signals and polling)", "reason", err)
		}
		for _, m := range a.containers.Support().Missing() {
			a.log.Warn("process container: missing", "what", m)
		}
	}
	id, err := sandbox.IdentityOf(cfg)
	if err != nil {
		jour.Close()
		db.Close()
		return nil, fmt.Errorf("%s: %w", cfg.File, err)
	}
	a.identity = id
	a.sandboxHost = sandbox.Probe().String()
	a.sandboxMissing = sandbox.Report(cfg, mods)
	for _, l := range a.sandboxMissing {
		a.log.Warn("sandbox: " + l)
	}
	newExec := opts.NewExecutor
	if newExec == nil {
		newExec = func(c executor.Config, post func(runtime.Event)) (Executor, error) { return executor.New(c, post) }
	}
	a.exec, err = newExec(a.execConfig(cfg, mods), a.sched.Post)
	if err != nil {
		if a.containers != nil {
			a.containers.Close()
		}
		jour.Close()
		db.Close()
		return nil, err
	}
	return a, nil
}

// Config is the configuration the agent runs with.
func (a *Agent) Config() *nodeconfig.Config { return a.cfg }

func (a *Agent) execConfig(cfg *nodeconfig.Config, mods []*manifest.Module) executor.Config {
	c := executor.Config{Node: cfg, Modules: mods, Containers: a.containers, Hooks: sandbox.For(cfg, mods)}
	if u, err := user.Current(); err == nil {
		c.User = u.Username
	}
	if a.identity.Owner != nil {
		c.User, c.Owner = a.identity.User, a.identity.Owner
	}
	return c
}

func engineConfig(cfg *nodeconfig.Config) runtime.Config {
	return runtime.Config{
		NodeID: cfg.NodeID, Platform: cfg.Platform, MemoryBudgetGB: cfg.MemoryBudgetGB,
		MaxConcurrentOps: cfg.MaxConcurrentOps, StatusPeriod: cfg.StatusPeriod,
		FingerprintPeriod: cfg.FingerprintPeriod, ReapPeriod: cfg.ReapPeriod,
	}
}

func moduleSpecs(cfg *nodeconfig.Config, mods []*manifest.Module) []runtime.ModuleSpec {
	var specs []runtime.ModuleSpec
	for i, m := range mods {
		if m != nil {
			specs = append(specs, runtime.ModuleSpec{Module: m, Enabled: cfg.Modules[i].Enabled})
		}
	}
	return specs
}

// Run boots the engine from the store and runs the loop until ctx is done;
// then it stops taking requests, lets ops in flight finish (within
// ShutdownGrace), optionally stops the services, and closes the store.
func (a *Agent) Run(ctx context.Context) error {
	state, err := a.db.State()
	if err != nil {
		return err
	}
	a.engine = runtime.New()
	a.driver = &runtime.Driver{
		Engine: a.engine, Sched: a.sched, Exec: a.exec, Store: a.db,
		Answer: a.answer,
		Trace:  a.trace,
	}
	a.started = a.opts.Clock.Now()
	a.log.Info("svcrun starting", "node", a.cfg.NodeID, "config", a.cfg.File, "data_dir", a.cfg.DataDir,
		"modules", len(a.mods), "leases_restored", len(state.Leases))
	if err := a.driver.Step(runtime.Boot{Config: engineConfig(a.cfg), Modules: moduleSpecs(a.cfg, a.mods), State: state}); err != nil {
		return a.shutdown(err)
	}
	err = a.loop(ctx)
	return a.shutdown(err)
}

// loop steps events until ctx is done or the store fails.
func (a *Agent) loop(ctx context.Context) error {
	for {
		ev, ok := a.sched.Next(ctx)
		if !ok {
			return nil
		}
		if c, isCall := ev.(call); isCall {
			c.fn()
			continue
		}
		if err := a.driver.Step(ev); err != nil {
			return err
		}
	}
}

// shutdown ends Run: no more requests; ops in flight may finish within the
// grace; waiters are told the agent is stopping.
func (a *Agent) shutdown(cause error) error {
	a.mu.Lock()
	a.stopped = true
	for id, ws := range a.waiters {
		for _, w := range ws {
			close(w)
		}
		delete(a.waiters, id)
	}
	a.mu.Unlock()
	if cause == nil {
		a.drain()
		if a.opts.StopServicesOnExit {
			a.stopAll()
		}
	}
	a.thawAll()
	a.exec.Close()
	if a.containers != nil {
		// The containers stay, with their daemons, for the next svcrun.
		a.containers.Close()
	}
	jerr := a.jour.Close()
	derr := a.db.Close()
	a.log.Info("svcrun stopped", "error", errors.Join(cause, jerr, derr))
	return errors.Join(cause, jerr, derr)
}

// drain keeps stepping (without new requests) until no op is in flight or
// the grace is over.
func (a *Agent) drain() {
	ctx, cancel := context.WithTimeout(context.Background(), a.opts.ShutdownGrace)
	defer cancel()
	for a.engine.Status().OpsInFlight > 0 {
		ev, ok := a.sched.Next(ctx)
		if !ok {
			a.log.Warn("ops still in flight at shutdown: killed", "ops", a.engine.Status().OpsInFlight)
			return
		}
		switch ev.(type) {
		case runtime.OpDone:
		default:
			continue // timers and requests wait for the next start
		}
		if err := a.driver.Step(ev); err != nil {
			a.log.Error("persist at shutdown", "error", err)
			return
		}
	}
}

// thawAll resumes frozen services before svcrun exits: the next svcrun
// does not know they were frozen, and a service frozen with SIGSTOP (the
// process-group fallback) whose group is orphaned by svcrun's exit would be
// sent SIGHUP by the kernel and die.
func (a *Agent) thawAll() {
	if a.engine == nil {
		return
	}
	for _, s := range a.engine.Status().Services {
		if s.Frozen {
			a.exec.Thaw(s.Name)
			a.log.Info("thawed before exit", "subject", s.Name)
		}
	}
}

// stopAll disables every module so the engine stops their services, and
// steps until they are stopped or the grace is over.
func (a *Agent) stopAll() {
	var specs []runtime.ModuleSpec
	for _, s := range moduleSpecs(a.cfg, a.mods) {
		s.Enabled = false
		specs = append(specs, s)
	}
	if err := a.driver.Step(runtime.Reload{Modules: specs}); err != nil {
		a.log.Error("stop services at exit", "error", err)
		return
	}
	a.drain()
}

// post hands an event to the loop, unless the agent is stopping.
func (a *Agent) post(ev runtime.Event) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopped {
		return ErrStopping
	}
	a.sched.Post(ev)
	return nil
}

// ErrStopping is returned to requests that arrive while svcrun stops.
var ErrStopping = errors.New("svcrun is stopping")

// onLoop runs fn on the loop and waits for it.
func (a *Agent) onLoop(ctx context.Context, fn func()) error {
	done := make(chan struct{})
	if err := a.post(call{fn: func() { fn(); close(done) }}); err != nil {
		return err
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// answer routes the driver's answers to the callers waiting for them and to
// the event stream.
func (a *Agent) answer(now time.Time, f runtime.Effect) {
	a.publish(now, f)
	id := runtime.LeaseOf(f)
	if id == "" {
		return
	}
	a.mu.Lock()
	ws := a.waiters[id]
	delete(a.waiters, id)
	a.mu.Unlock()
	for _, w := range ws {
		w <- f
	}
}

func (a *Agent) wait(id runtime.LeaseID) chan runtime.Effect {
	ch := make(chan runtime.Effect, 1)
	a.mu.Lock()
	a.waiters[id] = append(a.waiters[id], ch)
	a.mu.Unlock()
	return ch
}

func (a *Agent) unwait(id runtime.LeaseID, ch chan runtime.Effect) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ws := a.waiters[id]
	for i, w := range ws {
		if w == ch {
			a.waiters[id] = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(a.waiters[id]) == 0 {
		delete(a.waiters, id)
	}
}

// trace journals every step and logs the decisions.
func (a *Agent) trace(now time.Time, ev runtime.Event, effects []runtime.Effect) {
	a.steps++
	if err := a.jour.Write(now, ev, effects); err != nil {
		a.log.Warn("journal", "error", err)
	}
	for _, f := range effects {
		switch f := f.(type) {
		case runtime.Note:
			a.log.Info(f.Text, "subject", f.Subject)
		case runtime.RunOp:
			a.log.Debug("op", "target", f.Target.String(), "op", string(f.Op), "id", uint64(f.ID))
		case runtime.Kill:
			a.log.Warn("kill process container", "service", f.Service)
		}
	}
	if _, isOp := ev.(runtime.OpDone); !isOp {
		if err := a.jour.Flush(); err != nil {
			a.log.Warn("journal", "error", err)
		}
	}
}
