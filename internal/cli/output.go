package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
)

// The output rules of both binaries, in one place:
//
//   - What was asked for goes to stdout: a command's result, its --json
//     (PrintJSON), and the usage asked for with -h, --help or help (exit 0).
//   - Everything else goes to stderr, as "PROG CMD: MESSAGE" lines
//     (Env.Printf, Env.Warnf): notes and warnings, a failure (exit 1), and
//     a wrong command line (exit 2), which gets one line naming the mistake
//     and a pointer to -h, never the whole usage; only a missing or unknown
//     command prints the usage, there.
//   - A command that printed its own failure (a JSON failure on stdout, a
//     report of several lines) returns ExitError and Run prints nothing.

// exit reports err, the outcome of env's command, and returns the exit
// code.
func exit(env *Env, err error) int {
	var ue UsageError
	var ee ExitError
	var ce ChildExit
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ce):
		return ce.Code
	case errors.As(err, &ue):
		env.Printf("%s\nRun '%s %s -h' for usage.", ue.Msg, env.prog, env.cmd)
		return 2
	case errors.As(err, &ee):
		return ee.Code
	default:
		env.Printf("%v", err)
		return 1
	}
}

// Printf prints a line "PROG CMD: MESSAGE" on stderr: why the command
// failed, or a note on what it is doing, which stdout must not carry.
func (e *Env) Printf(format string, args ...any) {
	fmt.Fprintf(e.Stderr, "%s %s: %s\n", e.prog, e.cmd, fmt.Sprintf(format, args...))
}

// Warnf prints a line "PROG CMD: warning: MESSAGE" on stderr: something
// the command did anyway but the user should know.
func (e *Env) Warnf(format string, args ...any) {
	e.Printf("warning: "+format, args...)
}

// usage prints the command list, on stdout when asked for and on stderr
// when the command line is wrong.
func (p *Program) usage(w io.Writer) {
	fmt.Fprintf(w, "Usage: %s <command> [flags] [arguments]\n\nCommands:\n", p.Name)
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

// commandUsage prints a command's usage line and flags on stdout: it is
// printed only when asked for with -h.
func commandUsage(env *Env, fs *flag.FlagSet, synopsis string) {
	fmt.Fprintf(env.Stdout, "Usage: %s %s\n", fs.Name(), synopsis)
	fs.SetOutput(env.Stdout)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// PrintJSON writes v as indented JSON, a command's --json answer or
// report. <, > and & stay as they are: the answer is read by people as
// well as programs, and messages name paths such as <data_dir>.
func PrintJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// PrintJSONLine writes v as one line of JSON (for streams: JSON lines).
func PrintJSONLine(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
