package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/oarbank/svcrun/api"
	"github.com/oarbank/svcrun/internal/cli"
)

const eventsSynopsis = `[-f] [--since DUR|TIME] [--json] [--socket PATH | --config FILE]

Prints svcrun's event stream, one line each, oldest first: the engine's
notes (a service starting, ready, crashed, backing off, unhealthy; a probe's
verdict), every lease's admission, rejection, expiry and release, and
each reload's verdict. Without -f it prints the last 4096 records and
exits; with -f it prints the last 10, then follows the new ones until
interrupted, as journalctl -f does; --since prints every record from then
on. Records made before svcrun's last restart come from its journal, in
the same words. A reader that falls behind is told how many records it
lost (kind "lost").

Flags:`

// keptRecords is how many records a bare `svcrun events` prints: as many
// as svcrun keeps in memory, which the journal completes after a restart.
const keptRecords = 4096

// runEvents is `svcrun events`.
func runEvents(ctx context.Context, m *cli.Env, args []string) error {
	fs := m.FlagSet("events", eventsSynopsis)
	sock := addSocketFlags(m, fs)
	follow := fs.Bool("f", false, "follow: print new records as they come, until interrupted")
	since := fs.String("since", "", "only the records from this time on: a `DUR` ago (10m, 1h) or an RFC 3339 time")
	asJSON := m.JSONFlag(fs, "print each record as one JSON object a line: at, kind, text")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if err := cli.NoArgs(fs); err != nil {
		return err
	}
	q := api.EventsQuery{Since: time.Unix(0, 0).UTC(), NoFollow: !*follow}
	if *since != "" {
		t, err := parseSince(*since, time.Now())
		if err != nil {
			return err
		}
		q.Since = t
	} else if *follow {
		q.Last = 10
	} else {
		q.Last = keptRecords
	}
	c, err := sock.dial()
	if err != nil {
		return err
	}
	defer c.Close()
	ev, err := c.Events(ctx, q)
	if err != nil {
		return err
	}
	defer ev.Close()
	for {
		r, err := ev.Next()
		switch {
		case err == nil:
		case ctx.Err() != nil: // interrupted: the usual end of -f
			return nil
		case !*follow && errors.Is(err, io.EOF):
			return nil // the end of the kept records
		case *follow && errors.Is(err, io.EOF):
			return errors.New("the event stream ended: svcrun stopped or went away")
		default:
			return fmt.Errorf("the event stream broke off: %w", err)
		}
		if *asJSON {
			if err := cli.PrintJSONLine(m.Stdout, r); err != nil {
				return err
			}
			continue
		}
		if _, err := fmt.Fprintf(m.Stdout, "%s %s\n", r.At.Local().Format("2006-01-02 15:04:05.000"), r.Text); err != nil {
			return err
		}
	}
}

// parseSince reads --since: a duration before now, or a time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, cli.Usagef("--since %q: a duration back from now must not be negative", s)
		}
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	return time.Time{},
		cli.Usagef("--since %q: give a duration back from now (10m, 1h30m) or an RFC 3339 time (2026-12-01T17:00:00Z)", s)
}
