package module

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/oarbank/svcrun/protocol"
	"github.com/oarbank/svcrun/svcenv"
)

// Service is a service's seven ops. Each returns its result, or an error
// that fails the op (see Exit for the exit status).
type Service interface {
	Probe
	Start(c *Call) (protocol.OpResult, error)
	Stop(c *Call) (protocol.OpResult, error)
	Status(c *Call) (protocol.Status, error)
	Ready(c *Call) (protocol.Status, error)
	ListOwned(c *Call) (protocol.OwnedList, error)
	// Destroy removes the owned object id; force says to remove it even
	// if it looks busy. An id already gone is a success with Changed
	// false.
	Destroy(c *Call, id string, force bool) (protocol.OpResult, error)
}

// Probe is a probe's one op. A service's fingerprint must set Running.
type Probe interface {
	Fingerprint(c *Call) (protocol.Fingerprint, error)
}

// Env is what the op's environment says about it.
type Env struct {
	Data         string // OARBANK_MODULE_DATA: the module data dir
	Module       string // OARBANK_MODULE
	Service      string // OARBANK_SERVICE: the service's own name, or the probe's
	NodeID       string // OARBANK_NODE_ID
	Platform     string // OARBANK_PLATFORM: linux, macos or windows
	SettingsFile string // OARBANK_SETTINGS_FILE
	ToolsFile    string // OARBANK_TOOLS_FILE
	LimitsFile   string // OARBANK_LIMITS_FILE
}

// ErrNoEnv is wrapped by the error of an op run outside svcrun: a variable
// svcrun always sets is missing.
var ErrNoEnv = errors.New("not run by svcrun")

// EnvFrom reads the op's environment through getenv (os.Getenv).
func EnvFrom(getenv func(string) string) (Env, error) {
	e := Env{
		Data:         getenv(svcenv.VarModuleData),
		Module:       getenv(svcenv.VarModule),
		Service:      getenv(svcenv.VarService),
		NodeID:       getenv(svcenv.VarNodeID),
		Platform:     getenv(svcenv.VarPlatform),
		SettingsFile: getenv(svcenv.VarSettingsFile),
		ToolsFile:    getenv(svcenv.VarToolsFile),
		LimitsFile:   getenv(svcenv.VarLimitsFile),
	}
	for _, v := range []struct{ name, value string }{
		{svcenv.VarModuleData, e.Data}, {svcenv.VarModule, e.Module},
		{svcenv.VarService, e.Service}, {svcenv.VarNodeID, e.NodeID},
	} {
		if v.value == "" {
			return Env{}, fmt.Errorf("%w: %s is not set", ErrNoEnv, v.name)
		}
	}
	return e, nil
}

// FullName is the service's full name, <module>/<service>: the value of
// its oarbank.service label.
func (e Env) FullName() string { return e.Module + "/" + e.Service }

// Path is a path inside the module data dir, where every file of the
// module (pid files, logs, sockets) belongs.
func (e Env) Path(elem ...string) string {
	return filepath.Join(append([]string{e.Data}, elem...)...)
}

// Labels are the three labels an object made for attempt must carry.
func (e Env) Labels(attempt string) map[string]string {
	return map[string]string{
		protocol.LabelAttemptID: attempt,
		protocol.LabelNode:      e.NodeID,
		protocol.LabelService:   e.FullName(),
	}
}

// Owns reports whether labels are this node's and this service's, with an
// attempt: the objects svcrun may reap for it.
func (e Env) Owns(labels map[string]string) bool {
	return labels[protocol.LabelAttemptID] != "" &&
		labels[protocol.LabelNode] == e.NodeID &&
		labels[protocol.LabelService] == e.FullName()
}

// Limits are the owner's caps from limits.json; nil means no cap.
type Limits struct {
	MemGB *float64 `json:"mem_gb"`
	Pids  *int64   `json:"pids"`
}

// Call is one op: its environment, its files, and where to log.
type Call struct {
	Env
	Op protocol.Op
	// Settings are the top-level keys of settings.json, each still JSON;
	// Setting decodes one.
	Settings map[string]json.RawMessage
	Tools    map[string]string // tools.json: granted tool name to absolute path
	Limits   Limits
	// Log is stderr, for people: svcrun keeps its tail for the logs.
	Log io.Writer
}

// Setting decodes the setting key into v and reports whether it was set.
func (c *Call) Setting(key string, v any) (bool, error) {
	raw, ok := c.Settings[key]
	if !ok {
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return true, fmt.Errorf("setting %q of %s: %w", key, c.SettingsFile, err)
	}
	return true, nil
}

// Logf writes one line to stderr.
func (c *Call) Logf(format string, args ...any) {
	fmt.Fprintf(c.Log, format+"\n", args...)
}

// readJSON decodes the JSON object of path into v; a file that does not
// exist leaves v as it is (svcrun always writes the three, but an author
// running an op by hand need not).
func readJSON(path string, v any) error {
	if path == "" {
		return nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// exitError carries the exit status an error must give.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// Exit makes err fail the op with exit status code (1 to 125) instead of
// 1, for a service whose callers tell its failures apart.
func Exit(code int, err error) error {
	if code < 1 || code > 125 {
		code = 1
	}
	return &exitError{code: code, err: err}
}

// usageError is a wrong command line: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// Exit statuses of Main.
const (
	exitFailed = 1
	exitUsage  = 2
)

// Main runs the op of os.Args of service s and exits. While the op's
// method runs, os.Stdout is stderr: a stray print cannot corrupt the one
// document, which Main writes to the real stdout.
func Main(s Service) {
	stdout := os.Stdout
	os.Stdout = os.Stderr
	os.Exit(Run(s, os.Args[1:], os.Getenv, stdout, os.Stderr))
}

// MainProbe runs the op of os.Args of probe p (only fingerprint) and exits,
// as Main does.
func MainProbe(p Probe) {
	stdout := os.Stdout
	os.Stdout = os.Stderr
	os.Exit(RunProbe(p, os.Args[1:], os.Getenv, stdout, os.Stderr))
}

// Run runs the op of args (the op, then its arguments) of service s, prints
// its one document on stdout and returns the exit status.
func Run(s Service, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	return run(s, protocol.RoleService, args, getenv, stdout, stderr)
}

// RunProbe is Run for a probe.
func RunProbe(p Probe, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	return run(p, protocol.RoleProbe, args, getenv, stdout, stderr)
}

func run(impl Probe, role protocol.Role, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	op, v, err := dispatch(impl, role, args, getenv, stderr)
	var doc any
	code := 0
	if err != nil {
		code = exitFailed
		var ue *usageError
		var ee *exitError
		switch {
		case errors.As(err, &ue):
			code = exitUsage
		case errors.As(err, &ee):
			code = ee.code
		}
		who := string(op)
		if who == "" {
			who = "usage"
		}
		fmt.Fprintf(stderr, "%s: %v\n", who, err)
		switch op {
		case protocol.OpStart, protocol.OpStop, protocol.OpDestroy:
			doc = protocol.OpResult{Message: err.Error()}
		default:
			doc = struct {
				Message string `json:"message"`
			}{err.Error()}
		}
	} else {
		doc = v
	}
	data, err := json.Marshal(doc)
	if err != nil {
		// A result that cannot be encoded (an attrs value of NaN): the
		// op fails, and says why.
		fmt.Fprintf(stderr, "%s: encode the result: %v\n", op, err)
		data, _ = json.Marshal(struct {
			Message string `json:"message"`
		}{"encode the result: " + err.Error()})
		code = exitFailed
	}
	var b bytes.Buffer
	b.Write(data)
	b.WriteByte('\n')
	if _, err := stdout.Write(b.Bytes()); err != nil && code == 0 {
		return exitFailed
	}
	return code
}

// dispatch parses args, prepares the Call and runs the op's method.
func dispatch(impl Probe, role protocol.Role, args []string, getenv func(string) string,
	stderr io.Writer) (protocol.Op, any, error) {
	if len(args) == 0 {
		return "", nil, &usageError{"no op given"}
	}
	op, err := protocol.ParseOp(args[0])
	if err != nil {
		return "", nil, &usageError{err.Error()}
	}
	rest := args[1:]
	var id string
	var force bool
	switch {
	case role == protocol.RoleProbe && op != protocol.OpFingerprint:
		return op, nil, &usageError{fmt.Sprintf("a probe implements only fingerprint, not %s", op)}
	case op == protocol.OpDestroy:
		switch {
		case len(rest) == 1:
		case len(rest) == 2 && rest[1] == "--force":
			force = true
		default:
			return op, nil, &usageError{fmt.Sprintf("destroy takes an object id and optionally --force, got %q", rest)}
		}
		id = rest[0]
		if err := protocol.ValidObjectID(id); err != nil {
			return op, nil, &usageError{err.Error()}
		}
	case len(rest) > 0:
		return op, nil, &usageError{fmt.Sprintf("%s takes no arguments, got %q", op, rest)}
	}
	env, err := EnvFrom(getenv)
	if err != nil {
		return op, nil, err
	}
	c := &Call{Env: env, Op: op, Log: stderr}
	if err := readJSON(env.SettingsFile, &c.Settings); err != nil {
		return op, nil, fmt.Errorf("read the settings: %w", err)
	}
	if err := readJSON(env.ToolsFile, &c.Tools); err != nil {
		return op, nil, fmt.Errorf("read the tools: %w", err)
	}
	if err := readJSON(env.LimitsFile, &c.Limits); err != nil {
		return op, nil, fmt.Errorf("read the limits: %w", err)
	}
	if op == protocol.OpFingerprint {
		f, err := impl.Fingerprint(c)
		if err == nil && role == protocol.RoleService && f.Running == nil {
			err = errors.New("a service's fingerprint must say whether it is running (Fingerprint.Running is nil)")
		}
		return op, f, err
	}
	s := impl.(Service)
	var v any
	switch op {
	case protocol.OpStart:
		v, err = okResult(s.Start(c))
	case protocol.OpStop:
		v, err = okResult(s.Stop(c))
	case protocol.OpDestroy:
		v, err = okResult(s.Destroy(c, id, force))
	case protocol.OpStatus:
		v, err = s.Status(c)
	case protocol.OpReady:
		v, err = s.Ready(c)
	case protocol.OpListOwned:
		var l protocol.OwnedList
		l, err = s.ListOwned(c)
		for _, o := range l.Objects {
			if e := protocol.ValidObjectID(o.ID); e != nil && err == nil {
				err = fmt.Errorf("owned object: %w", e)
			}
		}
		v = l
	}
	return op, v, err
}

// okResult sets OK, which must agree with the exit status 0 of a success.
func okResult(r protocol.OpResult, err error) (protocol.OpResult, error) {
	r.OK = err == nil
	return r, err
}
