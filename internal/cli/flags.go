package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/oarbank/svcrun/internal/suggest"
)

// FlagSet returns the flag set of command name: its errors are returned,
// not printed (Parse makes them one line), and -h prints "Usage: PROG NAME
// SYNOPSIS" and the flags on stdout.
func (e *Env) FlagSet(name, synopsis string) *flag.FlagSet {
	if e.prog != "" {
		name = e.prog + " " + name
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() { commandUsage(e, fs, synopsis) }
	return fs
}

// Parse parses a command line whose arguments are plain names (MODULE,
// LEASE, DIR, ...): flags may come before, between or after them, up to a
// "--" after which everything is an argument. fs.Args() are then the
// arguments.
func Parse(fs *flag.FlagSet, args []string) error {
	var positional []string
	for {
		if err := ParseLeading(fs, args); err != nil {
			return err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if endsWithTerminator(fs, args[:len(args)-len(rest)]) {
			positional = append(positional, rest...)
			break
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
	return fs.Parse(append([]string{"--"}, positional...))
}

// ParseLeading parses the flags before the first argument, as the flag
// package does: what follows (the command of svcrun run, the op's own
// arguments of svcrun op) is never taken for flags. -h prints the usage
// and returns flag.ErrHelp (exit 0); a flag error becomes a UsageError, a
// single line naming the flag, the value and what is accepted (not the
// whole usage).
func ParseLeading(fs *flag.FlagSet, args []string) error {
	usage := fs.Usage
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.Usage = usage
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		usage()
		return err
	}
	return UsageError{flagError(fs, err.Error())}
}

// endsWithTerminator tells whether the flags the flag package parsed end
// with a "--" terminator, rather than with "--" as the value of a flag
// (--job --).
func endsWithTerminator(fs *flag.FlagSet, parsed []string) bool {
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

// flagError rewrites the flag package's `invalid value "5x" for flag
// -wait: REASON` as `--wait "5x": REASON`, and `flag provided but not
// defined: -wiat` as `unknown flag --wiat (did you mean --wait?)`, and
// `flag needs an argument: -wait` as `--wait needs a value`; other messages
// stay.
func flagError(fs *flag.FlagSet, msg string) string {
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		msg = "unknown flag --" + name
		if s := suggest.Closest(name, names); s != "" {
			msg += " (did you mean --" + s + "?)"
		}
		return msg
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return "--" + name + " needs a value"
	}
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

// NoArgs checks that the parsed command line left no arguments.
func NoArgs(fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		return Usagef("unexpected argument %q: %s takes flags only%s", fs.Arg(0), fs.Name(), afterTerminator(fs.Arg(0)))
	}
	return nil
}

// OneArg returns the single argument, named what; hint says what it is,
// e.g. " (the id svcrun acquire printed)".
func OneArg(fs *flag.FlagSet, what, hint string) (string, error) {
	switch fs.NArg() {
	case 0:
		return "", UsageError{"give " + what + hint}
	case 1:
		return fs.Arg(0), nil
	}
	return "",
		Usagef("unexpected argument %q: %s takes one %s%s%s", fs.Arg(1), fs.Name(), what, hint, afterTerminator(fs.Arg(1)))
}

// afterTerminator explains an argument that looks like a flag: it came
// after "--".
func afterTerminator(arg string) string {
	if len(arg) > 1 && strings.HasPrefix(arg, "-") {
		return "; it came after --, where flags are taken for arguments: put it before the --"
	}
	return ""
}

// Duration defines a duration flag whose bad value is reported with what a
// duration looks like. Put `DUR` in usage to name the value.
func Duration(fs *flag.FlagSet, name string, value time.Duration, usage string) *time.Duration {
	p := new(time.Duration)
	*p = value
	fs.Var((*durationValue)(p), name, usage)
	return p
}

// durationValue is the flag.Value of Duration.
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

// StringList is a repeatable string flag.
type StringList []string

func (l *StringList) String() string     { return fmt.Sprint(*l) }
func (l *StringList) Set(v string) error { *l = append(*l, v); return nil }
