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

	"github.com/oarbank/svcrun/api"
)

// runAcquire is `svcrun acquire`: ask for a lease, print its id (or the
// grant as JSON) and exit; the lease stays until `svcrun release`, or until
// its TTL passes without `svcrun renew`.
func runAcquire(ctx context.Context, m *Main, args []string) error {
	fs := newFlagSet(m, "acquire", "[--pool NAME=N]... [--needs-pool NAME]... [--capability NAME]... [--job ID] [--attempt ID] [--wait DUR] [--ttl DUR] [--json]")
	sock := addSocketFlags(fs)
	lf := addLeaseFlags(fs, 10*time.Minute, 0)
	asJSON := fs.Bool("json", false, "print the grant as JSON: lease, attempt, services, expires (a failure: ok, error, code, reason, hint)")
	if err := parseMixed(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	req, err := lf.request()
	if err != nil {
		return err
	}
	err = func() error {
		c, err := sock.dial()
		if err != nil {
			return err
		}
		defer c.Close()
		g, err := c.Acquire(ctx, req)
		if err != nil {
			return admission(err)
		}
		if *asJSON {
			return printJSON(m.Stdout, g)
		}
		fmt.Fprintln(m.Stdout, g.Lease)
		return nil
	}()
	return failed(m, "acquire", *asJSON, err)
}

// leaseFlags are what a lease requires, for acquire and run.
type leaseFlags struct {
	pools        poolFlag
	needs, caps  stringList
	job, attempt *string
	wait, ttl    *time.Duration
	needTTL      bool // run: the TTL frees the lease if run is killed
}

// minTTL is the shortest TTL of a lease: a shorter one would expire before
// it could be renewed.
const minTTL = time.Second

func addLeaseFlags(fs *flag.FlagSet, wait, ttl time.Duration) *leaseFlags {
	f := &leaseFlags{pools: poolFlag{}}
	fs.Var(f.pools, "pool", "reserve N tokens of pool NAME, given as `NAME=N` (repeatable)")
	fs.Var(&f.needs, "needs-pool", "need pool `NAME` to have capacity, reserving nothing (repeatable)")
	fs.Var(&f.caps, "capability", "need capability `NAME` (repeatable)")
	f.job = fs.String("job", "", "the job `ID` the lease is for (shown in svcrun status)")
	f.attempt = fs.String("attempt", "", "the attempt `ID` (default: a new one)")
	f.wait = durationFlag(fs, "wait", wait, "how long to wait for admission, a `DUR` such as 30s or 10m (0: now or never)")
	ttlHelp := "the lease's time to live, a `DUR` of 1s or more, renewed with svcrun renew (0: held until released)"
	if ttl > 0 {
		f.needTTL = true
		ttlHelp = "the lease's time to live, a `DUR` of 1s or more; renewed every TTL/3 while CMD runs"
	}
	f.ttl = durationFlag(fs, "ttl", ttl, ttlHelp)
	return f
}

func (f *leaseFlags) request() (api.AcquireRequest, error) {
	if *f.wait < 0 {
		return api.AcquireRequest{}, usageError{"--wait must not be negative"}
	}
	switch ttl := *f.ttl; {
	case ttl < 0:
		return api.AcquireRequest{}, usageError{"--ttl must not be negative"}
	case f.needTTL && ttl < minTTL:
		// run renews its lease while CMD runs; the TTL is what gives the
		// lease back if run itself is killed (kill -9 leaves no release).
		return api.AcquireRequest{}, usageError{"--ttl must be 1s or more: svcrun run renews the lease, and the TTL frees it if run is killed"}
	case ttl > 0 && ttl < minTTL:
		return api.AcquireRequest{}, usageError{"--ttl must be 1s or more, or 0 for a lease held until released: a shorter TTL would expire before svcrun renew could renew it"}
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
		return errors.New("use NAME=N, e.g. kv-slots=1")
	}
	k, err := strconv.ParseInt(n, 10, 64)
	if err != nil || k < 1 {
		return errors.New("N is a number of tokens, 1 or more (to need a pool without reserving, use --needs-pool)")
	}
	if _, dup := p[name]; dup {
		return fmt.Errorf("pool %s given twice: give each pool once", name)
	}
	p[name] = k
	return nil
}

// notAdmitted reports an acquire that failed: a rejection with its reason
// and a hint, anything else as is.
func notAdmitted(m *Main, cmd string, err error) error {
	return failed(m, cmd, false, admission(err))
}
