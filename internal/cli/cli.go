// Package cli is the common shape of the project's commands (svcrun,
// svcsim): subcommands in a table, flags that report errors instead of
// exiting, and one mapping from errors to exit codes:
//
//	0  success
//	1  the command ran and found a problem (printed by the command)
//	2  the command line is wrong (printed with a pointer to -h)
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Env is a command's standard streams, so that tests run it in process.
type Env struct {
	Stdout, Stderr io.Writer
}

// Command is one subcommand.
type Command struct {
	Summary string
	Run     func(ctx context.Context, env *Env, args []string) error
}

// UsageError is a wrong command line: exit 2, with the message.
type UsageError struct{ Msg string }

func (e UsageError) Error() string { return e.Msg }

// Usagef makes a UsageError.
func Usagef(format string, args ...any) error { return UsageError{fmt.Sprintf(format, args...)} }

// ExitError carries an exit code whose message was already printed.
type ExitError struct{ Code int }

func (e ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// Program is a command with subcommands.
type Program struct {
	Name     string
	Commands map[string]Command
	Footer   string // printed after the command list
}

// Run runs args (without the program name) and returns the exit code.
func (p *Program) Run(ctx context.Context, env *Env, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) == 0 {
			p.usage(env.Stderr)
			return 2
		}
		p.usage(env.Stdout)
		return 0
	}
	cmd, ok := p.Commands[args[0]]
	if !ok {
		fmt.Fprintf(env.Stderr, "%s: unknown command %q\n\n", p.Name, args[0])
		p.usage(env.Stderr)
		return 2
	}
	err := cmd.Run(ctx, env, args[1:])
	var ue UsageError
	var ee ExitError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(env.Stderr, "%s %s: %s\nRun '%s %s -h' for usage.\n", p.Name, args[0], ue.Msg, p.Name, args[0])
		return 2
	case errors.As(err, &ee):
		return ee.Code
	default:
		fmt.Fprintf(env.Stderr, "%s %s: %v\n", p.Name, args[0], err)
		return 1
	}
}

func (p *Program) usage(w io.Writer) {
	fmt.Fprintf(w, "Usage: %s <command> [flags] [args]\n\nCommands:\n", p.Name)
	names := make([]string, 0, len(p.Commands))
	width := 0
	for n := range p.Commands {
		names = append(names, n)
		width = max(width, len(n))
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-*s  %s\n", width, n, p.Commands[n].Summary)
	}
	if p.Footer != "" {
		fmt.Fprintf(w, "\n%s\n", p.Footer)
	}
}

// FlagSet returns a flag set for "prog name" that reports errors to the
// caller and prints its usage on env.Stderr.
func FlagSet(env *Env, prog, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(env.Stderr, "Usage: %s %s %s\n", prog, name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// Parse parses flags anywhere among the arguments ("test DIR -rewrite" as
// well as "test -rewrite DIR"; "--" ends the flags) and returns the others.
// A flag error was already printed by the flag package: it becomes exit 2.
func Parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, ExitError{2}
		}
		parsed := args[:len(args)-len(fs.Args())]
		args = fs.Args()
		if len(args) == 0 {
			return rest, nil
		}
		if EndsWithTerminator(fs, parsed) {
			return append(rest, args...), nil
		}
		rest = append(rest, args[0])
		args = args[1:]
	}
}

// StringList is a repeatable string flag.
type StringList []string

func (l *StringList) String() string     { return fmt.Sprint(*l) }
func (l *StringList) Set(v string) error { *l = append(*l, v); return nil }

// ParseLeading parses the flags before the first argument, as the flag
// package does, so that what follows (an op's own arguments, a command to
// run) is never taken for ours.
func ParseLeading(fs *flag.FlagSet, args []string) ([]string, error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, ExitError{2}
	}
	return fs.Args(), nil
}

// EndsWithTerminator tells whether the flags the flag package parsed end
// with a "--" terminator, rather than with "--" as the value of a flag
// (--job --).
func EndsWithTerminator(fs *flag.FlagSet, parsed []string) bool {
	for i := 0; i < len(parsed); i++ {
		a := parsed[i]
		if a == "--" {
			return true
		}
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		if f := fs.Lookup(name); f != nil {
			if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
				continue
			}
			i++ // the flag's value
		}
	}
	return false
}
