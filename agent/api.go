package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/errdefs"
	"github.com/oarbank/svcrun/internal/ids"
	"github.com/oarbank/svcrun/nodeconfig"
	"github.com/oarbank/svcrun/sandbox"
)

// AcquireRequest asks for a lease. An attempt holds one lease: asked again
// with the same attempt and requirements, Acquire answers with the lease
// already admitted (see engine.AlreadyHeld).
type AcquireRequest struct {
	Job     string
	Attempt string // NewAttemptID when empty
	engine.Requirements
	Wait time.Duration // how long to wait for admission
	TTL  time.Duration // 0: held until released
}

// Grant is an admitted lease.
type Grant struct {
	Lease    engine.LeaseID
	Attempt  string
	Services []string
	Expires  time.Time
	NodeID   string
	// Uses and Probes are what the lease depends on as it was admitted:
	// its services, and the probes establishing the capabilities it asked
	// for, with their latest fingerprints (attrs).
	Uses   []engine.ServiceStatus
	Probes []engine.ProbeStatus
}

// ErrRemovesEveryModule refuses a reload of a configuration without
// modules while modules run: an emptied or truncated file must not stop
// every service.
var ErrRemovesEveryModule = errors.New("it would remove every module and stop their services")

// Acquire asks for a lease and waits for the answer: admitted, rejected
// (an *errdefs.RejectedError with the reason), or ctx done, in which case the
// request is withdrawn.
func (a *Agent) Acquire(ctx context.Context, req AcquireRequest) (Grant, error) {
	if err := a.writable(true); err != nil {
		return Grant{}, err
	}
	id := engine.LeaseID(ids.New("lease-"))
	if req.Attempt == "" {
		req.Attempt = ids.Attempt()
	}
	ev := engine.Acquire{
		Lease: id, Job: req.Job, Attempt: req.Attempt, Requirements: req.Requirements,
		Wait: req.Wait, TTL: req.TTL,
	}
	// The answer arrives here from the loop: the step that decides it
	// hands it to the driver's Answer hook (answer), whose deliver sends
	// it to this call's waiter, with what the lease uses as it was
	// admitted.
	r, err := a.call(ctx, leaseKey(id), ev, acquireAnswer)
	if err != nil {
		if errors.Is(err, ctx.Err()) { // posted, and nobody waits for it now
			a.withdraw(id)
		}
		return Grant{}, err
	}
	switch f := r.f.(type) {
	case engine.Admitted:
		g := Grant{
			Lease: id, Attempt: req.Attempt, Services: f.Services, NodeID: a.cfg.NodeID,
			Uses: r.uses, Probes: r.probes,
		}
		if req.TTL > 0 {
			g.Expires = a.opts.Clock.Now().Add(req.TTL)
		}
		return g, nil
	case engine.AlreadyHeld:
		return Grant{
			Lease: f.Held, Attempt: req.Attempt, Services: f.Services, Expires: f.Expires, NodeID: a.cfg.NodeID,
			Uses: r.uses, Probes: r.probes,
		}, nil
	case engine.Rejected:
		return Grant{}, &errdefs.RejectedError{Reason: f.Reason}
	}
	return Grant{}, fmt.Errorf("acquire %s: unexpected answer %s", id, engine.FormatEffect(r.f))
}

// leaseCall posts a renew or release and waits for its answer; an unknown
// lease is an error.
func (a *Agent) leaseCall(ctx context.Context, id engine.LeaseID, ev engine.Event,
	accepts func(engine.Effect) bool) (engine.Effect, error) {
	r, err := a.call(ctx, leaseKey(id), ev, accepts)
	if err != nil {
		return nil, err
	}
	if u, unknown := r.f.(engine.LeaseUnknown); unknown {
		if u.Reason != "" {
			return nil, &errdefs.LeaseEndedError{Reason: u.Reason}
		}
		return nil, errdefs.ErrUnknownLease
	}
	return r.f, nil
}

// Renew extends a lease's TTL and returns its new expiry (zero: no TTL).
func (a *Agent) Renew(ctx context.Context, id engine.LeaseID) (time.Time, error) {
	if err := a.writable(true); err != nil {
		return time.Time{}, err
	}
	f, err := a.leaseCall(ctx, id, engine.Renew{Lease: id}, renewAnswer)
	if err != nil {
		return time.Time{}, err
	}
	if r, ok := f.(engine.Renewed); ok {
		return r.Expires, nil
	}
	return time.Time{}, fmt.Errorf("unexpected answer %s", engine.FormatEffect(f))
}

// Release ends a lease.
func (a *Agent) Release(ctx context.Context, id engine.LeaseID) error {
	if err := a.writable(false); err != nil {
		return err
	}
	_, err := a.leaseCall(ctx, id, engine.Release{Lease: id}, releaseAnswer)
	return err
}

// Status is the engine's view and what the agent adds to it.
type Status struct {
	engine.Status
	NodeID    string
	Platform  string
	Config    string
	DataDir   string
	Socket    string
	Sandbox   string
	StartedAt time.Time
	Steps     uint64
	// Containers says how services are contained on this host (cgroup v2
	// and what of it works, or process groups and why).
	Containers string
	// SandboxHost is what this host's kernel can enforce; SandboxMissing
	// lists, per module, the layers that are not applied.
	SandboxHost    string
	SandboxMissing []string
	// ContainerModes is, per service, "cgroup" or "process-group: reason".
	ContainerModes map[string]string
	// StoreFull says why new and renewed leases are refused while the
	// data dir is full ("the data dir is full: DIR: reason"); empty
	// otherwise.
	StoreFull string
	// StoreUnlinked says why every request that needs a write is refused
	// once the state file or its log was deleted or replaced under
	// svcrun; empty otherwise.
	StoreUnlinked string
}

// Status returns the view after the last stored step (see snapshots),
// with Now the time it is asked.
func (a *Agent) Status(ctx context.Context) (Status, error) {
	snap, err := a.current(ctx)
	if err != nil {
		return Status{}, err
	}
	st := *snap
	// The snapshot is as of the engine's last step, perhaps long ago on an
	// idle node: "ago" and "in" are computed from when status is asked.
	st.Now = a.opts.Clock.Now()
	// Callers may sort or change what they get; the snapshot is shared.
	st.Services, st.Probes = slices.Clone(st.Services), slices.Clone(st.Probes)
	st.Leases, st.Pools = slices.Clone(st.Leases), slices.Clone(st.Pools)
	st.ContainerModes = map[string]string{}
	for _, s := range st.Services {
		st.ContainerModes[s.Name] = a.exec.ContainerMode(s.Name)
	}
	if err := a.db.Full(); err != nil {
		st.StoreFull = err.Error()
	}
	if err := a.db.Unlinked(); err != nil {
		st.StoreUnlinked = err.Error()
	}
	return st, nil
}

// Doctor runs the probes again.
func (a *Agent) Doctor(reason string) error {
	if reason == "" {
		reason = "explicit request"
	}
	return a.post(engine.Doctor{Reason: reason})
}

// Reap runs a reap round and waits for its end: now, or, while a round
// runs, the next one (engine.ReapNow). If ctx ends first the round still
// runs; only the answer is lost.
func (a *Agent) Reap(ctx context.Context) (engine.ReapDone, error) {
	if err := a.writable(false); err != nil {
		return engine.ReapDone{}, err
	}
	ticket := ids.New("reap-")
	r, err := a.call(ctx, reapKey(ticket), engine.ReapNow{Ticket: ticket}, reapAnswer)
	if err != nil {
		return engine.ReapDone{}, err
	}
	return r.f.(engine.ReapDone), nil
}

// Reset clears a service's failures and unhealthy mark.
func (a *Agent) Reset(ctx context.Context, t engine.Target) error {
	if err := a.writable(false); err != nil {
		return err
	}
	if err := a.knownService(ctx, t); err != nil {
		return err
	}
	return a.post(engine.Reset{Service: t})
}

// Process is one process in a service's container.
type Process struct {
	PID     int
	Command string // /proc/PID/comm, "" once it is gone
}

// Processes lists the living processes in service t's container (its
// cgroup, or its process groups in the fallback), for `svcrun status NAME`.
func (a *Agent) Processes(ctx context.Context, t engine.Target) ([]Process, error) {
	if err := a.knownService(ctx, t); err != nil {
		return nil, err
	}
	var out []Process
	for _, pid := range a.exec.Procs(t) {
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		out = append(out, Process{PID: pid, Command: strings.TrimSpace(string(comm))})
	}
	return out, nil
}

// knownService refuses a service the engine does not have, looked up in
// the published snapshot (see Status.service).
func (a *Agent) knownService(ctx context.Context, t engine.Target) error {
	st, err := a.current(ctx)
	if err != nil {
		return err
	}
	if _, ok := st.service(t); ok {
		return nil
	}
	return &errdefs.NotFoundError{Kind: "service", Name: t.String(), Known: st.serviceNames()}
}

// SetModuleEnabled enables or disables a module until the next reload or
// restart (the configuration file is not changed).
func (a *Agent) SetModuleEnabled(ctx context.Context, module string, enabled bool) error {
	if err := a.writable(false); err != nil {
		return err
	}
	var err error
	done := a.onLoop(ctx, func() {
		i := -1
		var names []string
		for j, m := range a.mods {
			names = append(names, m.Manifest.Name)
			if m.Manifest.Name == module {
				i = j
			}
		}
		if i < 0 {
			sort.Strings(names)
			err = &errdefs.NotFoundError{Kind: "module", Name: module, Known: names}
			return
		}
		a.mods[i].Config.Enabled = enabled
		reason := "disabled through svcrun's API (svcrun disable)"
		if enabled {
			reason = "enabled through svcrun's API (svcrun enable)"
		}
		err = a.step(engine.Reload{Modules: a.specs(), Reason: reason})
	})
	return errors.Join(done, err)
}

// Reload reads the configuration file and the modules again and applies
// them. On any error nothing changes, and the refusal is logged at ERROR
// with every error of the file and is a record of the event stream
// (reload-refused); an applied reload is one too (reloaded).
//
// run_as, socket_group and metrics_listen are refused when changed
// (ErrNeedsRestart): they are who ops run as and who owns the module data
// dirs, the socket's mode, a listener, which a running svcrun cannot
// change whole. Other node settings (data dir, budget, periods, sandbox)
// keep their running values everywhere, ops included, until the next
// start; the returned notes say which changed.
//
// A module gone from the file is disabled: its services get their stop
// ops and leave once stopped. Its ops keep the executor's targets of the
// old configuration until then (a.retired), or the stop would fail as an
// unknown target and escalate to a kill. A file without modules while
// some are enabled is refused (ErrRemovesEveryModule).
func (a *Agent) Reload(ctx context.Context) (notes []string, err error) {
	// One at a time, file read included: two reloads racing could apply
	// the older file last.
	a.reload.Lock()
	defer a.reload.Unlock()
	if err := a.writable(false); err != nil {
		return nil, err
	}
	notes, err = a.reloadFile(ctx)
	switch {
	case errors.Is(err, errdefs.ErrStopping):
	case err != nil:
		a.log.Error("reload refused: the running configuration stays", "file", a.file, "errors", errorLines(err))
		a.publishOutside(Record{At: a.opts.Clock.Now(), Kind: RecordReloadRefused,
			Text: fmt.Sprintf("reload of %s refused, the running configuration stays: %s", a.file,
				strings.Join(errorLines(err), "; "))})
	default:
		for _, n := range notes {
			a.log.Warn("reload: takes effect at the next start", "setting", n)
		}
		text := "configuration " + a.file + " reloaded"
		if len(notes) > 0 {
			text += "; changed but applied only at the next start of svcrun: " + strings.Join(notes, ", ")
		}
		a.log.Info("configuration reloaded", "file", a.file, "restart_needed_for", notes)
		a.publishOutside(Record{At: a.opts.Clock.Now(), Kind: RecordReloaded, Text: text})
	}
	return notes, err
}

// ErrNeedsRestart refuses a reload that changes a setting only a restart
// of svcrun applies whole.
var ErrNeedsRestart = errors.New("needs a restart of svcrun (systemctl restart svcrun: the services keep running)")

func (a *Agent) reloadFile(ctx context.Context) (notes []string, err error) {
	cfg, err := nodeconfig.Load(a.file)
	if err != nil {
		return nil, err
	}
	if err := needsRestart(a.cfg, cfg); err != nil {
		return nil, err
	}
	mods, err := nodeconfig.LoadModules(cfg)
	if err != nil {
		return nil, err
	}
	var stepErr error
	done := a.onLoop(ctx, func() {
		if err := refuseRemovingAll(a.mods, cfg, mods); err != nil {
			stepErr = err
			return
		}
		notes = restartOnly(a.cfg, cfg)
		// Settings that need a restart keep their running values, for
		// the ops too: a sandbox mode taken by the executor alone would
		// run ops under a mode that status does not show.
		keep := *a.cfg
		keep.Modules, keep.Limits, keep.Warnings = cfg.Modules, cfg.Limits, cfg.Warnings
		retired := a.stillStopping(mods)
		if err := a.exec.Update(a.execConfig(&keep, slices.Concat(mods, retired))); err != nil {
			stepErr = err
			return
		}
		a.retired = retired
		a.cfg, a.mods = &keep, mods
		a.reloadBroker(mods)
		a.sandboxMissing = sandbox.Report(a.cfg, a.mods)
		stepErr = a.step(engine.Reload{Modules: a.specs()})
	})
	return notes, errors.Join(done, stepErr)
}

// needsRestart refuses the settings that a reload cannot apply whole,
// naming each with its running and new values.
func needsRestart(old, cur *nodeconfig.Config) error {
	var changed []string
	check := func(key, was, now string) {
		if was != now {
			changed = append(changed, fmt.Sprintf("%s (%s, was %s)", key, quoteOrUnset(now), quoteOrUnset(was)))
		}
	}
	check("run_as", old.RunAs, cur.RunAs)
	check("socket_group", old.SocketGroup, cur.SocketGroup)
	check("metrics_listen", old.MetricsListen, cur.MetricsListen)
	if len(changed) == 0 {
		return nil
	}
	return fmt.Errorf("%s changes %s: %w; the reload changed nothing", cur.File,
		strings.Join(changed, ", "), ErrNeedsRestart)
}

func quoteOrUnset(v string) string {
	if v == "" {
		return "unset"
	}
	return strconv.Quote(v)
}

// errorLines is an error of the configuration as its lines: one per
// mistake of the file.
func errorLines(err error) []string {
	return strings.Split(err.Error(), "\n")
}

// stillStopping lists the modules that the new set mods drops, or dropped
// at an earlier reload, and that the engine still has services of: their
// stop ops need their targets. On the loop.
func (a *Agent) stillStopping(mods []nodeconfig.LoadedModule) []nodeconfig.LoadedModule {
	kept := map[string]bool{}
	for _, m := range mods {
		kept[m.Manifest.Name] = true
	}
	inEngine := map[string]bool{}
	for _, s := range a.engine.Status().Services {
		inEngine[s.Module] = true
	}
	var out []nodeconfig.LoadedModule
	for _, r := range a.retired {
		if name := r.Manifest.Name; !kept[name] && inEngine[name] {
			out = append(out, r)
			kept[name] = true
		}
	}
	for _, m := range a.mods {
		if name := m.Manifest.Name; !kept[name] && inEngine[name] {
			out = append(out, m)
		}
	}
	return out
}

// refuseRemovingAll refuses a new configuration without modules while the
// running one has modules enabled. Disabling them first (enabled = false)
// stops them on purpose; a later reload may then drop them.
func refuseRemovingAll(oldMods []nodeconfig.LoadedModule, cur *nodeconfig.Config,
	mods []nodeconfig.LoadedModule) error {
	if len(mods) > 0 {
		return nil
	}
	var enabled []string
	for _, m := range oldMods {
		if m.Config.Enabled {
			enabled = append(enabled, m.Manifest.Name)
		}
	}
	if len(enabled) == 0 {
		return nil
	}
	return fmt.Errorf("%s lists no modules: %w (%s); to stop them all on purpose, keep them in "+
		"the file with enabled = false and reload, then remove them",
		cur.File, ErrRemovesEveryModule, strings.Join(enabled, ", "))
}

// restartOnly lists the node settings that differ but apply only at start.
func restartOnly(old, cur *nodeconfig.Config) []string {
	var out []string
	check := func(name string, changed bool) {
		if changed {
			out = append(out, name)
		}
	}
	check("node_id", old.NodeID != cur.NodeID)
	check("data_dir", old.DataDir != cur.DataDir)
	check("socket", old.Socket != cur.Socket)
	check("platform", old.Platform != cur.Platform)
	check("memory_budget_gb", old.MemoryBudgetGB != cur.MemoryBudgetGB)
	check("sandbox", old.Sandbox != cur.Sandbox)
	check("max_concurrent_ops", old.MaxConcurrentOps != cur.MaxConcurrentOps)
	check("status_period_s", old.StatusPeriod != cur.StatusPeriod)
	check("watched_status_period_s", old.WatchedStatusPeriod != cur.WatchedStatusPeriod)
	check("fingerprint_period_s", old.FingerprintPeriod != cur.FingerprintPeriod)
	check("reap_period_s", old.ReapPeriod != cur.ReapPeriod)
	check("reap_sweep_period_s", old.ReapSweepPeriod != cur.ReapSweepPeriod)
	check("memory_pressure", old.MemoryPressure != cur.MemoryPressure)
	return out
}
