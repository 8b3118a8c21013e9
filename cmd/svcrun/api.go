package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/oarbank/svcrun/agent"
	"github.com/oarbank/svcrun/api"
	"github.com/oarbank/svcrun/nodeconfig"
)

// startAPI serves the local API on the agent's socket until ctx is done or
// the returned Closer is closed, whichever comes first.
func startAPI(ctx context.Context, a *agent.Agent, log *slog.Logger) (io.Closer, error) {
	srv, err := api.NewServer(a, a.Config().Socket, log)
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

// DefaultSocket is the socket of a default node configuration.
var DefaultSocket = filepath.Join(nodeconfig.DefaultDataDir, nodeconfig.DefaultSocketName)

// socketFlags are the flags of every command that talks to the daemon.
type socketFlags struct {
	socket, config *string
}

func addSocketFlags(fs *flag.FlagSet) socketFlags {
	return socketFlags{
		socket: fs.String("socket", "", "svcrun's API socket `PATH` (default: the socket of --config, else $"+EnvSocket+", else "+DefaultSocket+")"),
		config: fs.String("config", "", "read the socket path from this node configuration `FILE`"),
	}
}

// path resolves the socket: --socket, else --config's socket, else
// $SVCRUN_SOCKET, else the default.
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
	return DefaultSocket, nil
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
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if err := noArgs(fs); err != nil {
		return nil, err
	}
	return sock.dial()
}

// connectOne parses a command that takes one argument, named what, and
// dials svcrun.
func connectOne(fs *flag.FlagSet, sock socketFlags, args []string, what string) (*api.Client, string, error) {
	if err := parseFlags(fs, args); err != nil {
		return nil, "", err
	}
	arg, err := oneArg(fs, what)
	if err != nil {
		return nil, "", err
	}
	c, err := sock.dial()
	return c, arg, err
}

// noArgs checks that no positional arguments are left.
func noArgs(fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	return nil
}

// oneArg returns the single positional argument, named what.
func oneArg(fs *flag.FlagSet, what string) (string, error) {
	switch fs.NArg() {
	case 0:
		return "", usageError{"give " + what}
	case 1:
		return fs.Arg(0), nil
	}
	return "", usageError{fmt.Sprintf("unexpected argument %q: give one %s", fs.Arg(1), what)}
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// runDone runs a command without arguments whose API call answers with a
// message (doctor, reap).
func runDone(ctx context.Context, m *Main, args []string, name string, call func(*api.Client, context.Context) (api.Done, error)) error {
	fs := newFlagSet(m, name, "")
	sock := addSocketFlags(fs)
	c, err := connect(fs, sock, args)
	if err != nil {
		return err
	}
	defer c.Close()
	d, err := call(c, ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(m.Stdout, d.Message)
	return nil
}
