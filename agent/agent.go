// Package agent is svcrun's daemon: the engine and the shared driver loop
// (package engine) on real time, real executables and the bbolt store, and
// what only production has: the event journal, configuration reloads,
// logs, and the entry points the local API calls.
//
// # Concurrency
//
// One goroutine, Run's, owns the engine: it takes events from a
// clockwork.Real scheduler and steps the driver. Everything else (API
// handlers, executor goroutines, signal handlers) only posts events to
// that scheduler; a call that needs an answer registers a waiter first and
// is answered from the loop through the driver's Answer hook. Changes run
// as closures on the loop, so the engine is never shared. Status and
// metrics read an immutable snapshot the loop publishes once a step is
// stored: when a reader has asked for one since the last (it waits for
// the loop to finish the step in progress), when the step answered a
// caller, or at most once a second otherwise, so that the steps of ops
// cost no copy of every service when nobody reads it. While a loop write
// has waited SlowWrite for a stalled disk they do not wait: they answer
// from the last snapshot published, which has every step a caller was
// answered for and is at most a second of other steps behind. No snapshot
// has a step that is not stored. A step that answered a caller yields the
// loop's goroutine before that snapshot and the step's journal line are
// made: the answer's send only readies the caller, on the loop's P.
//
// # Disk faults
//
// A store write that takes longer than SlowWrite is logged at ERROR, when
// it has waited that long and with its duration when it ends; so is a
// journal write (the loop writes the journal too), at most once a minute.
// While the data dir is full (store.ErrFull) new and renewed leases are
// refused before they reach the engine, with an error wrapping
// store.ErrFull; everything else goes on, and the store recovers by
// itself. The journal failing never stops svcrun: its failures are
// logged at most once a minute. Every SignalsEvery the loop also looks
// whether the state file and its log are still linked where they were
// opened (checkLinked); once one is not (the data dir deleted), every
// request that needs a write is refused with an error wrapping
// store.ErrUnlinked until svcrun restarts, and nothing else changes.
//
// # The node's signals
//
// Every SignalsEvery the loop reads the host's memory pressure
// (/proc/pressure/memory) and compares the wall clock with the monotonic
// one, from a timer event like the watchdog's. Pressure over the
// [memory_pressure] thresholds is stepped as engine.MemoryPressure when it
// begins (and every pressureRepeat while it lasts, never at each reading);
// a clock jump of ClockJump or more as engine.Doctor. The engine stays
// pure: these are its events as the simulator gives them.
//
// # Metrics
//
// WriteMetrics writes the exposition docs/metrics.md describes, from the
// snapshot and from meters the loop updates at each step (op durations,
// lease waits, store writes); with metrics_listen a TCP listener serves it
// at GET /metrics and nothing else.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"maps"
	"net"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/oarbank/svcrun/broker"
	"github.com/oarbank/svcrun/cgroup"
	"github.com/oarbank/svcrun/clockwork"
	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/errdefs"
	"github.com/oarbank/svcrun/executor"
	"github.com/oarbank/svcrun/internal/loglimit"
	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/nodeconfig"
	"github.com/oarbank/svcrun/sandbox"
	"github.com/oarbank/svcrun/store"
)

// GCPercent is the garbage collector's setting `svcrun serve` runs with
// unless GOGC is set. svcrun's live heap is small (a few MiB), so Go's
// default (100) collects dozens of times a second under API load, and on
// a 2-core node each collection delays the requests it overlaps: API
// acquire+release p99 0.8-0.9 ms at 100, 0.55-0.59 ms at 200, for a heap
// at most three times the live one (bench/README.md).
const GCPercent = 200

// StateFile is the bbolt file in the data dir.
const StateFile = "state.db"

// SlowWrite is how long a store write may take before it is logged at
// ERROR: an fdatasync takes milliseconds, a stalled disk forever.
const SlowWrite = 3 * time.Second

// journalLogEvery bounds how often a failing journal is logged: on a full
// disk every step fails it.
const journalLogEvery = time.Minute

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
	NewExecutor func(executor.Config, func(engine.Event)) (Executor, error)
	// NoContainers runs ops in process groups only, without cgroup v2
	// containers (tests that must not touch the host's cgroups).
	NoContainers bool
	// CgroupParent is the cgroup directory the containers' base is
	// created in; default svcrun's own cgroup (cgroup.Options.Parent).
	CgroupParent string
	// Watchdog, when WatchdogEvery > 0, is called on the loop every
	// WatchdogEvery (systemd's WATCHDOG=1): from a timer event the loop
	// takes like any other, so that a loop stuck in a step (a store write
	// on a frozen disk) stops calling it and systemd restarts svcrun.
	Watchdog      func()
	WatchdogEvery time.Duration
	// PressureFile is the memory pressure file read every SignalsEvery
	// (SignalsEvery when 0); default DefaultPressureFile. WallClock is the
	// wall clock compared with Clock's monotonic one; default Clock's Now
	// without its monotonic reading. Tests fake both.
	PressureFile string
	SignalsEvery time.Duration
	WallClock    func() time.Time
	// ContainerRuntime is the container broker's runtime; nil: podman at
	// [containers].socket. Tests fake it.
	ContainerRuntime broker.Runtime
	// StrayGrace is how long a stray's processes (see stopStrays) have
	// from SIGTERM to ending before they are killed. Default 10 s.
	StrayGrace time.Duration
}

// Executor is what the agent needs of its executor.
type Executor interface {
	engine.Executor
	Update(executor.Config) error
	// ContainerMode says, for svcrun status, how a service's processes
	// are contained.
	ContainerMode(service string) string
	// Procs lists the living processes in a service's container.
	Procs(t engine.Target) []int
	Close()
}

// Agent is a running svcrun.
type Agent struct {
	opts   Options
	log    *slog.Logger
	cfg    *nodeconfig.Config
	mods   []nodeconfig.LoadedModule
	db     *store.DB
	sched  *clockwork.Real[engine.Event]
	pauses *clockwork.Pauses // svcrun's own pauses, not charged to holders or modules
	exec   Executor
	engine *engine.Engine
	driver *engine.Driver
	jour   *Journal
	// containers are the per-service cgroups; nil when not used.
	containers *cgroup.Manager
	// identity is who ops run as (run_as when svcrun is root).
	identity sandbox.Identity
	// sandboxHost is what this host can enforce, probed once at start;
	// sandboxMissing what each module runs without (or is refused for).
	sandboxHost    string
	sandboxMissing []string
	// oom gives ops the oom_score_adj 0 when svcrun's own is not; nil
	// when it is.
	oom *oomReset
	// broker is the container broker; nil unless [containers] is enabled.
	broker *broker.Broker

	// snaps is the snapshot status and metrics answer from.
	snaps snapshots
	// persist is the store the driver's writes go to (a.db; tests put a
	// slow one in front of it); slowWrite is SlowWrite.
	persist   engine.Store
	slowWrite time.Duration
	// The journal's failures since the last line logged about them, when
	// that was, and whether it has failed since it last worked (owned by
	// the loop).
	jourFails  int
	jourLogged time.Time
	jourDown   bool
	// jourSlow is when a slow journal write was last logged (UnixNano).
	jourSlow atomic.Int64
	// storeW and jourW watch the loop's writes (made at the first).
	storeW, jourW *writeWatch

	mu sync.Mutex
	// waiters are keyed by lease, or by a reap's ticket.
	waiters map[engine.LeaseID][]waiter
	events  eventLog
	loud    *loglimit.Limiter
	stopped bool
	// withdrawn are acquires whose callers gave up, not yet stepped as
	// releases; settled is set once shutdown has stepped the last of them.
	withdrawn []engine.LeaseID
	settled   bool
	quit      chan struct{} // closed when Run ends: calls still queued are answered ErrStopping
	fatal     error         // a store failure inside a loop call: Run ends with it
	reload    sync.Mutex    // one reload at a time
	file      string        // the configuration file, as given to Open
	started   time.Time
	steps     uint64

	// retired are the modules gone from the configuration whose services
	// may still be stopping (Reload); owned by the loop.
	retired []nodeconfig.LoadedModule
	// stepRecords are the records of the event stream made by the step
	// under way, for its journal line; owned by the loop.
	stepRecords []Record

	// meters are the loop's measurements for /metrics; signals the state
	// of the node's signals (owned by the loop). metricsLn is the
	// metrics_listen listener (nil without one), served by metricsSrv
	// once Run has booted the engine.
	meters     *meters
	signals    signals
	metricsLn  net.Listener
	metricsSrv *metricsServer
}

// call is an agent-internal event: a closure run on the loop.
type call struct{ fn func() }

func (call) EventName() string { return "call" }

// watchdogTick is the loop's turn to call Options.Watchdog.
type watchdogTick struct{}

func (watchdogTick) EventName() string { return "watchdog" }

// Open loads the configuration and its modules and opens the store; it
// does not start anything yet.
func Open(opts Options) (*Agent, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.ShutdownGrace <= 0 {
		opts.ShutdownGrace = 10 * time.Second
	}
	if opts.StrayGrace <= 0 {
		opts.StrayGrace = 10 * time.Second
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
	for _, w := range cfg.Warnings {
		opts.Logger.Warn(w)
	}
	for _, m := range mods {
		for _, w := range m.Manifest.Warnings {
			opts.Logger.Warn(w, "module", m.Manifest.Name)
		}
	}
	if err := store.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("data dir %s: %w", cfg.DataDir, err)
	}
	log := opts.Logger
	db, err := store.Open(filepath.Join(cfg.DataDir, StateFile), store.Options{OnFull: func(err error) {
		if err != nil {
			log.Error("new and renewed leases are refused until space is freed; what is stored stays, and releases, expiries and service records still are", "error", err)
		} else {
			log.Info("the data dir has space again: leases are taken again", "data_dir", cfg.DataDir)
		}
	}})
	if err != nil {
		return nil, err
	}
	if err := db.Full(); err != nil {
		log.Error("starting with a full data dir: new and renewed leases are refused until space is freed", "error", err)
	}
	jdir := filepath.Join(cfg.DataDir, "journal")
	jour, err := OpenJournal(jdir)
	if err != nil {
		log.Warn("svcrun runs without its journal until it can be opened", "error", err)
		jour = NewJournal(jdir)
	}
	a := &Agent{
		opts: opts, log: opts.Logger, cfg: cfg, mods: mods, db: db, jour: jour, file: cfg.File,
		sched:     clockwork.NewReal[engine.Event](opts.Clock),
		pauses:    clockwork.NewPauses(opts.Clock, clockwork.PauseBeat, clockwork.PauseLate),
		waiters:   map[engine.LeaseID][]waiter{},
		quit:      make(chan struct{}),
		persist:   db,
		slowWrite: SlowWrite,
		meters:    newMeters(),
		loud:      loglimit.New(opts.Logger, opts.Clock),
		oom:       newOOMReset(),
	}
	if !opts.NoContainers {
		a.containers = cgroup.New(cgroup.Options{NodeID: cfg.NodeID, DataDir: cfg.DataDir, Parent: opts.CgroupParent, Logger: a.log})
		if err := a.containers.Err(); errors.Is(err, cgroup.ErrInUse) {
			// Refused, not a fallback: the two svcruns would remove, kill
			// and freeze each other's containers.
			a.containers.Close()
			jour.Close()
			db.Close()
			return nil, fmt.Errorf("%s: %w", cfg.File, err)
		} else if err != nil {
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
	a.sandboxHost = sandbox.Probe().Layers() // the containers are reported on their own
	a.sandboxMissing = sandbox.Report(cfg, mods)
	for _, l := range a.sandboxMissing {
		a.log.Warn("sandbox: " + l)
	}
	newExec := opts.NewExecutor
	if newExec == nil {
		newExec = func(c executor.Config, post func(engine.Event)) (Executor, error) { return executor.New(c, post) }
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
	a.openBroker(opts.ContainerRuntime)
	if cfg.MetricsListen != "" {
		if a.metricsLn, err = listenMetrics(cfg.MetricsListen); err != nil {
			a.exec.Close()
			if a.containers != nil {
				a.containers.Close()
			}
			jour.Close()
			db.Close()
			return nil, fmt.Errorf("%s: %w", cfg.File, err)
		}
	}
	return a, nil
}

// ErrorLog is an http.Server's ErrorLog for the server of subject (its
// accept errors at the file limit come every few milliseconds): its
// lines go through the agent's rate limit, at WARN.
func (a *Agent) ErrorLog(subject string) *log.Logger {
	return a.loud.Logger(subject, slog.LevelWarn)
}

// Config is the configuration the agent runs with.
func (a *Agent) Config() *nodeconfig.Config { return a.cfg }

func (a *Agent) execConfig(cfg *nodeconfig.Config, mods []nodeconfig.LoadedModule) executor.Config {
	c := sandbox.ExecutorConfig(cfg, mods, a.identity)
	c.Containers, c.Hooks, c.Logger, c.Pauses = a.containers, a.oom.hooks(c.Hooks), a.log, a.pauses
	return c
}

func engineConfig(cfg *nodeconfig.Config) engine.Config {
	return engine.Config{
		NodeID: cfg.NodeID, Platform: cfg.Platform, MemoryBudgetGB: cfg.MemoryBudgetGB,
		MaxConcurrentOps: cfg.MaxConcurrentOps, StatusPeriod: cfg.StatusPeriod, WatchedStatusPeriod: cfg.WatchedStatusPeriod,
		FingerprintPeriod: cfg.FingerprintPeriod, ReapPeriod: cfg.ReapPeriod, ReapSweepPeriod: cfg.ReapSweepPeriod,
	}
}

func moduleSpecs(mods []nodeconfig.LoadedModule) []engine.ModuleSpec {
	specs := make([]engine.ModuleSpec, 0, len(mods))
	for _, m := range mods {
		specs = append(specs, engine.ModuleSpec{Module: m.Manifest, Enabled: m.Config.Enabled})
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
	a.journalMissing(state)
	a.engine = engine.New()
	a.driver = &engine.Driver{
		Engine: a.engine, Sched: a.sched, Exec: a.exec, Store: storeGate{a},
		Answer: a.answer,
		Trace:  a.trace,
		After:  a.after,
		Own:    a.own,
	}
	a.stopStrays()
	a.sched.NotePauses(a.pauses, func(d time.Duration) engine.Event { return engine.Paused{Length: d} })
	a.pauses.Start()
	a.started = a.opts.Clock.Now()
	a.log.Info("svcrun starting", "node", a.cfg.NodeID, "config", a.cfg.File, "data_dir", a.cfg.DataDir,
		"modules", len(a.mods), "leases_restored", len(state.Leases))
	if err := a.driver.Step(engine.Boot{Config: engineConfig(a.cfg), Modules: a.specs(), State: state}); err != nil {
		return a.shutdown(err)
	}
	if a.opts.Watchdog != nil && a.opts.WatchdogEvery > 0 {
		a.sched.At(a.sched.Now().Add(a.opts.WatchdogEvery), watchdogTick{})
	}
	a.startSignals()
	if a.metricsLn != nil {
		a.metricsSrv = a.serveMetrics(a.metricsLn)
	}
	// The driver's loop steps events until ctx is done or the store fails.
	err = a.driver.Run(ctx)
	return a.shutdown(err)
}

// stopStrays ends, before the engine boots, what an earlier svcrun left
// running in the containers of services and probes this configuration
// does not have (a module or service removed while svcrun was down, which
// nothing would manage or charge): their bundles may be gone with them,
// so there is no stop op to run. Each gets SIGTERM and StrayGrace to end,
// then is killed, all at once; empty containers are removed. Where ops
// run in process groups nothing tells what an earlier svcrun left.
func (a *Agent) stopStrays() {
	if a.containers == nil || a.containers.Err() != nil {
		return
	}
	known := map[string]bool{}
	for _, m := range a.mods {
		for _, s := range m.Manifest.Services {
			known[m.Manifest.Name+"/"+s.Name] = true
		}
		for _, p := range m.Manifest.Probes {
			known[m.Manifest.Name+"/"+p.Name] = true
		}
	}
	strays, err := a.containers.Strays(known)
	if err != nil {
		a.log.Error("cannot list the containers left by an earlier svcrun: what runs in those of removed services stays", "error", err)
	}
	var wg sync.WaitGroup
	for _, s := range strays {
		wg.Go(func() {
			procs, _ := a.containers.Procs(s)
			if len(procs) > 0 {
				a.log.Warn("not in the configuration: ending what an earlier svcrun left running in its container (SIGTERM, then SIGKILL after the grace)",
					"service", s, "processes", len(procs), "grace", a.opts.StrayGrace)
				killed, err := a.containers.Terminate(s, a.opts.StrayGrace)
				switch {
				case err != nil:
					a.log.Error("not in the configuration: its container could not be emptied", "service", s, "error", err)
					return
				case killed:
					a.log.Warn("not in the configuration: killed, still running after the grace", "service", s, "grace", a.opts.StrayGrace)
				default:
					a.log.Info("not in the configuration: ended on SIGTERM", "service", s)
				}
			}
			if err := a.containers.Remove(s); err != nil {
				a.log.Warn("not in the configuration: its container stays", "service", s, "error", err)
			}
		})
	}
	wg.Wait()
}

// own runs the agent's calls on the loop; a store failure in one of their
// steps ends the loop.
func (a *Agent) own(ev engine.Event) (bool, error) {
	switch ev := ev.(type) {
	case call:
		ev.fn()
	case watchdogTick:
		a.opts.Watchdog()
		a.sched.At(a.sched.Now().Add(a.opts.WatchdogEvery), watchdogTick{})
	case signalsTick:
		a.readSignals()
	case refresh:
		a.refreshed()
	case engine.Paused:
		// Logged here, once; the engine extends what the pause would
		// charge.
		a.log.Warn("svcrun did not run for a while (stopped by a signal, a paused VM, a suspended host or a stall): lease TTLs, waits and op deadlines are extended by the pause",
			"pause", ev.Length.Round(time.Millisecond))
		return false, a.fatal
	default:
		return false, a.fatal
	}
	return true, a.fatal
}

// shutdown ends Run: no more requests; ops in flight may finish within the
// grace; waiters are told the agent is stopping. An acquire told so is
// withdrawn: the engine still holds it, and the ops drain steps (the start
// it waits for) could admit it, storing a lease for a caller told it failed.
func (a *Agent) shutdown(cause error) error {
	if cause == nil && a.engine != nil {
		a.publishStatus(a.sched.Now()) // for the readers told to stop waiting
	}
	a.mu.Lock()
	a.stopped = true
	for _, id := range slices.Sorted(maps.Keys(a.waiters)) {
		for _, w := range a.waiters[id] {
			if w.acquire {
				a.withdrawn = append(a.withdrawn, id)
			}
			close(w.ch)
		}
		delete(a.waiters, id)
	}
	close(a.quit)
	a.mu.Unlock()
	if cause == nil {
		a.stepWithdrawals() // before drain admits them
		a.drain()
		if a.opts.StopServicesOnExit {
			a.stopAll()
		}
	}
	a.mu.Lock()
	a.settled = true
	a.mu.Unlock()
	a.stepWithdrawals()
	a.thawAll()
	a.exec.Close()
	a.pauses.Stop()
	if a.containers != nil {
		// The containers stay, with their daemons, for the next svcrun.
		a.containers.Close()
	}
	if a.metricsSrv != nil {
		a.metricsSrv.close()
	} else if a.metricsLn != nil {
		a.metricsLn.Close()
	}
	a.loud.Close()
	jerr := a.jour.Close()
	derr := a.db.Close()
	if err := errors.Join(cause, jerr, derr); err != nil {
		a.log.Error("svcrun stopped", "error", err)
		return err
	}
	a.log.Info("svcrun stopped")
	return nil
}

// drain keeps stepping (without new requests) until no op is in flight or
// the grace is over.
func (a *Agent) drain() {
	ctx, cancel := context.WithTimeout(context.Background(), a.opts.ShutdownGrace)
	defer cancel()
	for a.engine.OpsInFlight() > 0 {
		ev, ok := a.sched.Next(ctx)
		if !ok {
			a.log.Warn("ops still in flight at shutdown: killed", "ops", a.engine.OpsInFlight())
			return
		}
		switch ev.(type) {
		case *engine.OpDone:
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
			a.exec.Thaw(s.Target)
			a.log.Info("thawed before exit", "subject", s.Name)
		}
	}
}

// stopAll disables every module so the engine stops their services, and
// steps until they are stopped or the grace is over. A stop may take its
// spec timeout (120 s), longer than the grace: a service not stopped when
// the grace ends gets the escalation of a stop that times out, a kill of
// its process container, so that none is left running.
func (a *Agent) stopAll() {
	var specs []engine.ModuleSpec
	for _, s := range a.specs() {
		s.Enabled = false
		specs = append(specs, s)
	}
	if err := a.driver.Step(engine.Reload{Modules: specs, Reason: "svcrun is stopping (--stop-services-on-exit)"}); err != nil {
		a.log.Error("stop services at exit", "error", err)
		return
	}
	a.drain()
	for _, s := range a.engine.Status().Services {
		switch {
		case s.Lifecycle == manifest.Manual, s.State == "stopped":
		case s.State == "unknown": // not fingerprinted: perhaps not running, perhaps not ours to kill
			a.log.Warn("not stopped at exit: its state is not known yet", "service", s.Name)
		default:
			a.log.Warn("not stopped within the shutdown grace: killing its process container", "service", s.Name, "state", s.State, "grace", a.opts.ShutdownGrace)
			a.exec.Kill(s.Target)
		}
	}
}

// post hands an event to the loop, unless the agent is stopping.
func (a *Agent) post(ev engine.Event) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopped {
		return ErrStopping
	}
	a.sched.Post(ev)
	return nil
}

// withdraw ends an acquire whose caller gave up: the engine drops the
// waiting request, or releases the lease if it was admitted meanwhile (its
// answer then reached nobody). The loop takes no events once svcrun stops,
// so a withdrawal that comes then waits for shutdown, which steps it before
// the store closes: otherwise a lease admitted in the loop's last steps
// would be stored, and held across restarts, for a caller that is gone.
func (a *Agent) withdraw(id engine.LeaseID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.settled {
		a.log.Warn("acquire withdrawn after svcrun stopped: if it was admitted, its lease stays held until released or expired", "lease", id)
		return
	}
	a.withdrawn = append(a.withdrawn, id)
	if !a.stopped {
		a.sched.Post(call{fn: a.stepWithdrawals})
	}
}

// stepWithdrawals steps the pending withdrawals as releases, on the loop
// or, once it has ended, in shutdown.
func (a *Agent) stepWithdrawals() {
	a.mu.Lock()
	ids := a.withdrawn
	a.withdrawn = nil
	a.mu.Unlock()
	if a.engine == nil {
		return
	}
	for _, id := range ids {
		if err := a.step(engine.Release{Lease: id}); err != nil {
			a.log.Error("withdraw an acquire", "lease", id, "error", err)
			return
		}
	}
}

// writable refuses a request that needs a write before it reaches the
// engine, which changes its state before the step is stored: every one
// once the state file or its log is unlinked (store.ErrUnlinked), and
// while the data dir is full those that can wait (canWait: a new or
// renewed lease).
func (a *Agent) writable(canWait bool) error {
	if err := a.db.Unlinked(); err != nil {
		return err
	}
	if !canWait {
		return nil
	}
	if err := a.db.Writable(); err != nil {
		return fmt.Errorf("%w: new and renewed leases are refused until space is freed", err)
	}
	return nil
}

// checkLinked looks whether the state file and its log are still linked
// where they were opened, and logs at ERROR the first time they are not.
// Nothing else changes: the loop goes on (its writes reach files nobody
// reads again, harmlessly), the services run on, and writable refuses
// requests from then on.
func (a *Agent) checkLinked() {
	if a.db.Unlinked() != nil {
		return
	}
	if err := a.db.CheckLinked(); err != nil {
		a.log.Error("data dir: every request that needs a write is refused; running services are left alone", "error", err)
	}
}

// ErrStopping, errdefs.ErrStopping, is returned to requests that arrive
// while svcrun stops.
var ErrStopping = errdefs.ErrStopping

// onLoop runs fn on the loop and waits for it. Once posted, fn runs (or
// the agent stops): the caller waits for that rather than for ctx, so that
// a call it gave up on can neither run behind its back nor write its
// results after it returned. A loop step is short.
func (a *Agent) onLoop(_ context.Context, fn func()) error {
	done := make(chan struct{})
	if err := a.post(call{fn: func() { fn(); close(done) }}); err != nil {
		return err
	}
	select {
	case <-done:
		return nil
	case <-a.quit:
		select {
		case <-done: // it ran as the loop ended
			return nil
		default:
			return ErrStopping
		}
	}
}

// step runs a driver step from inside a loop call; a store failure ends
// Run, as it does for any other step.
func (a *Agent) step(ev engine.Event) error {
	err := a.driver.Step(ev)
	if err != nil {
		a.fatal = err
	}
	return err
}

// after journals and logs a step once the driver has carried it out:
// after its answers are sent, so that the journal does not delay them.
func (a *Agent) after(now time.Time, ev engine.Event, effects []engine.Effect, err error) error {
	if err == nil {
		a.leasesEnded(effects)
		a.stepStored() // a step without answers
		if a.snaps.answered {
			// An answer's send only readied its caller, on the loop's own
			// P, where it waits for the loop to block on its next event
			// or for another P to steal it (after a sleep of a few
			// microseconds that is 50 and more on a VM). Yield, so that
			// the answers go out before the snapshot and the journal
			// line are made, not after.
			runtime.Gosched()
		}
		a.maybePublish(now)
	}
	a.record(now, ev, effects)
	return err
}

// answer routes the driver's answers to the callers waiting for them and to
// the event stream.
func (a *Agent) answer(now time.Time, f engine.Effect) {
	a.stepStored() // before a caller hears of it
	a.publish(now, f)
	if d, ok := f.(engine.ReapDone); ok {
		for _, t := range d.Tickets {
			a.deliver(engine.LeaseID(t), f)
		}
		return
	}
	if id := engine.LeaseOf(f); id != "" {
		a.deliver(id, f)
	}
}

// deliver hands an answer to the first waiter of id that expects its kind.
func (a *Agent) deliver(id engine.LeaseID, f engine.Effect) {
	// The first waiter of the lease that expects this kind of answer
	// gets it: a Renew queued behind a TTL expiry must not take the
	// Expired, it gets its own "unknown lease".
	a.mu.Lock()
	ws := a.waiters[id]
	var to waiter
	for i, w := range ws {
		if w.accepts(f) {
			to = w
			a.waiters[id] = append(ws[:i:i], ws[i+1:]...)
			break
		}
	}
	if len(a.waiters[id]) == 0 {
		delete(a.waiters, id)
	}
	a.mu.Unlock()
	if to.ch == nil {
		return
	}
	a.snaps.answered = true
	r := reply{f: f}
	if to.acquire {
		// What the lease depends on as it was admitted: the engine is as
		// this stored step left it.
		switch f := f.(type) {
		case engine.Admitted:
			r.uses, r.probes = a.engine.StatusOf(f.Services, to.caps)
		case engine.AlreadyHeld:
			r.uses, r.probes = a.engine.StatusOf(f.Services, to.caps)
		}
	}
	to.ch <- r
}

// reply is an answer as its waiter gets it; an admission's comes with the
// services and probes its lease depends on (Grant.Uses, Grant.Probes).
type reply struct {
	f      engine.Effect
	uses   []engine.ServiceStatus
	probes []engine.ProbeStatus
}

// waiter is a caller waiting for the answer to its request.
type waiter struct {
	ch      chan reply
	accepts func(engine.Effect) bool
	acquire bool // an Acquire's: withdrawn when svcrun stops before the answer
	// caps are an Acquire's capabilities, whose probes its grant lists.
	caps []string
}

// Answer kinds each request waits for.
func acquireAnswer(f engine.Effect) bool {
	switch f.(type) {
	case engine.Admitted, engine.AlreadyHeld, engine.Rejected:
		return true
	}
	return false
}

func renewAnswer(f engine.Effect) bool {
	switch f.(type) {
	case engine.Renewed, engine.LeaseUnknown:
		return true
	}
	return false
}

func reapAnswer(f engine.Effect) bool {
	_, ok := f.(engine.ReapDone)
	return ok
}

func releaseAnswer(f engine.Effect) bool {
	switch f.(type) {
	case engine.Released, engine.LeaseUnknown:
		return true
	}
	return false
}

// wait registers w (its channel made here) for the answer to id.
func (a *Agent) wait(id engine.LeaseID, w waiter) chan reply {
	w.ch = make(chan reply, 1)
	a.mu.Lock()
	a.waiters[id] = append(a.waiters[id], w)
	a.mu.Unlock()
	return w.ch
}

func (a *Agent) unwait(id engine.LeaseID, ch chan reply) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ws := a.waiters[id]
	for i, w := range ws {
		if w.ch == ch {
			a.waiters[id] = append(ws[:i:i], ws[i+1:]...)
			break
		}
	}
	if len(a.waiters[id]) == 0 {
		delete(a.waiters, id)
	}
}

// trace counts and measures a step before the driver carries it out: the
// status its answers publish counts it.
func (a *Agent) trace(now time.Time, ev engine.Event, effects []engine.Effect) {
	a.meters.step(now, ev, effects)
	a.steps++
}

// publishStatus publishes the snapshot status and metrics answer from. It
// runs on the loop once a step is stored, never in the middle of one.
func (a *Agent) publishStatus(now time.Time) {
	a.snaps.built.Add(1)
	a.snaps.last = now
	st := &Status{
		Status: a.engine.Status(), NodeID: a.cfg.NodeID, Platform: a.cfg.Platform, Config: a.cfg.File,
		DataDir: a.cfg.DataDir, Socket: a.cfg.Socket, Sandbox: string(a.cfg.Sandbox),
		StartedAt: a.started, Steps: a.steps,
		Containers:  "process groups (cgroup containers disabled)",
		SandboxHost: a.sandboxHost, SandboxMissing: a.sandboxMissing,
	}
	if a.containers != nil {
		st.Containers = a.containers.Support().String()
	}
	a.snaps.store(st)
}

// storeGate is the driver's store: it writes to a.persist, watched by
// a.storeWatch.
type storeGate struct{ a *Agent }

func (g storeGate) Apply(batch []engine.Effect) error {
	w := g.a.storeWatch()
	g.a.writeBegins(w, len(batch))
	measured := g.a.meters.storeWrite(g.a.opts.Clock.Now(), g.a.opts.Clock.Now)
	err := g.a.persist.Apply(batch)
	measured()
	g.a.writeEnds(w)
	return err
}

// writeWatch watches the loop's writes of one kind (the store's, the
// journal's), which may wait for a stalled disk: it logs at ERROR once a
// write has waited a.slowWrite (it may wait forever) and, at its end, its
// duration if it took that long. With limit, a stall is logged at most
// once a journalLogEvery (its duration only if its wait was). One timer,
// made at the first write and reset at each: there are two writes at
// every step, and a timer with its closures for each was a tenth of an
// API round trip's allocations.
type writeWatch struct {
	what  string
	limit *atomic.Int64
	// where gives the attributes of its lines, for a write of effects.
	where func(effects int) []any
	timer *clock.Timer

	mu sync.Mutex
	// n is the write in progress (a.snaps' number), 0 between writes;
	// logged is set once its wait is logged.
	n       uint64
	effects int
	start   time.Time
	logged  bool
}

func (a *Agent) storeWatch() *writeWatch {
	if a.storeW == nil {
		a.storeW = &writeWatch{what: "store write", where: func(effects int) []any {
			return []any{"state_file", a.db.Path(), "effects", effects}
		}}
	}
	return a.storeW
}

func (a *Agent) journalWatch() *writeWatch {
	if a.jourW == nil {
		a.jourW = &writeWatch{what: "journal write", limit: &a.jourSlow, where: func(int) []any {
			return []any{"journal", a.jour.dir}
		}}
	}
	return a.jourW
}

// writeBegins starts watching a write of w's kind.
func (a *Agent) writeBegins(w *writeWatch, effects int) {
	n, start := a.snaps.writeBegins(), a.opts.Clock.Now()
	w.mu.Lock()
	w.n, w.effects, w.start, w.logged = n, effects, start, false
	w.mu.Unlock()
	if w.timer == nil {
		w.timer = a.opts.Clock.AfterFunc(a.slowWrite, func() { a.writeWaited(w) })
	} else {
		w.timer.Reset(a.slowWrite)
	}
}

// writeWaited runs when w's timer fires: the write in progress has waited
// a.slowWrite, unless the fire is a late one of an earlier write.
func (a *Agent) writeWaited(w *writeWatch) {
	w.mu.Lock()
	n, effects, start := w.n, w.effects, w.start
	w.mu.Unlock()
	if n == 0 || a.opts.Clock.Now().Sub(start) < a.slowWrite {
		return
	}
	a.snaps.writeSlow(n) // status and metrics stop waiting for the loop
	if !w.allow(a.opts.Clock.Now()) {
		return
	}
	w.mu.Lock()
	if w.n == n {
		w.logged = true
	}
	w.mu.Unlock()
	a.log.Error(w.what+" waiting for the disk: status and metrics answer from the last snapshot published meanwhile (every answered step, others up to a second behind)", append([]any{"waited", a.slowWrite}, w.where(effects)...)...)
}

// writeEnds ends the watch of w's write in progress.
func (a *Agent) writeEnds(w *writeWatch) {
	w.timer.Stop()
	w.mu.Lock()
	n, effects, start, logged := w.n, w.effects, w.start, w.logged
	w.n = 0
	w.mu.Unlock()
	a.snaps.writeEnds(n)
	now := a.opts.Clock.Now()
	if took := now.Sub(start); took >= a.slowWrite && (logged || w.allow(now)) {
		a.log.Error("slow "+w.what, append([]any{"took", took}, w.where(effects)...)...)
	}
}

// allow says whether a line about a stall may be logged at now.
func (w *writeWatch) allow(now time.Time) bool {
	if w.limit == nil {
		return true
	}
	last := w.limit.Load()
	return (last == 0 || now.UnixNano()-last >= int64(journalLogEvery)) && w.limit.CompareAndSwap(last, now.UnixNano())
}

// journalFailed logs a failure of the journal at most once a
// journalLogEvery, with the number of failures since the last line.
func (a *Agent) journalFailed(now time.Time, err error) {
	a.jourFails++
	a.jourDown = true
	if !a.jourLogged.IsZero() && now.Sub(a.jourLogged) < journalLogEvery {
		return
	}
	a.log.Warn("journal: steps are not journaled", "error", err, "failures", a.jourFails, "next_report_in", journalLogEvery)
	a.jourLogged, a.jourFails = now, 0
}

// record journals a step and logs its decisions.
func (a *Agent) record(now time.Time, ev engine.Event, effects []engine.Effect) {
	a.logDecisions(effects)
	// Every step reaches the file (not the disk) before the next one: a
	// journal that lags would miss the last steps before a kill -9, when
	// it is needed most. The write is off the answers' path.
	w := a.journalWatch()
	a.writeBegins(w, 0)
	jerr := a.jour.Write(now, ev, effects, a.stepRecords)
	a.stepRecords = a.stepRecords[:0]
	if jerr == nil {
		jerr = a.jour.Flush()
	}
	a.writeEnds(w)
	switch {
	case jerr != nil:
		a.journalFailed(now, jerr)
	case a.jourDown && now.Sub(a.jourLogged) >= journalLogEvery: // at most a line a minute, this one too
		a.log.Info("journal: journaling again", "failures", a.jourFails)
		a.jourLogged, a.jourFails, a.jourDown = now, 0, false
	}
}
