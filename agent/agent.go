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
	"github.com/oarbank/svcrun/executor"
	"github.com/oarbank/svcrun/internal/loglimit"
	"github.com/oarbank/svcrun/nodeconfig"
	"github.com/oarbank/svcrun/sandbox"
	"github.com/oarbank/svcrun/store"
)

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

	// snaps is the snapshot status and metrics answer from (snapshot.go).
	snaps snapshots
	// The loop's store and journal writes and their watch (writes.go):
	// persist is the store the driver's writes go to (a.db; tests put a
	// slow one in front of it); slowWrite is SlowWrite. The journal's
	// failures since the last line logged about them, when that was, and
	// whether it has failed since it last worked are owned by the loop;
	// jourSlow is when a slow journal write was last logged (UnixNano);
	// storeW and jourW watch the writes (made at the first).
	persist       engine.Store
	slowWrite     time.Duration
	jourFails     int
	jourLogged    time.Time
	jourDown      bool
	jourSlow      atomic.Int64
	storeW, jourW *writeWatch

	// waiters are the callers waiting for the loop's answers
	// (waiters.go); events is the event stream (events.go); stop is
	// shutdown's state (shutdown.go). Each has a lock of its own.
	waiters waiters
	events  eventLog
	stop    stopping
	loud    *loglimit.Limiter
	quit    chan struct{} // closed when Run ends: calls still queued are answered ErrStopping
	fatal   error         // a store failure inside a loop call: Run ends with it
	reload  sync.Mutex    // one reload at a time
	file    string        // the configuration file, as given to Open
	started time.Time
	steps   uint64

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

// loopFn is an agent-internal event: a closure run on the loop (onLoop).
type loopFn struct{ fn func() }

func (loopFn) EventName() string { return "call" }

// watchdogTick is the loop's turn to call Options.Watchdog.
type watchdogTick struct{}

func (watchdogTick) EventName() string { return "watchdog" }

// Open loads the configuration and its modules and opens the store; it
// does not start anything yet.
func Open(opts Options) (_ *Agent, err error) {
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
	// What Open has opened so far, closed in reverse if a later step fails.
	var undo []func()
	defer func() {
		if err != nil {
			for _, close := range slices.Backward(undo) {
				close()
			}
		}
	}()
	log := opts.Logger
	db, err := store.Open(filepath.Join(cfg.DataDir, StateFile), store.Options{OnFull: func(err error) {
		if err != nil {
			log.Error("new and renewed leases are refused until space is freed; what is stored "+
				"stays, and releases, expiries and service records still are", "error", err)
		} else {
			log.Info("the data dir has space again: leases are taken again", "data_dir", cfg.DataDir)
		}
	}})
	if err != nil {
		return nil, err
	}
	undo = append(undo, func() { db.Close() })
	if err := db.Full(); err != nil {
		log.Error("starting with a full data dir: new and renewed leases are refused until space is freed", "error", err)
	}
	jdir := filepath.Join(cfg.DataDir, "journal")
	jour, err := OpenJournal(jdir)
	if err != nil {
		log.Warn("svcrun runs without its journal until it can be opened", "error", err)
		jour = NewJournal(jdir)
	}
	undo = append(undo, func() { jour.Close() })
	a := &Agent{
		opts: opts, log: opts.Logger, cfg: cfg, mods: mods, db: db, jour: jour, file: cfg.File,
		sched:     clockwork.NewReal[engine.Event](opts.Clock),
		pauses:    clockwork.NewPauses(opts.Clock, clockwork.PauseBeat, clockwork.PauseLate),
		quit:      make(chan struct{}),
		persist:   db,
		slowWrite: SlowWrite,
		meters:    newMeters(),
		loud:      loglimit.New(opts.Logger, opts.Clock),
		oom:       newOOMReset(),
	}
	if !opts.NoContainers {
		a.containers = cgroup.New(cgroup.Options{NodeID: cfg.NodeID, DataDir: cfg.DataDir,
			Parent: opts.CgroupParent, Logger: a.log})
		undo = append(undo, func() { a.containers.Close() })
		if err := a.containers.Err(); errors.Is(err, cgroup.ErrInUse) {
			// Refused, not a fallback: the two svcruns would remove, kill
			// and freeze each other's containers.
			return nil, fmt.Errorf("%s: %w", cfg.File, err)
		} else if err != nil {
			a.log.Warn("no cgroup v2 process containers: ops run in process groups (kill, "+
				"freeze and crash detection by signals and polling)", "reason", err)
		}
		for _, m := range a.containers.Support().Missing() {
			a.log.Warn("process container: missing", "what", m)
		}
	}
	id, err := sandbox.IdentityOf(cfg)
	if err != nil {
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
		return nil, err
	}
	undo = append(undo, a.exec.Close)
	a.openBroker(opts.ContainerRuntime)
	if cfg.MetricsListen != "" {
		if a.metricsLn, err = listenMetrics(cfg.MetricsListen); err != nil {
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

// own runs the agent's calls on the loop; a store failure in one of their
// steps ends the loop.
func (a *Agent) own(ev engine.Event) (bool, error) {
	switch ev := ev.(type) {
	case loopFn:
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
		a.log.Warn("svcrun did not run for a while (stopped by a signal, a paused VM, a "+
			"suspended host or a stall): lease TTLs, waits and op deadlines are extended by the pause",
			"pause", ev.Length.Round(time.Millisecond))
		return false, a.fatal
	default:
		return false, a.fatal
	}
	return true, a.fatal
}

// post hands an event to the loop, unless the agent is stopping.
func (a *Agent) post(ev engine.Event) error {
	a.stop.mu.Lock()
	defer a.stop.mu.Unlock()
	if a.stop.stopped {
		return ErrStopping
	}
	a.sched.Post(ev)
	return nil
}

// onLoop runs fn on the loop and waits for it. Once posted, fn runs (or
// the agent stops): the caller waits for that rather than for ctx, so that
// a call it gave up on can neither run behind its back nor write its
// results after it returned. A loop step is short.
func (a *Agent) onLoop(_ context.Context, fn func()) error {
	done := make(chan struct{})
	if err := a.post(loopFn{fn: func() { fn(); close(done) }}); err != nil {
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
			a.deliver(reapKey(t), f)
		}
		return
	}
	if id := engine.LeaseOf(f); id != "" {
		a.deliver(leaseKey(id), f)
	}
}

// trace counts and measures a step before the driver carries it out: the
// status its answers publish counts it.
func (a *Agent) trace(now time.Time, ev engine.Event, effects []engine.Effect) {
	a.meters.step(now, ev, effects)
	a.steps++
}
