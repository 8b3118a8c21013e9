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
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/oarbank/svcrun/internal/cli"
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
	fmt.Fprintln(w, "Usage: svcrun <command> [flags] [arguments]\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'svcrun <command> -h' for a command's flags. Flags may come before or")
	fmt.Fprintln(w, "after a command's arguments (up to a --), except for run and op, whose flags")
	fmt.Fprintln(w, "come first: after run's -- comes CMD, after op's SERVICE OP the op's own ARGS.")
	fmt.Fprintf(w, "\n%s\n", exitCodes)
}

// exitCodes is README.md's paragraph on the exit codes, word for word (a
// test keeps them the same).
const exitCodes = `Exit codes of every svcrun command: 0 success, 1 a problem was found (an
invalid file, a failed op, a rejected lease, svcrun unreachable), 2 a wrong
command line; ` + "`svcrun run`" + ` exits with its command's status.`

// newFlagSet returns a flag set that reports errors to the caller instead of
// exiting, and prints its usage on m.Stderr when asked with -h.
func newFlagSet(m *Main, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(m.Stderr, "Usage: svcrun %s %s\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses the flags before the first argument, as the flag
// package does: what follows (the command of svcrun run, the op's own
// arguments of svcrun op) is never taken for flags. -h prints the usage; a
// flag error becomes a usageError, a single line naming the flag, the
// value and what is accepted (not the whole usage).
func parseFlags(fs *flag.FlagSet, args []string) error {
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = usage
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		usage()
		return err
	}
	return usageError{flagError(err.Error())}
}

// parseMixed parses a command line whose arguments are plain names
// (MODULE, LEASE, ...): flags may come before, between or after them, up
// to a "--" after which everything is an argument. fs.Args() are then the
// arguments.
func parseMixed(fs *flag.FlagSet, args []string) error {
	var positional []string
	for {
		if err := parseFlags(fs, args); err != nil {
			return err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if cli.EndsWithTerminator(fs, args[:len(args)-len(rest)]) {
			positional = append(positional, rest...)
			break
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
	return fs.Parse(append([]string{"--"}, positional...))
}

// flagError rewrites the flag package's `invalid value "5x" for flag
// -wait: REASON` as `--wait "5x": REASON`; other messages stay.
func flagError(msg string) string {
	rest, ok := strings.CutPrefix(msg, "invalid value ")
	if !ok {
		return msg
	}
	value, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return msg
	}
	rest, ok = strings.CutPrefix(rest[len(value):], " for flag -")
	name, reason, ok2 := strings.Cut(rest, ": ")
	if !ok || !ok2 {
		return msg
	}
	return "--" + name + " " + value + ": " + reason
}

// durationFlag defines a duration flag whose bad value is reported with
// what a duration looks like. Put `DUR` in usage to name the value.
func durationFlag(fs *flag.FlagSet, name string, value time.Duration, usage string) *time.Duration {
	p := new(time.Duration)
	*p = value
	fs.Var((*durationValue)(p), name, usage)
	return p
}

// durationValue is the flag.Value of durationFlag.
type durationValue time.Duration

func (d *durationValue) String() string { return (*time.Duration)(d).String() }

func (d *durationValue) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("not a duration: use a number with a unit, such as 500ms, 30s, 5m or 1h30m")
	}
	*d = durationValue(v)
	return nil
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return fmt.Sprint(*l) }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }
