// Command svcrun is the node agent's service manager: it runs the modules'
// services and probes on this node (see README.md).
//
// Exit codes: 0 success; 1 the command ran and found a problem (an invalid
// manifest or configuration, a failed op, a lease not admitted, an unknown
// lease, svcrun not reachable on its socket, an API request refused); 2 the
// command line is wrong. `svcrun run` exits with CMD's status instead
// (128+N when signal N killed CMD; 127 CMD not found, 126 not startable),
// and with 125 for every failure of its own (a wrong command line, the
// lease not admitted, svcrun unreachable).
//
// The commands that talk to the daemon (status, events, run, acquire,
// renew, release, doctor, reap, reset, enable, disable, reload) find its socket in
// --socket PATH, else in the node configuration given with --config FILE,
// else in $SVCRUN_SOCKET, else at /run/svcrun/svcrun.sock (the packaged
// configuration's) if it exists, else in the announcement of the svcrun
// serve started last, saying so on stderr. --socket and --config may come
// before the command too.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/oarbank/svcrun/executor"
	"github.com/oarbank/svcrun/internal/cli"
)

// init keeps the main goroutine on the main thread, which serve gives to
// the executor's reaper (executor.Main): the daemons ops leave are
// re-parented to that thread, and a reaper waiting there is woken by their
// deaths only, not by every op's exit.
func init() { runtime.LockOSThread() }

func main() {
	args := hoistGlobalFlags(os.Args[1:])
	env := &cli.Env{Stdout: os.Stdout, Stderr: os.Stderr}
	if len(args) == 0 || args[0] != "serve" {
		runtime.UnlockOSThread() // only serve has a reaper
		os.Exit(runArgs(env, args))
	}
	executor.Main(func() int { return runArgs(env, args) })
}

// runArgs runs the command line args and returns the exit code.
func runArgs(env *cli.Env, args []string) int {
	if len(args) > 0 && waitsOnDaemon(args[0]) && os.Getenv("GOMAXPROCS") == "" {
		// One P: a client spends its life waiting on the socket, and with
		// a second P every goroutine it starts wakes another thread
		// (`svcrun run -- true`: 104 context switches a run with two, 88
		// with one; bench/README.md, row run, and its history in
		// bench/HISTORY.md). GOMAXPROCS set says otherwise.
		runtime.GOMAXPROCS(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return program.Run(ctx, env, args)
}

// waitsOnDaemon says whether cmd is a client of the daemon, which does its
// work: serve, op and check run ops themselves and keep every P.
func waitsOnDaemon(cmd string) bool {
	switch cmd {
	case "status", "events", "run", "container", "acquire", "renew", "release", "doctor", "reap", "reset", "enable",
		"disable", "reload":
		return true
	}
	return false
}

var program = &cli.Program{
	Name: "svcrun",
	Commands: map[string]cli.Command{
		"validate": {Summary: "check a module bundle or a node configuration", Run: runValidate},
		"op":       {Summary: "run one op of a bundle's service or probe, as the agent would", Run: runOp},
		"check":    {Summary: "check that a bundle's services and probes follow the protocol", Run: runCheck},
		"serve":    {Summary: "run svcrun: the daemon", Run: runServe},
		"status":   {Summary: "show services, probes, memory and leases (--json)", Run: runStatus},
		"run":      {Summary: "hold a lease while a command runs", Run: runRun, OwnExit: 125},
		"acquire":  {Summary: "acquire a lease and print its id (--json)", Run: runAcquire},
		"container": {Summary: "run, list, wait for, show the logs of, stop or remove the containers of the lease of " +
			"svcrun run", Run: runContainerCmd},
		"renew":   {Summary: "renew a lease's TTL", Run: runRenew},
		"release": {Summary: "release a lease", Run: runRelease},
		"doctor":  {Summary: "run the probes again", Run: runDoctor},
		"events":  {Summary: "print svcrun's event stream (-f follows it, --json)", Run: runEvents},
		"reap":    {Summary: "run a reap round; print what it destroyed, kept and why (--json)", Run: runReap},
		"reset":   {Summary: "clear a service's failures and unhealthy mark", Run: runReset},
		"enable":  {Summary: "enable a module until the next reload", Run: runEnable},
		"disable": {Summary: "disable a module until the next reload", Run: runDisable},
		"reload":  {Summary: "reload the node configuration (as SIGHUP)", Run: runReload},
		"sandbox": {Summary: "show what this host enforces of the sandbox (--config: per module)", Run: runSandbox},
		"version": {Summary: "print svcrun's version, commit and Go version (--json)", Run: runVersion},
	},
	Footer: `Run 'svcrun <command> -h' for a command's flags. Flags may come before or
after a command's arguments (up to a --), except for run and op, whose flags
come first: after run's -- comes CMD, after op's SERVICE OP the op's own ARGS.
--socket and --config may also come before the command (svcrun --socket S status).

` + exitCodes,
	Explain: explain,
}

// exitCodes is README.md's paragraph on the exit codes, word for word (a
// test keeps them the same).
const exitCodes = `Exit codes of every svcrun command: 0 success, 1 a problem was found (an
invalid file, a failed op, a rejected lease, svcrun unreachable), 2 a wrong
command line; ` + "`svcrun run`" + ` exits with its command's status, or 125
when run itself failed (not admitted, svcrun unreachable, a wrong command
line).`
