// Package cli is the one command-line framework of the project's binaries
// (svcrun, svcsim): subcommands in a table, flags that report errors
// instead of exiting, the "--" rule, and one mapping from errors to exit
// codes:
//
//	0  success
//	1  the command ran and found a problem (printed by Run; a report of its own by the command)
//	2  the command line is wrong (one line naming the mistake, and a pointer to -h)
//
// output.go holds where each kind of output goes; flags.go how command
// lines are read.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/oarbank/svcrun/internal/suggest"
)

// Env is what a command prints with: its standard streams (so that tests
// run it in process) and its name.
type Env struct {
	Stdout, Stderr io.Writer
	prog, cmd      string // set by Program.Run, to name the command in what it prints
	json           *bool  // the command's --json (JSONFlag): failures as JSON on stdout
}

// ForCommand is the Env that Program.Run gives command cmd of program
// prog: for a test of a command's parts.
func ForCommand(prog, cmd string, stdout, stderr io.Writer) *Env {
	return &Env{Stdout: stdout, Stderr: stderr, prog: prog, cmd: cmd}
}

// Command is one subcommand.
type Command struct {
	Summary string
	Run     func(ctx context.Context, env *Env, args []string) error
	// OwnExit, when not 0, is the exit code of the command's own failures
	// (a wrong command line, a problem), instead of 2 and 1: a command that
	// runs another one (svcrun run) exits with that one's status
	// (ChildExit), and its callers must tell the two apart.
	OwnExit int
}

// ChildExit is the exit status of a command that a command ran, passed
// on as the command's own (never replaced by OwnExit).
type ChildExit struct{ Code int }

func (e ChildExit) Error() string { return fmt.Sprintf("the command's exit status %d", e.Code) }

// UsageError is a wrong command line: exit 2, with the message.
type UsageError struct{ Msg string }

func (e UsageError) Error() string { return e.Msg }

// Usagef makes a UsageError.
func Usagef(format string, args ...any) error { return UsageError{fmt.Sprintf(format, args...)} }

// ExitError carries an exit code whose message was already printed.
type ExitError struct{ Code int }

func (e ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// Program is a binary with subcommands.
type Program struct {
	Name     string
	Commands map[string]Command
	Footer   string // printed after the command list
	// Explain gives the code (and a rejection's reason) that --json
	// reports for an error a command returned that is no Failure: the
	// program knows its errors' kinds, the framework does not.
	Explain func(err error) (code, reason string)
}

// Run runs args (without the program name) and returns the exit code.
func (p *Program) Run(ctx context.Context, env *Env, args []string) int {
	e := *env
	e.prog = p.Name
	if len(args) == 0 {
		p.usage(e.Stderr)
		return 2
	}
	if isHelp(args[0]) {
		p.usage(e.Stdout)
		return 0
	}
	cmd, ok := p.Commands[args[0]]
	if !ok {
		names := make([]string, 0, len(p.Commands))
		for name := range p.Commands {
			names = append(names, name)
		}
		slices.Sort(names)
		if s := suggest.Closest(args[0], names); s != "" {
			fmt.Fprintf(e.Stderr, "%s: unknown command %q (did you mean %q?)\nRun '%s -h' for usage.\n",
				p.Name, args[0], s, p.Name)
			return 2
		}
		fmt.Fprintf(e.Stderr, "%s: unknown command %q\n\n", p.Name, args[0])
		p.usage(e.Stderr)
		return 2
	}
	e.cmd = args[0]
	err := cmd.Run(ctx, &e, args[1:])
	code := exit(&e, err, p.Explain)
	var child ChildExit
	if cmd.OwnExit != 0 && code != 0 && !errors.As(err, &child) {
		code = cmd.OwnExit
	}
	return code
}

func isHelp(arg string) bool { return arg == "-h" || arg == "--help" || arg == "help" }
