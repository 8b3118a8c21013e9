package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/oarbank/svcrun/agent"
	"github.com/oarbank/svcrun/api"
)

// runAcquire is `svcrun acquire`: ask for a lease, print its id (or the
// grant as JSON) and exit; the lease stays until `svcrun release`, or until
// its TTL passes without `svcrun renew`.
func runAcquire(ctx context.Context, m *Main, args []string) error {
	fs := newFlagSet(m, "acquire", "[--pool NAME=N]... [--needs-pool NAME]... [--capability NAME]... [--job ID] [--attempt ID] [--wait DUR] [--ttl DUR] [--json]")
	sock := addSocketFlags(fs)
	lf := addLeaseFlags(fs, 10*time.Minute, 0)
	asJSON := fs.Bool("json", false, "print the grant as JSON: lease, attempt, services, expires")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
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
	g, err := c.Acquire(ctx, req)
	if err != nil {
		return notAdmitted(m, "acquire", err)
	}
	if *asJSON {
		return printJSON(m.Stdout, g)
	}
	fmt.Fprintln(m.Stdout, g.Lease)
	return nil
}

// leaseFlags are what a lease requires, for acquire and run.
type leaseFlags struct {
	pools        poolFlag
	needs, caps  stringList
	job, attempt *string
	wait, ttl    *time.Duration
}

func addLeaseFlags(fs *flag.FlagSet, wait, ttl time.Duration) *leaseFlags {
	f := &leaseFlags{pools: poolFlag{}}
	fs.Var(f.pools, "pool", "reserve N tokens of pool NAME, given as `NAME=N` (repeatable)")
	fs.Var(&f.needs, "needs-pool", "need pool `NAME` to have capacity, reserving nothing (repeatable)")
	fs.Var(&f.caps, "capability", "need capability `NAME` (repeatable)")
	f.job = fs.String("job", "", "the job `ID` the lease is for (shown in svcrun status)")
	f.attempt = fs.String("attempt", "", "the attempt `ID` (default: a new one)")
	f.wait = fs.Duration("wait", wait, "how long to wait for admission (0: now or never)")
	ttlHelp := "the lease's time to live, renewed with svcrun renew (0: held until released)"
	if ttl > 0 {
		ttlHelp = "the lease's time to live; renewed every TTL/3 while CMD runs"
	}
	f.ttl = fs.Duration("ttl", ttl, ttlHelp)
	return f
}

func (f *leaseFlags) request() (api.AcquireRequest, error) {
	if *f.wait < 0 {
		return api.AcquireRequest{}, usageError{"--wait must not be negative"}
	}
	if *f.ttl < 0 {
		return api.AcquireRequest{}, usageError{"--ttl must not be negative"}
	}
	return api.AcquireRequest{
		Job: *f.job, Attempt: *f.attempt, Pools: map[string]int64(f.pools), NeedsPools: f.needs, Capabilities: f.caps,
		Wait: api.Duration(*f.wait), TTL: api.Duration(*f.ttl),
	}, nil
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
		return fmt.Errorf("%q: use NAME=N, e.g. kv-slots=1", v)
	}
	k, err := strconv.ParseInt(n, 10, 64)
	if err != nil || k < 1 {
		return fmt.Errorf("%q: N is a number of tokens, 1 or more (to need a pool without reserving, use --needs-pool)", v)
	}
	if _, dup := p[name]; dup {
		return fmt.Errorf("pool %s given twice", name)
	}
	p[name] = k
	return nil
}

// notAdmitted reports an acquire that failed: a rejection with its reason
// and a hint, anything else as is.
func notAdmitted(m *Main, cmd string, err error) error {
	var rej *agent.RejectedError
	switch {
	case errors.As(err, &rej):
		fmt.Fprintf(m.Stderr, "svcrun %s: not admitted: %s\n", cmd, rej.Reason)
		fmt.Fprintf(m.Stderr, "hint: svcrun status shows the services, pools and probes; svcrun reset SERVICE clears an unhealthy service\n")
		return exitError{1}
	case errors.Is(err, context.Canceled):
		fmt.Fprintf(m.Stderr, "svcrun %s: interrupted while waiting for admission: the request was withdrawn\n", cmd)
		return exitError{1}
	}
	return err
}
