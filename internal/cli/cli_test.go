package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		args []string
		pos  []string
		json bool
		cfg  string
		wait time.Duration
		err  string
	}{
		{args: nil, pos: []string{}},
		{args: []string{"demo/kv"}, pos: []string{"demo/kv"}},
		{args: []string{"demo/kv", "--config", "n.toml"}, pos: []string{"demo/kv"}, cfg: "n.toml"},
		{args: []string{"--json", "a", "--config=n.toml", "b", "-wait", "3s"}, pos: []string{"a", "b"}, json: true,
			cfg: "n.toml", wait: 3 * time.Second},
		{args: []string{"a", "--", "--json", "b"}, pos: []string{"a", "--json", "b"}},
		{args: []string{"--", "-x"}, pos: []string{"-x"}},
		{args: []string{"--json", "--", "a"}, pos: []string{"a"}, json: true},
		// "--" as a flag's value is no terminator: the flags after it count.
		{args: []string{"--config", "--", "a", "--json"}, pos: []string{"a"}, cfg: "--", json: true},
		{args: []string{"--config=x", "--", "a", "--json"}, pos: []string{"a", "--json"}, cfg: "x"},
		{args: []string{"-", "--json"}, pos: []string{"-"}, json: true},
		{args: []string{"a", "--wait", "5x"},
			err: `--wait "5x": not a duration: use a number with a unit, such as 500ms, 30s, 5m or 1h30m`},
		{args: []string{"a", "--nope"}, err: "unknown flag --nope"},
		{args: []string{"a", "--jsno"}, err: "unknown flag --jsno (did you mean --json?)"},
		{args: []string{"a", "-wiat=3s"}, err: "unknown flag --wiat (did you mean --wait?)"},
		{args: []string{"a", "--config"}, err: "--config needs a value"},
	} {
		fs := (&Env{}).FlagSet("x", "")
		asJSON := fs.Bool("json", false, "")
		cfg := fs.String("config", "", "")
		wait := Duration(fs, "wait", 0, "")
		err := Parse(fs, tc.args)
		if tc.err != "" {
			var ue UsageError
			if !errors.As(err, &ue) || ue.Msg != tc.err {
				t.Errorf("%q: error %v, want %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		if got := append([]string{}, fs.Args()...); !slices.Equal(got, tc.pos) || *asJSON != tc.json || *cfg != tc.cfg ||
			*wait != tc.wait {
			t.Errorf("%q: args %q json %v config %q wait %v; want %q %v %q %v",
				tc.args, got, *asJSON, *cfg, *wait, tc.pos, tc.json, tc.cfg, tc.wait)
		}
	}
}

func TestFlagError(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`invalid value "5x" for flag -wait: not a duration`, `--wait "5x": not a duration`},
		{`invalid value "a: \"b\" for flag -c" for flag -pool: use NAME=N`, `--pool "a: \"b\" for flag -c": use NAME=N`},
		{`invalid boolean value "maybe" for -json: parse error`, `invalid boolean value "maybe" for -json: parse error`},
		{"flag provided but not defined: -x", "unknown flag --x"},
		{"flag provided but not defined: -lod", "unknown flag --lod (did you mean --loud?)"},
		{"flag needs an argument: -loud", "--loud needs a value"},
	} {
		fs := (&Env{}).FlagSet("x", "")
		fs.Bool("loud", false, "")
		if got := flagError(fs, tc.in); got != tc.want {
			t.Errorf("flagError(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestProgram: the output rules of output.go, for any binary built on
// Program: what was asked for on stdout, problems on stderr, one line for
// a wrong command line.
func TestProgram(t *testing.T) {
	p := &Program{
		Name: "prog",
		Commands: map[string]Command{
			"hello": {Summary: "say hello", Run: func(_ context.Context, env *Env, args []string) error {
				fs := env.FlagSet("hello", "[--loud] NAME")
				loud := fs.Bool("loud", false, "shout")
				if err := Parse(fs, args); err != nil {
					return err
				}
				name, err := OneArg(fs, "NAME", "")
				if err != nil {
					return err
				}
				if name == "nobody" {
					return errors.New("nobody is there")
				}
				if name == "ghost" {
					env.Warnf("%s may not answer", name)
				}
				if *loud {
					name = strings.ToUpper(name)
				}
				env.Stdout.Write([]byte("hello " + name + "\n"))
				return nil
			}},
		},
		Footer: "the footer",
	}
	const usage = "Usage: prog <command> [flags] [arguments]\n\nCommands:\n  hello  say hello\n\nthe footer\n"
	for _, tc := range []struct {
		args           []string
		code           int
		stdout, stderr string
	}{
		{args: []string{"hello", "you", "--loud"}, stdout: "hello YOU\n"},
		{args: []string{"-h"}, stdout: usage},
		{args: []string{"help"}, stdout: usage},
		{args: nil, code: 2, stderr: usage},
		{args: []string{"frob"}, code: 2, stderr: "prog: unknown command \"frob\"\n\n" + usage},
		{args: []string{"hello", "-h"}, stdout: "Usage: prog hello [--loud] NAME\n  -loud\n    \tshout\n"},
		{args: []string{"hello", "--nope"}, code: 2,
			stderr: "prog hello: unknown flag --nope\nRun 'prog hello -h' for usage.\n"},
		{args: []string{"hello", "--lod"}, code: 2,
			stderr: "prog hello: unknown flag --lod (did you mean --loud?)\nRun 'prog hello -h' for usage.\n"},
		{args: []string{"helo"}, code: 2,
			stderr: "prog: unknown command \"helo\" (did you mean \"hello\"?)\nRun 'prog -h' for usage.\n"},
		{args: []string{"hello", "a", "b"}, code: 2,
			stderr: "prog hello: unexpected argument \"b\": prog hello takes one NAME\nRun 'prog hello -h' for usage.\n"},
		{args: []string{"hello", "--", "a", "--loud"}, code: 2, stderr: "prog hello: unexpected argument \"--loud\": " +
			"prog hello takes one NAME; it came after --, where flags are taken for arguments: put it before the --\n" +
			"Run 'prog hello -h' for usage.\n"},
		{args: []string{"hello", "nobody"}, code: 1, stderr: "prog hello: nobody is there\n"},
		{args: []string{"hello", "ghost"}, stdout: "hello ghost\n", stderr: "prog hello: warning: ghost may not answer\n"},
	} {
		var out, errb bytes.Buffer
		code := p.Run(context.Background(), &Env{Stdout: &out, Stderr: &errb}, tc.args)
		if code != tc.code || out.String() != tc.stdout || errb.String() != tc.stderr {
			t.Errorf("%q: exit %d (want %d)\nstdout: %q\n  want: %q\nstderr: %q\n  want: %q",
				tc.args, code, tc.code, out.String(), tc.stdout, errb.String(), tc.stderr)
		}
	}
}

func TestParseLeading(t *testing.T) {
	fs := (&Env{Stdout: io.Discard}).FlagSet("run", "")
	job := fs.String("job", "", "")
	if err := ParseLeading(fs, []string{"-job", "j", "cmd", "-job", "x"}); err != nil || *job != "j" ||
		!slices.Equal(fs.Args(), []string{"cmd", "-job", "x"}) {
		t.Errorf("ParseLeading: %v, job %q, args %q", err, *job, fs.Args())
	}
	if err := ParseLeading(fs, []string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v, want flag.ErrHelp", err)
	}
}

func TestOwnExit(t *testing.T) {
	p := &Program{Name: "prog", Commands: map[string]Command{
		"wrap": {Summary: "run a command", OwnExit: 125, Run: func(ctx context.Context, env *Env, args []string) error {
			switch args[0] {
			case "usage":
				return UsageError{Msg: "bad"}
			case "problem":
				return errors.New("svcrun away")
			case "printed":
				return ExitError{Code: 1}
			case "child":
				return ChildExit{Code: 2}
			}
			return nil
		}},
	}}
	for arg, want := range map[string]int{"usage": 125, "problem": 125, "printed": 125, "child": 2, "ok": 0} {
		var out, errb bytes.Buffer
		if code := p.Run(context.Background(), &Env{Stdout: &out, Stderr: &errb}, []string{"wrap", arg}); code != want {
			t.Errorf("%s: exit %d, want %d (stderr %q)", arg, code, want, errb.String())
		}
	}
}

// TestFailure: a failure is printed by Run alone, every line of it named as
// the command's (its hint too), or as one FailureJSON on stdout when the
// command's --json was given; a wrong command line stays text.
func TestFailure(t *testing.T) {
	api := errors.New("svcrun at s: refused")
	p := &Program{Name: "prog", Commands: map[string]Command{
		"cmd": {Summary: "fail", Run: func(ctx context.Context, env *Env, args []string) error {
			fs := env.FlagSet("cmd", "")
			env.JSONFlag(fs, "")
			if err := Parse(fs, args); err != nil {
				return err
			}
			switch fs.Arg(0) {
			case "plain":
				return errors.New("it broke")
			case "explained":
				return fmt.Errorf("asking: %w", api)
			case "hinted":
				return &Failure{Err: api, Msg: "rejected: busy", Code: "rejected", Reason: "busy", Hint: "wait"}
			case "lines":
				return &Failure{Msg: "invalid: 2 errors", Code: "invalid", Lines: []string{"a:1: x", "b:2: y"}}
			}
			return UsageError{Msg: "give plain, explained, hinted or lines"}
		}},
	}, Explain: func(err error) (string, string) {
		if errors.Is(err, api) {
			return "refused", ""
		}
		return "", ""
	}}
	for _, tc := range []struct {
		args           []string
		code           int
		stdout, stderr string
	}{
		{[]string{"plain"}, 1, "", "prog cmd: it broke\n"},
		{[]string{"hinted"}, 1, "", "prog cmd: rejected: busy\nprog cmd: hint: wait\n"},
		{[]string{"lines"}, 1, "", "prog cmd: invalid: 2 errors\n  a:1: x\n  b:2: y\n"},
		{[]string{"--json", "plain"}, 1, "{\n  \"ok\": false,\n  \"error\": \"it broke\"\n}\n", ""},
		{[]string{"--json", "explained"}, 1,
			"{\n  \"ok\": false,\n  \"error\": \"asking: svcrun at s: refused\",\n  \"code\": \"refused\"\n}\n", ""},
		{[]string{"--json", "hinted"}, 1, "{\n  \"ok\": false,\n  \"error\": \"rejected: busy\",\n" +
			"  \"code\": \"rejected\",\n  \"reason\": \"busy\",\n  \"hint\": \"wait\"\n}\n", ""},
		{[]string{"--json", "lines"}, 1, "{\n  \"ok\": false,\n  \"error\": \"invalid: 2 errors\",\n" +
			"  \"code\": \"invalid\",\n  \"errors\": [\n    \"a:1: x\",\n    \"b:2: y\"\n  ]\n}\n", ""},
		{[]string{"--json", "what"}, 2, "",
			"prog cmd: give plain, explained, hinted or lines\nRun 'prog cmd -h' for usage.\n"},
	} {
		var out, errb bytes.Buffer
		code := p.Run(context.Background(), &Env{Stdout: &out, Stderr: &errb}, append([]string{"cmd"}, tc.args...))
		if code != tc.code || out.String() != tc.stdout || errb.String() != tc.stderr {
			t.Errorf("%q: exit %d\nstdout %q\nstderr %q\nwant exit %d\nstdout %q\nstderr %q",
				tc.args, code, out.String(), errb.String(), tc.code, tc.stdout, tc.stderr)
		}
	}
}

// TestProgress: on a terminal the line is rewritten in place and cleared;
// elsewhere each is a line named as the command's.
func TestProgress(t *testing.T) {
	for _, tc := range []struct {
		tty  bool
		want string
	}{
		{true, "\r\033[Kwaiting: 1 s\r\033[K"},
		{false, "prog run: waiting: 1 s\n"},
	} {
		var errb bytes.Buffer
		env := ForCommand("prog", "run", io.Discard, &errb)
		env.Progress(tc.tty, "waiting: 1 s")
		env.Progress(tc.tty, "")
		if errb.String() != tc.want {
			t.Errorf("tty %v: %q, want %q", tc.tty, errb.String(), tc.want)
		}
	}
}
