package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/oarbank/svcrun/internal/cli"
	"github.com/oarbank/svcrun/sim"
	"github.com/oarbank/svcrun/sim/scenario"
)

// runReplay is `svcsim replay JOURNAL [--scenario OUT.txt ...]`: the
// journal's events through a new engine, exit 1 if any step decides
// differently; with --scenario, the journal (or a window of it) written as
// a scenario file with its expected trace.
func runReplay(_ context.Context, env *cli.Env, args []string) error {
	fs := env.FlagSet("replay", "JOURNAL [--scenario OUT.txt [--from T] [--to T] [--service MODULE/NAME]]")
	out := fs.String("scenario", "",
		"write the journal as a scenario file OUT.txt (with its expected trace) instead of checking it")
	from := fs.String("from", "", "the window's start: a time (RFC 3339) or an offset from the first boot (90s); "+
		"the trace starts there, the engine is replayed from the boot")
	to := fs.String("to", "", "the window's end: a time (RFC 3339) or an offset from the first boot")
	service := fs.String("service", "",
		"the trace shows only this service (MODULE/NAME), its ops and the leases it served")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	journal, err := cli.OneArg(fs, "JOURNAL", " (svcrun's <data_dir>/journal directory, or one file of it)")
	if err != nil {
		return err
	}
	if *out == "" && (*from != "" || *to != "" || *service != "") {
		return cli.UsageError{Msg: "--from, --to and --service choose the window of a --scenario"}
	}
	lines, err := sim.ReadJournal(journal)
	if err != nil {
		return err
	}
	if *out != "" {
		return writeReplayed(env, journal, lines, *out, *from, *to, *service)
	}
	steps, divs, err := sim.ReplayLines(lines)
	if err != nil {
		return err
	}
	if len(divs) > 0 {
		var lines []string
		for _, d := range divs {
			lines = append(lines, strings.Split(d.String(), "\n")...)
		}
		return &cli.Failure{Msg: fmt.Sprintf("%d of %d steps diverge", len(divs), steps), Lines: lines}
	}
	fmt.Fprintf(env.Stdout, "ok: %d steps replayed, same decisions\n", steps)
	return nil
}

func writeReplayed(env *cli.Env, journal string, lines []sim.JournalLine, out, from, to, service string) error {
	var boot time.Time
	for _, l := range lines {
		if l.Entry.Event == "boot" {
			boot = l.Entry.At
			break
		}
	}
	win := scenario.JournalWindow{Service: service}
	var err error
	if win.From, err = windowTime("--from", from, boot); err != nil {
		return err
	}
	if win.To, err = windowTime("--to", to, boot); err != nil {
		return err
	}
	if win.To > 0 && win.To < win.From {
		return cli.Usagef("--to %s is before --from %s", to, from)
	}
	command := "svcsim replay " + journal + " --scenario " + out
	for _, f := range [][2]string{{"--from", from}, {"--to", to}, {"--service", service}} {
		if f[1] != "" {
			command += " " + f[0] + " " + f[1]
		}
	}
	text, err := scenario.FromJournal(command, lines, win)
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, text, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "wrote %s: it reproduces the journal's %d line(s) step by step; svcsim test %s checks it\n",
		out, len(lines), out)
	return nil
}

// windowTime reads a window bound: an offset from the first boot (90s,
// 1h2m) or a time (RFC 3339), which must not be before the boot.
func windowTime(flag, v string, boot time.Time) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	if d, err := time.ParseDuration(v); err == nil {
		if d < 0 {
			return 0, cli.Usagef("%s %s: an offset from the boot is not negative", flag, v)
		}
		return d, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return 0,
			cli.Usagef("%s %s: neither an offset from the first boot (90s, 1h2m) nor a time (%s)",
				flag, v, strings.ReplaceAll(time.RFC3339, "Z07:00", "Z"))
	}
	if boot.IsZero() || t.Before(boot) {
		return 0, cli.Usagef("%s %s: before the journal's first boot (%s)", flag, v, boot.UTC().Format(time.RFC3339Nano))
	}
	return t.Sub(boot), nil
}
