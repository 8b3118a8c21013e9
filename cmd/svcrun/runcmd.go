package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/oarbank/svcrun/api"
	"github.com/oarbank/svcrun/errdefs"
	"github.com/oarbank/svcrun/internal/cli"
	"github.com/oarbank/svcrun/internal/procfs"
	"github.com/oarbank/svcrun/protocol"
	"github.com/oarbank/svcrun/svcenv"
)

// runRun is `svcrun run [lease flags] -- CMD [ARGS]...`: hold a lease while
// CMD runs.
//
// It acquires the lease (waiting up to --wait, and saying what it waits
// for: on a terminal every second, rewritten in place, else a line every
// 10 s), runs CMD with the caller's environment plus
// OARBANK_ATTEMPT_ID, OARBANK_LEASE_ID, OARBANK_NODE_ID and
// OARBANK_SERVICES_FILE (see writeServicesFile), renews the lease every TTL/3,
// forwards SIGINT and SIGTERM to CMD, releases the lease when CMD exits and
// exits with CMD's status (128+N when a signal N killed it). CMD not
// found: 127; found but not startable: 126. Every failure of run itself
// (a wrong command line, not admitted, svcrun unreachable, interrupted
// before CMD started) exits 125, as docker run and env do, so that a
// caller tells it from CMD's own 1 or 2.
//
// SIGINT is not forwarded when stdin is a terminal: the terminal already
// sent it to CMD, which is in the same foreground process group.
//
// A restart of svcrun does not end the lease: the acquire asks again with
// the same attempt (made before the first try) until svcrun is back,
// within --wait, and renewals and the release wait for it likewise; run
// says once that svcrun went away and once that it is back.
func runRun(ctx context.Context, m *cli.Env, args []string) error {
	fs := m.FlagSet("run", "[--pool NAME=N]... [--needs-pool NAME]... [--capability NAME]... "+
		"[--job ID] [--attempt ID] [--wait DUR] [--ttl DUR] [--container IMAGE [--mem-gb N] [--network none|bridge]] -- "+
		"CMD [ARGS]...")
	sock := addSocketFlags(m, fs)
	lf := addLeaseFlags(fs, 10*time.Minute, time.Minute)
	cf := addContainerFlags(fs, true)
	if err := cli.ParseLeading(fs, args); err != nil {
		return err
	}
	argv := fs.Args()
	if len(argv) == 0 {
		return cli.UsageError{Msg: "give the command to run after --, e.g. svcrun run --capability kv -- ./job.sh"}
	}
	req, err := lf.request()
	if err != nil {
		return err
	}
	if *cf.image != "" {
		reserveContainer(&req)
	}
	c, err := sock.dial()
	if err != nil {
		return err
	}
	defer c.Close()

	away := newAwayNotice(m)
	g, err := acquireShowing(ctx, m, away, c, req)
	if err != nil {
		return admission(ctx, c, req, err)
	}
	// From here on the lease is held: renew and release it whatever ctx
	// (canceled by SIGINT or SIGTERM) says.
	bg := context.WithoutCancel(ctx)
	release := func() {
		rctx, cancel := context.WithTimeout(bg, 30*time.Second)
		defer cancel()
		doing := func() string { return fmt.Sprintf("releasing lease %s when it is back (for at most 30s)", g.Lease) }
		err := whileAway(rctx, time.Time{}, away, doing, func() error {
			return c.Release(rctx, g.Lease)
		})
		if err != nil {
			if errors.Is(err, errdefs.ErrUnknownLease) {
				m.Printf("lease %s had already ended when CMD exited (%v)", g.Lease, err)
				return
			}
			m.Printf("cannot release lease %s: %v", g.Lease, err)
			m.Hintf("release it with svcrun release %s", g.Lease)
		}
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if ctx.Err() != nil { // interrupted as it was admitted
		release()
		return errors.New("interrupted before CMD started: the lease was released")
	}

	if *cf.image != "" {
		return runLeasedContainer(ctx, m, c, g, cf, argv, time.Duration(req.TTL), away, release)
	}
	file, err := writeServicesFile(g)
	if err != nil {
		release()
		return fmt.Errorf("%w: CMD not started, the lease was released", err)
	}
	defer os.Remove(file)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(jobEnv(g, file), EnvSocket+"="+c.Socket())
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, m.Stdout, m.Stderr
	if err := cmd.Start(); err != nil {
		release()
		m.Printf("cannot run %s: %v", argv[0], err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return cli.ChildExit{Code: 127}
		}
		return cli.ChildExit{Code: 126}
	}
	// While a CMD that takes a while runs (a goroutine would cost a quick
	// one more than its own work): the files of runs killed before they
	// could remove theirs go.
	sweep := time.AfterFunc(time.Second, func() { sweepServicesFiles(filepath.Dir(file)) })
	defer sweep.Stop()

	renewCtx, stopRenew := context.WithCancel(bg)
	var wg sync.WaitGroup
	stopFirstRenewal := func() {}
	if req.TTL > 0 {
		// The first renewal starts the renewing goroutine: a CMD that ends
		// sooner (a quick job) starts none.
		every := time.Duration(req.TTL) / 3
		wg.Add(1)
		first := time.AfterFunc(every, func() {
			defer wg.Done()
			keepRenewing(renewCtx, m, away, c, g.Lease, every)
		})
		stopFirstRenewal = func() {
			if first.Stop() {
				wg.Done()
			}
		}
	}
	ttyInterrupt := isTerminal(os.Stdin)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-renewCtx.Done():
				return
			case s := <-sigs:
				if s == os.Interrupt && ttyInterrupt {
					continue
				}
				_ = cmd.Process.Signal(s)
			}
		}
	}()
	werr := cmd.Wait()
	stopRenew()
	stopFirstRenewal()
	wg.Wait()
	release()
	if werr != nil && cmd.ProcessState == nil {
		return fmt.Errorf("waiting for %s: %w", argv[0], werr)
	}
	if code := exitCode(cmd.ProcessState); code != 0 {
		return cli.ChildExit{Code: code}
	}
	return nil
}

// acquireShowing acquires, asking again while svcrun is away; while it
// waits it shows on stderr what the lease waits for: on a terminal every
// second, rewritten in place, else one line every 10 s (a job runner's log
// gets a heartbeat, not a flood).
func acquireShowing(ctx context.Context, m *cli.Env, away *awayNotice, c *api.Client,
	req api.AcquireRequest) (api.Grant, error) {
	tty, every := isTerminal(m.Stderr), 10*time.Second
	if tty {
		every = time.Second
	}
	start := time.Now()
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	// The first report starts the goroutine that shows them: an acquire
	// answered sooner (a warm service) starts none.
	done := make(chan struct{})
	first := time.AfterFunc(every, func() {
		defer close(done)
		// Read at each report: the terminal may be resized meanwhile.
		width := func() int { return termWidth(m.Stderr) }
		showProgress(pctx, m, tty, width, every, c, req.Attempt, start)
	})
	g, err := acquireRetrying(ctx, away, c, req)
	stop()
	if !first.Stop() {
		<-done
	}
	return g, err
}

// showProgress reports what the lease of attempt waits for now, then
// every until ctx is done; on a terminal (tty) each report fits width()
// columns when width is given.
func showProgress(ctx context.Context, m *cli.Env, tty bool, width func() int, every time.Duration, c *api.Client,
	attempt string, start time.Time) {
	t := time.NewTicker(every)
	defer t.Stop()
	shown := false
	for {
		st, err := c.Status(ctx)
		if err == nil {
			cols := 0 // a line of a log is whole
			if tty && width != nil {
				cols = width()
			}
			if line := progressLine(st, attempt, time.Since(start), cols); line != "" && ctx.Err() == nil {
				m.Progress(tty, line)
				shown = true
			}
		}
		select {
		case <-ctx.Done():
			if shown && tty {
				m.Progress(tty, "") // the wait is over: its line goes
			}
			return
		case <-t.C:
		}
	}
}

// progressLine says what the waiting lease of attempt waits for, e.g.
// "waiting: demo/kv is starting, 12 s"; "" when there is no such lease.
// The times in the reason are the clock time and how far off they are
// (st.Now), and the line is clipped to width columns when width > 0: a
// line rewritten in place must fit on one row of the terminal, or each
// rewrite leaves a row behind.
func progressLine(st api.Status, attempt string, waited time.Duration, width int) string {
	for _, l := range st.Leases {
		if l.Attempt == attempt && !l.Admitted {
			waiting := rfc3339RE().ReplaceAllStringFunc(l.Waiting, func(ts string) string { return readableTime(ts, st.Now) })
			line := fmt.Sprintf("waiting: %s, %d s", waiting, int(waited.Seconds()))
			if r := []rune(line); width > 0 && len(r) >= width {
				line = string(r[:max(width-4, 0)]) + "..."
			}
			return line
		}
	}
	return ""
}

// rfc3339RE matches the RFC 3339 times the engine's reasons carry.
var rfc3339RE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})`)
})

// readableTime writes the RFC 3339 time ts as the local clock time and
// how far from now it is: "01:16:37 (in 12 s)".
func readableTime(ts string, now time.Time) string {
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil || now.IsZero() {
		return ts
	}
	d := t.Sub(now).Round(time.Second)
	rel := fmt.Sprintf("in %d s", int(d.Seconds()))
	if d < 0 {
		rel = fmt.Sprintf("%d s ago", int(-d.Seconds()))
	}
	return t.Local().Format("15:04:05") + " (" + rel + ")"
}

// termWidth is the width of the terminal w is, 0 when unknown.
func termWidth(w any) int {
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	cols, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return cols
}

// keepRenewing renews the lease now and then every until ctx is done. A
// failed renewal is retried within a second (svcrun away, as while it
// restarts, is told once, and once when it is back); a lost lease is
// reported once.
func keepRenewing(ctx context.Context, m *cli.Env, away *awayNotice, c *api.Client, lease string, every time.Duration) {
	for {
		rctx, cancel := context.WithTimeout(ctx, every)
		_, err := c.Renew(rctx, lease)
		cancel()
		next := every
		switch {
		case err == nil:
			away.back()
		case ctx.Err() != nil:
			return
		case errors.Is(err, errdefs.ErrUnknownLease):
			m.Printf("lease %s was lost (%v): CMD keeps running, but its services may stop and its objects may be reaped",
				lease, err)
			return
		case api.Away(err):
			away.gone(err, func() string { return fmt.Sprintf("renewing lease %s until it is back", lease) })
			next = min(time.Second, every)
		default:
			m.Printf("renewing lease %s: %v; retrying", lease, err)
			next = min(time.Second, every)
		}
		t := time.NewTimer(next)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// exitCode is CMD's exit status, 128+N when signal N killed it.
func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// jobEnv is the environment of a job run under grant g (svcrun run,
// svcrun check --job): the caller's, plus the attempt, the lease, the node
// and the services file.
func jobEnv(g api.Grant, servicesFile string) []string {
	return append(os.Environ(), svcenv.VarAttemptID+"="+g.Attempt, svcenv.VarLeaseID+"="+g.Lease,
		svcenv.VarNodeID+"="+g.NodeID, svcenv.VarServicesFile+"="+servicesFile)
}

// writeServicesFile writes, mode 0600 in servicesDir, the file that tells
// CMD what its lease uses (api.ServicesFile): the node, the lease, each
// service and probe with its latest fingerprint's attrs, and the labels
// every object the job creates must carry. It returns the file's path;
// the caller removes it once CMD has ended. Its name begins with this
// process's pid and start time, so that a later run can tell a file whose
// run was killed (sweepServicesFiles).
func writeServicesFile(g api.Grant) (string, error) {
	labels := func(service string) map[string]string {
		l := map[string]string{protocol.LabelAttemptID: g.Attempt, protocol.LabelNode: g.NodeID}
		if service != "" {
			l[protocol.LabelService] = service
		}
		return l
	}
	sf := api.ServicesFile{NodeID: g.NodeID, Lease: g.Lease, Attempt: g.Attempt, Services: []api.FileService{},
		Probes: g.Uses.Probes}
	for _, s := range g.Uses.Services {
		sf.Services = append(sf.Services, api.FileService{UsedService: s, Labels: labels(s.Name)})
	}
	sf.Labels = labels("")
	if len(sf.Services) == 1 {
		sf.Labels = sf.Services[0].Labels
	}
	if sf.Probes == nil {
		sf.Probes = []api.UsedProbe{}
	}
	b, err := json.MarshalIndent(sf, "", "  ")
	if err != nil {
		return "", fmt.Errorf("services file: %w", err)
	}
	dir, err := servicesDir()
	if err != nil {
		return "", fmt.Errorf("services file: %w", err)
	}
	// CreateTemp makes the file 0600: attrs may name sockets and paths
	// other users have no business knowing.
	start, _ := procfs.StartTicks(os.Getpid()) // 0 where unknown: never swept
	f, err := os.CreateTemp(dir, fmt.Sprintf("%d.%d.*.json", os.Getpid(), start))
	if err != nil {
		return "", fmt.Errorf("services file: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("services file %s: %w", f.Name(), err)
	}
	return f.Name(), nil
}

// servicesDir is the directory of this user's services files,
// <temp dir>/svcrun-services-<uid>, made 0700 if missing. One that is not
// this user's private directory (another user may have made it first, to
// read the files or swap them) is refused.
func servicesDir() (string, error) {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("svcrun-services-%d", os.Getuid()))
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", err
	}
	uid, known := ownerOf(fi)
	if !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 || known && uid != os.Getuid() {
		return "", fmt.Errorf("%s is not this user's private directory (%v, owner %d): remove it", dir, fi.Mode(), uid)
	}
	return dir, nil
}

// sweepServicesFiles removes the services files in dir whose run is gone
// (killed, with SIGKILL, before it could remove its own): each file's name
// gives its run's pid and start time, and a pid that is another process
// now, or none, is gone. Files of an unknown start time (0: a host
// without /proc) are left.
func sweepServicesFiles(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		pid, start, ok := servicesFileRun(e.Name())
		if !ok || start == 0 {
			continue
		}
		if now, alive := procfs.StartTicks(pid); !alive || now != start {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// servicesFileRun reads the pid and start time in a services file's name,
// "<pid>.<start>.<random>.json".
func servicesFileRun(name string) (pid int, start uint64, ok bool) {
	f := strings.Split(name, ".")
	if len(f) != 4 || f[3] != "json" {
		return 0, 0, false
	}
	pid, err1 := strconv.Atoi(f[0])
	start, err2 := strconv.ParseUint(f[1], 10, 64)
	return pid, start, err1 == nil && err2 == nil && pid > 0
}
