package executor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/oarbank/svcrun/cgroup"
	"github.com/oarbank/svcrun/clockwork"
	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/internal/loglimit"
	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/nodeconfig"
	"github.com/oarbank/svcrun/protocol"
	"github.com/oarbank/svcrun/svcenv"
)

// Config is what New builds the executor from.
type Config struct {
	// Node is the node configuration.
	Node *nodeconfig.Config
	// Modules are the loaded modules, nodeconfig.LoadModules(Node), each
	// with its [[modules]] entry. Disabled modules are included (the
	// engine decides what runs).
	Modules []nodeconfig.LoadedModule
	// User is USER and LOGNAME of the ops. Default: the name of the
	// account svcrun runs as, which is the account ops run as until a
	// Hooks sets a Credential (run_as).
	User string
	// Owner owns the module data dirs and their files (run_as when svcrun
	// is root); nil leaves them to svcrun's account.
	Owner *svcenv.Owner
	// MaxConcurrentOps caps the op processes running at once; default
	// Node.MaxConcurrentOps.
	MaxConcurrentOps int
	// Grace and WaitDelay are passed to every Spec (0: the defaults).
	Grace, WaitDelay time.Duration
	// Pauses is passed to every Spec: a pause of svcrun is not charged
	// to an op's timeout or grace. Nil: it is.
	Pauses *clockwork.Pauses
	// Hooks returns the sandbox hooks of a target (sandbox.For builds
	// it). It is called when the targets are built (New, Update); an
	// error fails every op of the target with FailSpawn and that message;
	// nil runs every op unconfined.
	Hooks func(t engine.Target, mod nodeconfig.LoadedModule) (Hooks, error)
	// Containers, when set and working (Err() nil), is the process
	// container of every service (docs/decisions.md, Sandbox): each op of a service is
	// cloned into the service's cgroup v2, Kill, Freeze and Thaw go to
	// that cgroup, its limits are Node.Limits, and the emptying of a
	// container holding a daemon is posted as engine.ContainerEmptied.
	// Nil, or a Manager whose Err is set, leaves every service to process
	// groups and signals (ContainerMode says why). New takes it; Update
	// ignores it. The caller closes it, after the Executor.
	Containers *cgroup.Manager
	// Subreaper makes New make the process the child subreaper
	// (BecomeSubreaper): the daemons an op leaves become its children, and
	// its reaper reaps them the moment they die. In process groups the
	// reaper's orphan exits are their crash events. With containers their
	// cgroups tell their deaths, but the zombie must still go at once: a
	// dead daemon that init (which may reap late, or never, in a
	// container) leaves as a zombie answers kill -0, so the restart's start
	// op would take it for a live daemon. svcrun serve sets it; every
	// child of such a process must be started by Spawn or StartCmd. New
	// takes it; Update ignores it.
	Subreaper bool
	// Logger gets what the executor does on its own: the ops an earlier
	// svcrun left running that it waits for or kills, and what a stop
	// left behind that it kills. Nil discards it.
	Logger *slog.Logger
}

// Executor is the engine.Executor of svcrun: it runs the ops of the
// modules' services and probes as processes (see the package doc).
type Executor struct {
	post      func(engine.Event)
	sem       chan struct{}
	grace     time.Duration
	waitDelay time.Duration
	pauses    *clockwork.Pauses
	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup

	mu      sync.RWMutex
	targets map[engine.Target]*target

	gmu    sync.Mutex
	groups map[engine.Target]map[int]bool // process group -> its op is still running
	// armed are the services whose ops left something running (a daemon)
	// when they ended: the emptying of their last group is an event.
	armed map[engine.Target]bool
	// unsubscribe ends the orphan-exit events of the process-group
	// fallback.
	unsubscribe func()

	containers
	opRecords
}

var _ engine.Executor = (*Executor)(nil)

// target is one service or probe, computed once.
type target struct {
	cmd          command
	env          []string
	role         protocol.Role
	startTimeout time.Duration
	hooks        Hooks
	mod          *moduleData
	err          error // why its ops cannot run
}

// moduleData is a module's data dir, prepared before its first op, and
// the identity of its bundle as loaded.
type moduleData struct {
	layout svcenv.Layout
	owner  *svcenv.Owner
	files  svcenv.Files
	module string
	// bundle is the bundle root; loaded is what it was when the targets
	// were built (nil: it could not be read, and resolveCommand says so).
	bundle string
	loaded os.FileInfo

	mu    sync.Mutex
	ready bool
}

// prepareDataDir creates the module data dir and writes its files, once
// (again after a failure).
func (m *moduleData) prepareDataDir() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ready {
		return nil
	}
	// <data_dir>/modules must exist; the service account must traverse it.
	if err := mkdirAll(filepath.Dir(m.layout.ModuleData)); err != nil {
		return err
	}
	if err := svcenv.Prepare(m.layout, m.owner); err != nil {
		return err
	}
	if err := svcenv.WriteFiles(m.layout, m.owner, m.files); err != nil {
		return err
	}
	m.ready = true
	return nil
}

// bundleReplaced fails when the bundle root is no longer the directory
// the module was loaded from: a package upgrade replaced it (mv, then a
// new copy). Its ops would run the new files with the old manifest and,
// sandboxed, be refused by Landlock, whose rules hold the old directory;
// a reload loads the new one (docs/operating.md, Upgrading a module).
func (m *moduleData) bundleReplaced() error {
	if m.loaded == nil {
		return nil
	}
	now, err := os.Stat(m.bundle)
	switch {
	case err == nil && os.SameFile(now, m.loaded):
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return nodeFault{fmt.Errorf("the bundle of module %s was removed since it was loaded (directory %s): "+
			"put it back, or take the module out of the configuration and run `svcrun reload`", m.module, m.bundle)}
	}
	return nodeFault{fmt.Errorf(
		"the bundle of module %s was replaced since it was loaded (directory %s): run `svcrun reload`", m.module, m.bundle)}
}

// New returns the executor of the node's modules. post receives the OpDone
// of every op; it is called from the op's goroutine and must not block for
// long (the real scheduler's Post).
//
// Targets whose command or environment cannot be built (a bundle changed
// since it was loaded) are kept, and their ops fail with FailSpawn and the
// reason; New itself fails only for the node as a whole.
func New(cfg Config, post func(engine.Event)) (*Executor, error) {
	if post == nil {
		return nil, errors.New("executor: post is nil")
	}
	targets, err := buildTargets(cfg)
	if err != nil {
		return nil, err
	}
	n := cfg.MaxConcurrentOps
	if n <= 0 {
		n = cfg.Node.MaxConcurrentOps
	}
	if n <= 0 {
		n = 4 * runtime.NumCPU()
	}
	ctx, cancel := context.WithCancel(context.Background())
	x := &Executor{
		post:      post,
		sem:       make(chan struct{}, n),
		grace:     cfg.Grace,
		waitDelay: cfg.WaitDelay,
		pauses:    cfg.Pauses,
		ctx:       ctx,
		cancel:    cancel,
		targets:   targets,
		groups:    map[engine.Target]map[int]bool{},
		armed:     map[engine.Target]bool{},
	}
	x.initContainers(cfg, post)
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	x.initInflight(cfg.Node.DataDir, log)
	x.unsubscribe = subscribeOrphanExits(x.groupExited)
	if cfg.Subreaper {
		if err := BecomeSubreaper(); err != nil {
			log.Warn(
				"cannot become a child subreaper: the daemons ops leave go to init, whose late reaping can make a dead daemon's "+
					"zombie look alive to a restart", "error", err)
		}
	}
	return x, nil
}

// Update replaces the targets after a configuration reload. Every module's
// settings, tools and limits files are checked again before its next op,
// and written where they changed; a module whose bundle was replaced
// since it was loaded runs from the new one.
// Ops already running finish with what they started with; the process
// groups known for each service are kept. The new Node.Limits apply to the
// containers from each service's next op; services that fell back to
// process groups try their container again; the empty containers of
// services that are gone are removed.
func (x *Executor) Update(cfg Config) error {
	targets, err := buildTargets(cfg)
	if err != nil {
		return err
	}
	x.mu.Lock()
	x.targets = targets
	x.mu.Unlock()
	x.updateContainers(cfg, targets)
	return nil
}

// Close kills the ops still running (their OpDone reports them canceled)
// and waits until every OpDone was posted. No ContainerEmptied is posted
// after Close; the containers themselves (and the daemons in them) stay.
func (x *Executor) Close() {
	x.cancel()
	x.wg.Wait()
	x.unsubscribe()
	x.closeContainers()
	x.closeRecordFiles()
}

func buildTargets(cfg Config) (map[engine.Target]*target, error) {
	if cfg.Node == nil {
		return nil, errors.New("executor: no node configuration")
	}
	host := svcenv.HostPlatform()
	if cfg.Node.Platform != string(host) {
		return nil, fmt.Errorf(
			"executor: the node configuration says platform %q but this host is %s", cfg.Node.Platform, host)
	}
	userName := cfg.User
	if userName == "" {
		u, err := user.Current()
		if err != nil {
			return nil, fmt.Errorf("executor: the current user (USER of the ops): %w", err)
		}
		userName = u.Username
	}
	targets := map[engine.Target]*target{}
	// The environments of one module's services and probes differ in one
	// variable (OARBANK_SERVICE): equal strings are kept once, 1.1 KiB
	// less live heap a service at 1,000 services and 1,000 probes (the
	// agent's 5.6 KiB a service or probe to 4.5, TestScale1000), about
	// twice that of memory with the collector's room (agent.TuneGC).
	shared := map[string]string{}
	for _, lm := range cfg.Modules {
		m := lm.Manifest
		md, toolDirs, merr := moduleDataOf(cfg, host, m, lm.Config)
		add := func(name string, probe bool, exec []string, startTimeout time.Duration) {
			t := engine.Target{Module: m.Name, Name: name, Probe: probe}
			tg := &target{mod: md, startTimeout: startTimeout, err: merr}
			if probe {
				tg.role = protocol.RoleProbe
			}
			targets[t] = tg
			if tg.err != nil {
				return
			}
			if tg.cmd, tg.err = resolveCommand(m, exec); tg.err != nil {
				return
			}
			tg.env, tg.err = svcenv.Environ(svcenv.Input{
				Platform:   host,
				NodeID:     cfg.Node.NodeID,
				Module:     m.Name,
				Service:    name,
				ModuleData: md.layout.ModuleData,
				User:       userName,
				ToolDirs:   toolDirs,
			})
			for i, kv := range tg.env {
				if s, ok := shared[kv]; ok {
					tg.env[i] = s
				} else {
					shared[kv] = kv
				}
			}
			if tg.err == nil && cfg.Hooks != nil {
				// A sandbox refused (require mode missing a layer of this
				// host, or a grant of the node's configuration making it
				// unsound) is the node's to fix, not the module's: its
				// ops are not held against the service.
				if tg.hooks, tg.err = cfg.Hooks(t, lm); tg.err != nil {
					tg.err = nodeFault{tg.err}
				}
			}
		}
		for _, s := range m.Services {
			if s.RunsOn(string(host)) {
				add(s.Name, false, s.Exec, s.StartTimeout)
			}
		}
		for _, p := range m.Probes {
			if p.RunsOn(string(host)) {
				add(p.Name, true, p.Exec, 0)
			}
		}
	}
	return targets, nil
}

func moduleDataOf(
	cfg Config, host svcenv.Platform, m *manifest.Module, mc nodeconfig.Module) (*moduleData, []string, error) {
	md := &moduleData{owner: cfg.Owner, module: m.Name, bundle: m.Dir}
	md.loaded, _ = os.Stat(m.Dir)
	l, err := svcenv.Paths(host, cfg.Node.ModuleDataDir(m.Name))
	if err != nil {
		return md, nil, err
	}
	md.layout = l
	tools := map[string]string{}
	for k, v := range mc.Tools {
		tools[k] = v
	}
	settings := mc.Settings
	if settings == nil {
		settings = map[string]any{}
	}
	md.files = svcenv.Files{Settings: settings, Tools: tools, Limits: cfg.Node.Limits}
	dirs, err := svcenv.ToolDirs(host, mc.Tools)
	return md, dirs, err
}

// Run is the asynchronous op, engine.Executor's verb: it returns at once,
// since the engine's loop must never wait on a process, and a goroutine
// posts the op's OpDone once RunWait has run it.
func (x *Executor) Run(op engine.RunOp) {
	x.wg.Add(1)
	go func() {
		defer x.wg.Done()
		_, o := x.RunWait(op)
		x.post(&engine.OpDone{ID: op.ID, Outcome: o})
	}()
}

// RunWait is the synchronous op: it runs op as Run does (leftovers of an
// earlier svcrun, the op cap, the op's record, its container, the kill of
// what a stop left) and returns once it has ended, with the op process's
// Result beside the Outcome, which Run alone posts: svcrun check shows
// each op's output, its stderr and what a stop left. The Result is zero
// when the op could not be prepared or was canceled before it began.
func (x *Executor) RunWait(op engine.RunOp) (Result, engine.Outcome) {
	x.mu.RLock()
	t := x.targets[op.Target]
	x.mu.RUnlock()
	spec, err := t.opSpec(op)
	if err != nil {
		return Result{}, Outcome(op.Op, protocol.RoleService, Result{SpawnErr: err})
	}
	canceled := func() (Result, engine.Outcome) {
		return Result{}, engine.Outcome{
			Failure: engine.FailTimeout, Message: fmt.Sprintf("%s: canceled before it started: svcrun is stopping", op.Op)}
	}
	// An op an earlier svcrun started on this service may still run:
	// no op begins beside it.
	if !x.awaitLeftovers(op.Target, op.Op) {
		return canceled()
	}
	select {
	case x.sem <- struct{}{}:
	case <-x.ctx.Done():
		return canceled()
	}
	spec.Grace, spec.WaitDelay, spec.Pauses = x.grace, x.waitDelay, x.pauses
	if op.Op == protocol.OpStart {
		reapBeforeStart()
	}
	j := x.recordIntent(op.ID, op.Target, op.Op, spec)
	spec.OnStart = j.started
	res := x.spawnIn(op.Target, spec, op.Op == protocol.OpStop)
	j.done()
	<-x.sem
	o := Outcome(op.Op, t.role, res)
	if op.Op == protocol.OpFingerprint && !op.Target.Probe && o.Failure == engine.FailNone {
		// A module that sees no daemon (its pid file gone) is no proof
		// that none runs: the engine starts nothing into a container
		// that still holds processes (docs/decisions.md, rule-occupied).
		o.Occupied = x.occupied(op.Target, res.Pid)
	}
	return res, o
}

// occupied says the service's cgroup holds a living process other than
// the op's own (pid): one no op runs. The process-group fallback cannot
// tell, and says no.
func (x *Executor) occupied(t engine.Target, pid int) bool {
	if x.cgroupOf(t) == "" {
		return false
	}
	pids, err := x.cg.Procs(serviceName(t))
	if err != nil {
		return false
	}
	return slices.ContainsFunc(living(pids), func(p int) bool { return p != pid })
}

// PrepareDataDir creates the data dir of module and writes its settings,
// tools and limits files, as before the module's first op: svcrun check
// looks at the data dir before that op.
func (x *Executor) PrepareDataDir(module string) error {
	x.mu.RLock()
	defer x.mu.RUnlock()
	for t, tg := range x.targets {
		if t.Module == module {
			return tg.mod.prepareDataDir()
		}
	}
	return fmt.Errorf("executor: no module %s", module)
}

// RunStandalone is the synchronous op without an Executor around it: it
// runs one op of cfg's modules and returns how it ended, assembled
// exactly as the ops of New's executor (the module data dir and its
// files, the environment, the command, the timeout, the sandbox hooks,
// the outcome), but with no container (cfg.Containers is ignored), no
// limit on concurrent ops and no record of the op for a later svcrun to
// adopt. svcrun op runs it.
func RunStandalone(ctx context.Context, cfg Config, op engine.RunOp) (Result, engine.Outcome, error) {
	targets, err := buildTargets(cfg)
	if err != nil {
		return Result{}, engine.Outcome{}, err
	}
	t := targets[op.Target]
	spec, err := t.opSpec(op)
	if err != nil {
		return Result{}, Outcome(op.Op, protocol.RoleService, Result{SpawnErr: err}), nil
	}
	spec.Grace, spec.WaitDelay = cfg.Grace, cfg.WaitDelay
	res := Spawn(ctx, spec)
	return res, Outcome(op.Op, t.role, res), nil
}

// opSpec prepares op of t (nil when the loaded modules lack it): the
// module data dir and its files, then the Spec with t's command,
// environment, hooks and the op's timeout. Its error is the op's
// SpawnErr (an op that "could not be prepared"): Outcome tells whether the
// node or the module is to blame.
func (t *target) opSpec(op engine.RunOp) (Spec, error) {
	kind := "service"
	if op.Target.Probe {
		kind = "probe"
	}
	switch {
	case t == nil:
		return Spec{}, fmt.Errorf("%s: no %s %s in the loaded modules", op.Op, kind, op.Target)
	case t.err != nil:
		return Spec{}, fmt.Errorf("%s: %s %s cannot run: %w", op.Op, kind, op.Target, t.err)
	case !op.Op.Valid():
		return Spec{}, fmt.Errorf("%s: unknown op", op.Op)
	case t.role == protocol.RoleProbe && op.Op != protocol.OpFingerprint:
		return Spec{}, fmt.Errorf("%s: probe %s implements only fingerprint", op.Op, op.Target)
	}
	if err := t.mod.bundleReplaced(); err != nil {
		return Spec{}, fmt.Errorf("%s of %s %s: %w", op.Op, kind, op.Target, err)
	}
	if err := t.mod.prepareDataDir(); err != nil {
		return Spec{}, fmt.Errorf(
			"%s of %s %s: prepare the data dir of module %s: %w", op.Op, kind, op.Target, op.Target.Module, err)
	}
	timeout := op.Timeout
	if timeout <= 0 {
		timeout = opTimeout(op.Op, t.startTimeout)
	}
	spec := t.cmd.spec(op.Op, op.Args, t.env, timeout)
	spec.Hooks = t.hooks
	return spec, nil
}

// spawnGrouped runs spec with its process group tracked for Kill, Freeze and
// Thaw: the process-group fallback. After a stop, what is left in the
// service's groups is killed before the op counts as ended.
func (x *Executor) spawnGrouped(t engine.Target, spec Spec, stop bool) Result {
	onStart := spec.OnStart
	spec.OnStart = func(pid int) {
		x.addGroup(t, pid)
		if onStart != nil {
			onStart(pid)
		}
	}
	res := Spawn(x.ctx, spec)
	if stop && !t.Probe {
		res.Left = x.Procs(t)
		x.killGroupsLeft(t, nil)
	}
	if res.Pid != 0 {
		x.opEnded(t, res.Pid)
	}
	return res
}

// killGroupsLeft kills what is left, after a stop, in the process groups
// known for t and in extra (those of a stop an earlier svcrun ran), and
// waits (bounded) for them to be gone, as systemd's KillMode=control-group
// does: a worker that outlived its master would hold what the next start
// needs (its port).
func (x *Executor) killGroupsLeft(t engine.Target, extra []int) {
	x.gmu.Lock()
	x.pruneLocked(t)
	groups := append(slices.Sorted(maps.Keys(x.groups[t])), extra...)
	x.gmu.Unlock()
	var live []int
	for _, pgid := range groups {
		if groupHasLive(pgid) {
			live = append(live, pgid)
			signalGroup(pgid, syscall.SIGKILL)
		}
	}
	if len(live) > 0 {
		x.log.Warn("the stop left processes running: their process groups are killed",
			"service", t.String(), "groups", loglimit.Few(live))
		for _, pgid := range live {
			waitGroupGone(pgid, killWait)
		}
	}
	// A group left with zombies only is dead: forget it now rather than
	// when the reaper gets to them, so that the service's emptying is
	// decided by the stop's own end (before its OpDone), never later,
	// where it could land on the next start.
	x.gmu.Lock()
	if g := x.groups[t]; g != nil {
		for _, pgid := range groups {
			if !groupHasLive(pgid) {
				delete(g, pgid)
			}
		}
	}
	x.gmu.Unlock()
}

// Process groups: the process-container fallback (docs/decisions.md, Sandbox).

func (x *Executor) addGroup(t engine.Target, pgid int) {
	x.gmu.Lock()
	defer x.gmu.Unlock()
	g := x.groups[t]
	if g == nil {
		g = map[int]bool{}
		x.groups[t] = g
	}
	g[pgid] = true
}

// opEnded keeps the op's group only while something it left (a daemon)
// lives in it, and forgets the target's other groups that emptied. A
// service whose ops left something running is armed; if its last group
// emptied while this op ran (its daemon died meanwhile), that is reported
// now, as a cgroup's emptying would be at the end of the op.
func (x *Executor) opEnded(t engine.Target, pgid int) {
	x.gmu.Lock()
	emptied := false
	if g := x.groups[t]; g != nil {
		if _, ok := g[pgid]; ok { // a stop's cleanup may have forgotten it
			g[pgid] = false
		}
		x.pruneLocked(t)
		emptied = x.settleLocked(t)
	}
	x.gmu.Unlock()
	if emptied {
		x.post(engine.ContainerEmptied{Service: t})
	}
}

// groupExited is told that an orphan of process group pgid died (the
// reaper, where svcrun is the child subreaper). When that empties the last
// group an armed service's ops left processes in, and none of its ops
// runs, the service's daemon is gone: ContainerEmptied, as a cgroup would
// say it. While an op runs, opEnded says it.
func (x *Executor) groupExited(pgid int) {
	x.gmu.Lock()
	var emptied []engine.Target
	for t, g := range x.groups {
		if running, ok := g[pgid]; !ok || running || groupHasLive(pgid) {
			continue
		}
		delete(g, pgid)
		x.pruneLocked(t)
		if x.settleLocked(t) {
			emptied = append(emptied, t)
		}
	}
	x.gmu.Unlock()
	for _, t := range emptied {
		x.post(engine.ContainerEmptied{Service: t})
	}
}

// settleLocked arms a service whose ops left groups and none runs, and
// says whether an armed one has none left: its daemon is gone. Probes are
// never armed (nothing of theirs should outlive an op).
func (x *Executor) settleLocked(t engine.Target) (emptied bool) {
	if t.Probe {
		return false
	}
	g := x.groups[t]
	for _, running := range g {
		if running {
			return false
		}
	}
	if len(g) > 0 {
		x.armed[t] = true
		return false
	}
	emptied = x.armed[t]
	delete(x.armed, t)
	return emptied
}

func (x *Executor) pruneLocked(t engine.Target) {
	g := x.groups[t]
	for pgid, running := range g {
		if !running && !groupAlive(pgid) {
			delete(g, pgid)
		}
	}
	if len(g) == 0 {
		delete(x.groups, t)
	}
}

// signal sends sig to every known process group of the service: those of
// its running ops and those its ops left processes in.
func (x *Executor) signal(t engine.Target, sig syscall.Signal) {
	x.gmu.Lock()
	defer x.gmu.Unlock()
	x.pruneLocked(t)
	for _, pgid := range slices.Sorted(maps.Keys(x.groups[t])) {
		signalGroup(pgid, sig)
	}
}

// Groups returns the process groups known for the service (full name), for
// status and tests.
func (x *Executor) Groups(service string) []int {
	return x.groupsOf(serviceOf(service))
}

func (x *Executor) groupsOf(t engine.Target) []int {
	x.gmu.Lock()
	defer x.gmu.Unlock()
	x.pruneLocked(t)
	return slices.Sorted(maps.Keys(x.groups[t]))
}

// Procs lists the living processes of the service (no zombies): those of
// its cgroup, or in the fallback those of the process groups known for it
// (Linux only: elsewhere the fallback lists none). svcrun check counts a
// service's daemons with it.
func (x *Executor) Procs(t engine.Target) []int {
	if x.cgroupOf(t) != "" {
		if pids, err := x.cg.Procs(serviceName(t)); err == nil {
			return living(pids)
		}
	}
	return groupMembers(x.groupsOf(t))
}

// Kill ends everything in the service's process container: cgroup.kill of
// its cgroup, and SIGKILL to the process groups of its ops that ran
// without one (the fallback). In a process group, a process that left its
// group (setsid, a double fork that changes group) is out of reach; in a
// cgroup, nothing is.
func (x *Executor) Kill(service engine.Target) {
	x.containerKill(service)
	x.signal(service, syscall.SIGKILL)
}

// Freeze stops the service's processes: cgroup.freeze of its cgroup, and
// SIGSTOP to the process groups of its ops that ran without one.
func (x *Executor) Freeze(service engine.Target) {
	x.containerFreeze(service, true)
	x.signal(service, sigStop)
}

// Thaw resumes the service's processes: cgroup.freeze 0 of its cgroup, and
// SIGCONT to the process groups of its ops that ran without one.
func (x *Executor) Thaw(service engine.Target) {
	x.containerFreeze(service, false)
	x.signal(service, sigCont)
}

// waitGroupGone waits, at most bound, for the group pgid to have no live
// process.
func waitGroupGone(pgid int, bound time.Duration) {
	deadline := time.Now().Add(bound)
	for groupHasLive(pgid) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}

// mkdirAll creates <data_dir>/modules and its parents, traversable (0711) so
// that a service account can reach its own module data dir.
func mkdirAll(dir string) error {
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	return nil
}
