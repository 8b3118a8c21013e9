package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/oarbank/svcrun/agent"
	"github.com/oarbank/svcrun/api"
	"github.com/oarbank/svcrun/api/server"
	"github.com/oarbank/svcrun/errdefs"
	"github.com/oarbank/svcrun/internal/cli"
	"github.com/oarbank/svcrun/nodeconfig"
)

// startAPI serves the local API on the agent's socket until ctx is done or
// the returned Closer is closed, whichever comes first.
func startAPI(ctx context.Context, a *agent.Agent, log *slog.Logger) (io.Closer, error) {
	srv, err := server.New(a, a.Config().Socket, log, server.WithSocketGroup(a.Config().SocketGID))
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { _ = srv.Close() })
	return closerFunc(func() error {
		stop()
		return srv.Close()
	}), nil
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// EnvSocket names the environment variable with the API socket, used when
// neither --socket nor --config is given.
const EnvSocket = "SVCRUN_SOCKET"

// DefaultSocket is the system's socket: the one the packaged node
// configuration (/etc/svcrun/svcrun.toml) listens on.
const DefaultSocket = "/run/svcrun/svcrun.sock"

// socketFlags are the flags of every command that talks to the daemon.
type socketFlags struct {
	socket, config *string
	env            *cli.Env // says which socket a fallback chose
}

func addSocketFlags(m *cli.Env, fs *flag.FlagSet) socketFlags {
	return socketFlags{
		socket: fs.String("socket", "",
			"svcrun's API socket `PATH` (default: the socket of --config, else $"+EnvSocket+", else "+DefaultSocket+
				" if it exists, else that of the svcrun serve started last, named on stderr)"),
		config: fs.String("config", "", "read the socket path from this node configuration `FILE`"),
		env:    m,
	}
}

// path resolves the socket: --socket, else --config's socket, else
// $SVCRUN_SOCKET, else the default if it exists, else the one svcrun serve
// announced last (announce.go), else the default. The announced one is a
// guess (perhaps another checkout's svcrun): the command says on stderr
// that it took it, and why.
func (f socketFlags) path() (string, error) {
	switch {
	case *f.socket != "":
		return *f.socket, nil
	case *f.config != "":
		c, err := nodeconfig.Load(*f.config)
		if err != nil {
			return "", fmt.Errorf("cannot read the socket path from %s:\n%w", *f.config, err)
		}
		return c.Socket, nil
	case os.Getenv(EnvSocket) != "":
		return os.Getenv(EnvSocket), nil
	}
	if _, err := os.Stat(DefaultSocket); err != nil {
		if s := announced(); s != "" {
			if why := deadSocket(s); why != "" {
				f.env.Printf("not using %s, announced in %s: %s", s, announceFile(), why)
				return DefaultSocket, nil
			}
			f.env.Printf("using %s, the socket of the svcrun serve started last (announced in %s), since none is at %s: "+
				"give --socket or --config to choose", s, announceFile(), DefaultSocket)
			return s, nil
		}
	}
	return DefaultSocket, nil
}

// deadSocket says why the announced socket s is not to be taken ("" when
// it may be): gone, not a socket, another user's, or nothing answers on it
// (the svcrun that announced it died without removing the announcement).
func deadSocket(s string) string {
	fi, err := os.Lstat(s)
	switch {
	case err != nil:
		return fmt.Sprintf("it is gone (%v): the svcrun that announced it stopped", unwrapPath(err))
	case runtime.GOOS != "windows" && fi.Mode().Type() != fs.ModeSocket: // Windows does not say
		return "it is not a socket"
	}
	if uid, ok := ownerOf(fi); ok && uid != os.Geteuid() {
		return fmt.Sprintf("it belongs to uid %d, not to this user (uid %d)", uid, os.Geteuid())
	}
	conn, err := net.DialTimeout("unix", s, 5*time.Second)
	if err != nil {
		return fmt.Sprintf("nothing answers on it (%v): the svcrun that announced it is gone", unwrapPath(err))
	}
	conn.Close()
	return ""
}

// unwrapPath is the reason of a path or network error without the path,
// which the message names already.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		var se *os.SyscallError
		if errors.As(oe.Err, &se) {
			return se.Err
		}
		return oe.Err
	}
	return err
}

// dial connects to the daemon.
func (f socketFlags) dial() (*api.Client, error) {
	p, err := f.path()
	if err != nil {
		return nil, err
	}
	return api.Dial(p)
}

// connect parses a command that takes no arguments and dials svcrun.
func connect(fs *flag.FlagSet, sock socketFlags, args []string) (*api.Client, error) {
	if err := cli.Parse(fs, args); err != nil {
		return nil, err
	}
	if err := cli.NoArgs(fs); err != nil {
		return nil, err
	}
	return sock.dial()
}

// connectOne parses a command that takes one argument, named what (its
// meaning and an example in hint), and dials svcrun.
func connectOne(fs *flag.FlagSet, sock socketFlags, args []string, what, hint string) (*api.Client, string, error) {
	if err := cli.Parse(fs, args); err != nil {
		return nil, "", err
	}
	arg, err := cli.OneArg(fs, what, hint)
	if err != nil {
		return nil, "", err
	}
	c, err := sock.dial()
	return c, arg, err
}

// explain is the --json code of a failure the API reported (its code and
// a rejection's reason), or of svcrun not answering on its socket.
func explain(err error) (code, reason string) {
	var apiErr *api.Error
	var unreachable *api.UnreachableError
	switch {
	case errors.As(err, &apiErr):
		return apiErr.Code, apiErr.Reason
	case errors.As(err, &unreachable):
		return "unreachable", ""
	}
	return "", ""
}

// admission explains an acquire that failed: a rejection with its reason
// and a hint (resetHint), an interrupted wait; anything else stays.
func admission(ctx context.Context, c *api.Client, req api.AcquireRequest, err error) error {
	var rej *errdefs.RejectedError
	switch {
	case errors.As(err, &rej):
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second) // the hint must not hold up the failure
		defer cancel()
		st, serr := c.Status(sctx)
		if serr != nil {
			st = api.Status{}
		}
		return &cli.Failure{Err: err, Msg: "rejected: " + rej.Reason, Code: api.CodeRejected, Reason: rej.Reason,
			Hint: resetHint(st, req)}
	case errors.Is(err, context.Canceled):
		return &cli.Failure{Err: err, Msg: "interrupted while waiting for admission: the request was withdrawn",
			Code: "interrupted"}
	}
	return err
}

// resetHint is the hint of a rejected request: the command that clears
// each unhealthy service offering a capability or pool it asks for (the
// engine's reason says a service is unhealthy; what to type is the
// CLI's), else where to look.
func resetHint(st api.Status, req api.AcquireRequest) string {
	const look = "svcrun status shows the services, pools and probes"
	wanted := map[string]bool{}
	for _, c := range req.Capabilities {
		wanted["capability "+c] = true
	}
	for p := range req.Pools {
		wanted["pool "+p] = true
	}
	for _, p := range req.NeedsPools {
		wanted["pool "+p] = true
	}
	offers := map[string][]string{} // service: what it offers
	for _, s := range st.Services {
		for _, c := range s.Capabilities {
			offers[s.Name] = append(offers[s.Name], "capability "+c)
		}
	}
	for _, p := range st.Pools {
		offers[p.Service] = append(offers[p.Service], "pool "+p.Name)
	}
	var resets []string
	for _, s := range st.Services {
		if s.Unhealthy && slices.ContainsFunc(offers[s.Name], func(o string) bool { return wanted[o] }) {
			resets = append(resets, fmt.Sprintf("%s is unhealthy: svcrun reset %s clears its failures", s.Name, s.Name))
		}
	}
	if len(resets) == 0 {
		return look + "; svcrun reset SERVICE clears an unhealthy service"
	}
	return strings.Join(resets, "; ") + "; " + look
}

// leaseError adds a hint to an unknown lease.
func leaseError(err error) error {
	if errors.Is(err, errdefs.ErrUnknownLease) {
		return &cli.Failure{Err: err, Code: api.CodeUnknownLease,
			Hint: "svcrun status lists the leases svcrun holds; a lease with a TTL that was not renewed in time has expired"}
	}
	return err
}

// runDone runs a command without arguments whose API call answers with a
// message (doctor, reap).
func runDone(ctx context.Context, m *cli.Env, args []string, name string,
	call func(*api.Client, context.Context) (api.Done, error)) error {
	fs := m.FlagSet(name, "[--json] [--socket PATH | --config FILE]")
	sock := addSocketFlags(m, fs)
	asJSON := m.JSONFlag(fs, "print the answer as JSON: ok, message")
	c, err := connect(fs, sock, args)
	if err != nil {
		return err
	}
	defer c.Close()
	d, err := call(c, ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return cli.PrintJSON(m.Stdout, d)
	}
	fmt.Fprintln(m.Stdout, d.Message)
	return nil
}
