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
//     (Env.Printf, Env.Warnf, Env.Hintf): notes and warnings, a failure
//     (exit 1), and a wrong command line (exit 2), which gets one line
//     naming the mistake and a pointer to -h, never the whole usage; only a
//     missing or unknown command prints the usage, there.
//   - A failure is the error a command returns, printed by Run and nowhere
//     else: its line, its lines of detail indented under it, then its hint
//     as a "PROG CMD: hint: ..." line (Failure). A command whose --json was
//     declared with Env.JSONFlag and given gets the failure as one
//     FailureJSON on stdout instead: a program reading stdout finds the
//     answer there whatever happened. A wrong command line stays text.
//   - A command that printed its own failure (a report of its own shape on
//     stdout) returns ExitError and Run prints nothing.

// Failure is a failure explained for the user. A command returns one when
// it knows more than the error's text: a code for --json, a hint at the
// fix, the lines that show what went wrong.
type Failure struct {
	Err  error  // what failed, for errors.Is and errors.As
	Msg  string // the failure's line; Err's text when empty
	Code string // --json's code: the API's error code, or the command's (unreachable, interrupted, invalid)
	// Reason is a rejection's reason, as the API gave it.
	Reason string
	// Lines are the failure in detail, one a line: every error of an
	// invalid file, or what a failed op printed. --json: errors.
	Lines []string
	Hint  string // what to do about it
}

func (f *Failure) Error() string {
	if f.Msg == "" && f.Err != nil {
		return f.Err.Error()
	}
	return f.Msg
}

func (f *Failure) Unwrap() error { return f.Err }

// FailureJSON is the one shape of a failure on stdout (exit 1) for a
// command given --json.
type FailureJSON struct {
	OK     bool     `json:"ok"` // false
	Error  string   `json:"error"`
	Code   string   `json:"code,omitempty"`
	Reason string   `json:"reason,omitempty"`
	Hint   string   `json:"hint,omitempty"`
	Errors []string `json:"errors,omitempty"`
}

// exit reports err, the outcome of env's command, and returns the exit
// code. explain, when set, gives a code (and a reason) to an error that
// is no Failure.
func exit(env *Env, err error, explain func(error) (code, reason string)) int {
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
	}
	var f *Failure
	if !errors.As(err, &f) {
		f = &Failure{Err: err}
		if explain != nil {
			f.Code, f.Reason = explain(err)
		}
	}
	if env.json != nil && *env.json {
		if PrintJSON(env.Stdout,
			FailureJSON{Error: f.Error(), Code: f.Code, Reason: f.Reason, Hint: f.Hint, Errors: f.Lines}) == nil {
			return 1
		}
		// stdout is gone: stderr may still tell.
	}
	env.Printf("%s", f.Error())
	for _, l := range f.Lines {
		fmt.Fprintf(env.Stderr, "  %s\n", l)
	}
	if f.Hint != "" {
		env.Hintf("%s", f.Hint)
	}
	return 1
}

// JSONFlag declares the command's --json, which asks for the answer as
// JSON on stdout, and with it for a failure as a FailureJSON there too.
func (e *Env) JSONFlag(fs *flag.FlagSet, usage string) *bool {
	e.json = fs.Bool("json", false, usage)
	return e.json
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

// Progress shows line, what the command waits for now: on a terminal
// (tty) it replaces the line shown before, "" clearing it; elsewhere it
// is a line of its own, as Printf's, and "" prints nothing.
func (e *Env) Progress(tty bool, line string) {
	switch {
	case tty:
		fmt.Fprint(e.Stderr, "\r\033[K"+line)
	case line != "":
		e.Printf("%s", line)
	}
}

// Hintf prints a line "PROG CMD: hint: MESSAGE" on stderr: what the user
// can do about the line before it.
func (e *Env) Hintf(format string, args ...any) {
	e.Printf("hint: "+format, args...)
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
