package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/oarbank/svcrun/api"
	"github.com/oarbank/svcrun/internal/cli"
)

// runAcquire is `svcrun acquire`: ask for a lease, print its id (or the
// grant as JSON) and exit; the lease stays until `svcrun release`, or until
// its TTL passes without `svcrun renew`. If svcrun goes away meanwhile (a
// restart), it asks again with the same attempt until svcrun is back,
// within --wait: a lease admitted before the restart is the answer.
func runAcquire(ctx context.Context, m *cli.Env, args []string) error {
	fs := m.FlagSet("acquire", "[--pool NAME=N]... [--needs-pool NAME]... [--capability NAME]... "+
		"[--job ID] [--attempt ID] [--wait DUR] [--ttl DUR] [--json]")
	sock := addSocketFlags(m, fs)
	lf := addLeaseFlags(fs, 10*time.Minute, 0)
	asJSON := m.JSONFlag(fs, "print the grant as JSON: lease, attempt, services, expires, node_id, "+
		"uses (each service and probe with its fingerprint attrs; a failure: ok, error, code, reason, hint)")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if err := cli.NoArgs(fs); err != nil {
		return err
	}
	req, err := lf.request()
	if err != nil {
		return err
	}
	c, err := sock.dial()
	if err != nil {
		return err
	}
	defer c.Close()
	g, err := acquireRetrying(ctx, newAwayNotice(m), c, req)
	if err != nil {
		return admission(ctx, c, req, err)
	}
	if *asJSON {
		return cli.PrintJSON(m.Stdout, g)
	}
	fmt.Fprintln(m.Stdout, g.Lease)
	return nil
}

// leaseFlags are what a lease requires, for acquire and run.
type leaseFlags struct {
	pools        poolFlag
	needs, caps  cli.StringList
	job, attempt *string
	wait, ttl    *time.Duration
	needTTL      bool // run: the TTL frees the lease if run is killed
}

func addLeaseFlags(fs *flag.FlagSet, wait, ttl time.Duration) *leaseFlags {
	f := &leaseFlags{pools: poolFlag{}}
	fs.Var(f.pools, "pool", "reserve N tokens of pool NAME, given as `NAME=N` (repeatable)")
	fs.Var(&f.needs, "needs-pool", "need pool `NAME` to have capacity, reserving nothing (repeatable)")
	fs.Var(&f.caps, "capability", "need capability `NAME` (repeatable)")
	f.job = fs.String("job", "", "the job `ID` the lease is for (shown in svcrun status)")
	f.attempt = fs.String("attempt", "", "the attempt `ID` (default: a new one)")
	f.wait = cli.Duration(fs, "wait", wait, "how long to wait for admission, a `DUR` such as 30s or 10m (0: now or never)")
	ttlHelp := "the lease's time to live, a `DUR` of 1s or more, renewed with svcrun renew (0: held until released)"
	if ttl > 0 {
		f.needTTL = true
		ttlHelp = "the lease's time to live, a `DUR` of 1s or more; renewed every TTL/3 while CMD runs"
	}
	f.ttl = cli.Duration(fs, "ttl", ttl, ttlHelp)
	return f
}

func (f *leaseFlags) request() (api.AcquireRequest, error) {
	if *f.wait < 0 {
		return api.AcquireRequest{}, cli.UsageError{Msg: "--wait must not be negative"}
	}
	switch ttl := *f.ttl; {
	case ttl < 0:
		return api.AcquireRequest{}, cli.UsageError{Msg: "--ttl must not be negative"}
	case f.needTTL && ttl < api.MinTTL:
		// run renews its lease while CMD runs; the TTL is what gives the
		// lease back if run itself is killed (kill -9 leaves no release).
		return api.AcquireRequest{},
			cli.UsageError{Msg: "--ttl must be 1s or more: svcrun run renews the lease, and the TTL frees it if run is killed"}
	case ttl > 0 && ttl < api.MinTTL:
		return api.AcquireRequest{}, cli.UsageError{Msg: "--ttl must be 1s or more, or 0 for a lease held until released: " +
			"a shorter TTL would expire before svcrun renew could renew it"}
	}
	attempt := *f.attempt
	if attempt == "" {
		// Made here, before the first try, so that every try names it.
		attempt = api.NewAttemptID()
	}
	return api.AcquireRequest{
		Job: *f.job, Attempt: attempt, Pools: map[string]int64(f.pools), NeedsPools: f.needs, Capabilities: f.caps,
		Wait: api.Duration(*f.wait), TTL: api.Duration(*f.ttl),
	}, nil
}

// acquireRetrying acquires; while svcrun is away (restarting: its socket
// not answering, the connection lost, svcrun stopping) it asks again with
// the same attempt, for the rest of req.Wait. The attempt makes the retry
// safe: a lease admitted just before svcrun went is the answer, not a
// second lease.
func acquireRetrying(ctx context.Context, away *awayNotice, c *api.Client, req api.AcquireRequest) (api.Grant, error) {
	deadline := time.Now().Add(time.Duration(req.Wait))
	var g api.Grant
	doing := func() string {
		return fmt.Sprintf("asking again with attempt %s until it is back (until %s at most: --wait)",
			req.Attempt, deadline.Format("15:04:05"))
	}
	err := whileAway(ctx, deadline, away, doing, func() error {
		var err error
		g, err = c.Acquire(ctx, req)
		req.Wait = api.Duration(max(0, time.Until(deadline)))
		return err
	})
	return g, err
}

// whileAway calls try until it succeeds or fails otherwise than with
// svcrun away (api.Away), pausing between tries (100 ms, doubling to 1 s),
// until ctx is done or, if it is not zero, until. It returns try's last
// error. doing says what it does meanwhile, made only when svcrun is
// away (formatting a local time loads the time zone: not for a call
// answered at once).
func whileAway(ctx context.Context, until time.Time, away *awayNotice, doing func() string, try func() error) error {
	pause := 100 * time.Millisecond
	for {
		err := try()
		if err == nil {
			away.back()
			return nil
		}
		left := time.Duration(math.MaxInt64)
		if !until.IsZero() {
			left = time.Until(until)
		}
		if !api.Away(err) || ctx.Err() != nil || left <= 0 {
			return err
		}
		away.gone(err, doing)
		t := time.NewTimer(min(pause, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		pause = min(2*pause, time.Second)
	}
}

// awayNotice tells, on one line each, that svcrun went away and that it is
// back: not one line per try.
type awayNotice struct {
	m    *cli.Env
	away bool
}

func newAwayNotice(m *cli.Env) *awayNotice { return &awayNotice{m: m} }

func (n *awayNotice) gone(err error, doing func() string) {
	if n.away {
		return
	}
	n.away = true
	// The connect error, not the hint of where the socket comes from:
	// the socket answered a moment ago.
	var ue *api.UnreachableError
	var op *net.OpError
	if errors.As(err, &ue) && errors.As(ue.Err, &op) && op.Err != nil {
		err = op.Err
	}
	n.m.Printf("svcrun went away (%v): %s", err, doing())
}

func (n *awayNotice) back() {
	if n.away {
		n.away = false
		n.m.Printf("svcrun is back")
	}
}

// poolFlag is the repeatable --pool NAME=N.
type poolFlag map[string]int64

func (p poolFlag) String() string {
	var l []string
	for k, v := range p {
		l = append(l, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(l)
	return strings.Join(l, ",")
}

func (p poolFlag) Set(v string) error {
	name, n, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return errors.New("use NAME=N, e.g. kv-slots=1")
	}
	k, err := strconv.ParseInt(n, 10, 64)
	if err != nil || k < 1 {
		return errors.New("give a number of tokens N, 1 or more (to need a pool without reserving, use --needs-pool)")
	}
	if _, dup := p[name]; dup {
		return fmt.Errorf("pool %s given twice: give each pool once", name)
	}
	p[name] = k
	return nil
}
