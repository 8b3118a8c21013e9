// Command svcrun is the node agent's service manager: it runs the modules'
// services and probes on this node (see README.md).
//
// Exit codes: 0 success; 1 the command ran and found a problem (an invalid
// manifest or configuration, a failed op, a lease not admitted, an unknown
// lease, svcrun not reachable on its socket, an API request refused); 2 the
// command line is wrong. `svcrun run` exits with CMD's status instead
// (128+N when signal N killed CMD; 127 CMD not found, 126 not startable)
// once CMD has started, and with 1 when the lease is not admitted.
//
// The commands that talk to the daemon (status, run, acquire, renew,
// release, doctor, reap, reset, enable, disable, reload) find its socket in
// --socket PATH, else in the node configuration given with --config FILE,
// else in $SVCRUN_SOCKET, else at /var/lib/svcrun/svcrun.sock (the default
// configuration's).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := (&Main{Stdout: os.Stdout, Stderr: os.Stderr}).Run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

// Main is the program with its standard streams, so that tests run it in
// process.
type Main struct {
	Stdout, Stderr io.Writer
}

// command is one subcommand: its one-line summary and its runner.
type command struct {
	summary string
	run     func(ctx context.Context, m *Main, args []string) error
}

var commands = map[string]command{
	"validate": {"check a module bundle or a node configuration", runValidate},
	"op":       {"run one op of a bundle's service or probe, as the agent would", runOp},
	"serve":    {"run svcrun: the daemon", runServe},
	"status":   {"show services, probes, memory and leases (--json)", runStatus},
	"run":      {"hold a lease while a command runs", runRun},
	"acquire":  {"acquire a lease and print its id (--json)", runAcquire},
	"renew":    {"renew a lease's TTL", runRenew},
	"release":  {"release a lease", runRelease},
	"doctor":   {"run the probes again", runDoctor},
	"reap":     {"start a reap round now", runReap},
	"reset":    {"clear a service's failures and unhealthy mark", runReset},
	"enable":   {"enable a module until the next reload", runEnable},
	"disable":  {"disable a module until the next reload", runDisable},
	"reload":   {"reload the node configuration (as SIGHUP)", runReload},
	"sandbox":  {"show what this host enforces of the sandbox (--config: per module)", runSandbox},
}

// usageError is a wrong command line: exit 2, with the usage.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// exitError carries a specific exit code whose message was already printed.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// Run runs the command line args (without the program name) and returns the
// exit code.
func (m *Main) Run(ctx context.Context, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		m.usage(m.Stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(m.Stderr, "svcrun: unknown command %q\n\n", args[0])
		m.usage(m.Stderr)
		return 2
	}
	err := cmd.run(ctx, m, args[1:])
	var ue usageError
	var ee exitError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(m.Stderr, "svcrun %s: %s\nRun 'svcrun %s -h' for usage.\n", args[0], ue.msg, args[0])
		return 2
	case errors.As(err, &ee):
		return ee.code
	default:
		fmt.Fprintf(m.Stderr, "svcrun %s: %v\n", args[0], err)
		return 1
	}
}

func (m *Main) usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: svcrun <command> [flags]\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'svcrun <command> -h' for a command's flags.")
}

// newFlagSet returns a flag set that reports errors to the caller instead of
// exiting, and prints its usage on m.Stderr.
func newFlagSet(m *Main, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(m.Stderr, "Usage: svcrun %s %s\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args; a flag error becomes a usageError (the flag
// package already printed it).
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return exitError{2}
	}
	return nil
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return fmt.Sprint(*l) }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }
