package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"golang.org/x/term"

	"github.com/oarbank/svcrun/agent"
	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/executor"
	"github.com/oarbank/svcrun/internal/cli"
	"github.com/oarbank/svcrun/sandbox"
)

// runServe is `svcrun serve [--config FILE]`: the daemon, with
// DefaultConfig when --config is not given. SIGTERM or SIGINT stop it,
// leaving services running for the next start to adopt (unless
// --stop-services-on-exit); a second one exits at once (stopOnSignals).
// SIGHUP reloads the configuration. Under systemd (Type=notify) it sends
// READY=1 once its API socket listens, RELOADING=1 and READY=1 around a
// SIGHUP reload, STOPPING=1 when it begins to stop, and WATCHDOG=1 from the
// agent's loop when the unit has WatchdogSec=.
func runServe(ctx context.Context, m *cli.Env, args []string) error {
	fs := m.FlagSet("serve",
		"[--config FILE] [--stop-services-on-exit] [--cgroup-parent DIR] [--log-level LEVEL] [--log-format text|json]")
	config := fs.String("config", DefaultConfig, "the node configuration `FILE` (svcrun.toml)")
	stopOnExit := fs.Bool("stop-services-on-exit", false,
		"stop every service when svcrun exits (default: leave them for the next start to adopt)")
	cgroupParent := fs.String("cgroup-parent", "", "create the containers' cgroup base in this cgroup `DIR` (e.g. "+
		"/sys/fs/cgroup/system.slice/svcrun.service with systemd's DelegateSubgroup=) instead of svcrun's own cgroup")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	format := fs.String("log-format", "", "text or json (default: text on a terminal, json otherwise)")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if err := cli.NoArgs(fs); err != nil {
		return err
	}
	if *config == "" {
		return cli.UsageError{Msg: "--config: give a node configuration FILE (see examples/node.toml)"}
	}
	if *cgroupParent != "" && !filepath.IsAbs(*cgroupParent) {
		return cli.Usagef(
			"--cgroup-parent %q: give the cgroup's absolute path, such as /sys/fs/cgroup/system.slice/svcrun.service",
			*cgroupParent)
	}
	log, err := newLogger(m, *level, *format)
	if err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	// Ops are born unable to dump core (docs/decisions.md, Sandbox): svcrun's own hard
	// limit goes to 0 first, since children inherit it.
	if err := sandbox.DisableCores(); err != nil {
		log.Warn("core dumps of ops not disabled", "error", err)
	}
	// The kernel kills a daemon before svcrun under memory pressure; the
	// ops, and so the daemons, are forked with 0 (agent.OOMScoreAdj, which
	// Open reads). A failure is logged once Open succeeds: a refused
	// start's error comes first, alone.
	oomErr := agent.SetOOMScoreAdj(agent.OOMScoreAdj)
	if os.Getenv("GOGC") == "" {
		defer agent.TuneGC()()
	}
	sd := newNotifier()
	every, err := watchdogInterval()
	if err != nil {
		log.Warn("no systemd watchdog pings: systemd will restart svcrun when its WatchdogSec= ends", "error", err)
	}
	opts := agent.Options{ConfigPath: *config, Logger: log, StopServicesOnExit: *stopOnExit, CgroupParent: *cgroupParent}
	// The daemons ops leave are re-parented to svcrun, whose reaper reaps
	// them the moment they die (in process groups, its orphan exits are
	// their crash events); nothing else of svcrun may start children
	// outside executor.
	opts.NewExecutor = func(c executor.Config, post func(engine.Event)) (agent.Executor, error) {
		c.Subreaper = true
		return executor.New(c, post)
	}
	if every > 0 {
		opts.WatchdogEvery = every
		opts.Watchdog = func() { notify(sd, log, "WATCHDOG=1") }
	}
	a, err := agent.Open(opts)
	if err != nil {
		return err // "svcrun serve: " and the reason, as every command's error
	}
	if oomErr != nil {
		log.Warn("svcrun's oom_score_adj not lowered: under memory pressure the kernel may kill svcrun rather than a daemon",
			"error", oomErr)
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	defer signal.Stop(sigs)
	served := make(chan struct{})
	defer close(served)
	go stopOnSignals(sigs, served, stop, log)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-ctx.Done():
				notify(sd, log, "STOPPING=1")
				return
			case <-hup:
				// The agent logs the verdict and makes it an event.
				notify(sd, log, reloading())
				_, _ = a.Reload(ctx)
				notify(sd, log, "READY=1")
			}
		}
	}()
	srv, err := startAPI(ctx, a, log)
	if err != nil {
		return err
	}
	defer srv.Close()
	notify(sd, log, "READY=1")
	if undo, err := announce(a.Config().Socket); err != nil {
		log.Warn("socket not announced: commands must be given --socket or --config", "file", announceFile(), "error", err)
	} else {
		defer undo()
	}
	if err := a.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// stopOnSignals stops svcrun at the first SIGTERM or SIGINT, and at a
// second one exits at once instead of waiting for the ops in flight and the
// stops of --stop-services-on-exit (up to two shutdown graces). main's
// context sees the signals too, and as long as it does their default
// action is off: the exit must be explicit. Exiting then is a kill -9 as far
// as the state is concerned (the write-ahead log loses nothing admitted);
// services and the ops still running stay, to be adopted by the next start.
func stopOnSignals(sigs <-chan os.Signal, served <-chan struct{}, stop func(), log *slog.Logger) {
	var sig os.Signal
	select {
	case sig = <-sigs:
	case <-served:
		return
	}
	log.Info("stopping: a second SIGTERM or SIGINT exits at once", "signal", sig.String())
	stop()
	select {
	case sig = <-sigs:
	case <-served:
		return
	}
	log.Warn("second signal: exiting now; services and ops still running are left for the next start to adopt",
		"signal", sig.String())
	os.Exit(1)
}

// notify sends msg to systemd; a failure is logged and otherwise ignored:
// svcrun runs the same whether systemd hears of it or not.
func notify(sd notifier, log *slog.Logger, msg string) {
	if err := sd.send(msg); err != nil {
		log.Warn("systemd not notified", "message", msg, "error", err)
	}
}

func newLogger(m *cli.Env, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	if format == "" {
		format = "json"
		if f, ok := m.Stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			format = "text"
		}
	}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(m.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(m.Stderr, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: use text or json", format)
}
