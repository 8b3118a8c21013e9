package sandbox

import (
	"errors"
	"fmt"
	"os/user"
	"strconv"
	"strings"
	"sync"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/executor"
	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/nodeconfig"
	"github.com/oarbank/svcrun/svcenv"
)

// Layer names one layer of the sandbox (see the package doc).
type Layer string

const (
	LayerLandlock    Layer = "landlock"
	LayerTruncate    Layer = "landlock-truncate"
	LayerScope       Layer = "landlock-scope"
	LayerUnixSockets Layer = "unix-sockets"
	LayerNoNewPrivs  Layer = "no_new_privs"
	LayerNetNS       Layer = "netns"
	LayerRunAs       Layer = "run_as"
	LayerCoreLimit   Layer = "rlimit_core"
	// LayerSandbox is the whole sandbox, on platforms where it is not
	// enforced.
	LayerSandbox Layer = "sandbox"
)

// ScopeSignals adds Landlock's signal scoping (ABI 6) to every module's
// domain: an op can then signal no process outside its module's current
// domain. It is off: a domain lives as long as the svcrun thread that
// forks the module's ops, so after an svcrun restart, or a reload that
// changes a module's grants, the module's new ops could no longer signal
// the daemons its earlier ops left (kill -0 on a pid file says "not
// running", and stop leaves the daemon to cgroup.kill): adoption and stop
// break for every service that manages its daemon with signals. Ops that
// run as run_as cannot signal svcrun anyway (it is root). Set it, before
// the first Hooks or Probe, only where every module's services tolerate
// that.
var ScopeSignals = false

// Missing is a layer that a module's ops run without, and why.
type Missing struct {
	Layer  Layer  `json:"layer"`
	Reason string `json:"reason"`
}

func (m Missing) String() string { return string(m.Layer) + ": " + m.Reason }

// Access is what a Rule allows beneath its path.
type Access uint8

const (
	// ReadExec reads files and directories and executes files: the
	// bundle, the system directories, the granted tools.
	ReadExec Access = iota + 1
	// ReadOnly reads files and directories: /proc and read grants.
	ReadOnly
	// ReadWrite reads, writes, creates, renames and removes files and
	// directories, sockets, FIFOs and symbolic links; no execution and no
	// device nodes: the module data dir and write grants.
	ReadWrite
	// Device reads and writes (and truncates) an existing file, without
	// ioctl: /dev/null, /dev/zero, /dev/urandom.
	Device
)

// MarshalText writes an access as String names it, in svcrun sandbox --json.
func (a Access) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

func (a Access) String() string {
	switch a {
	case ReadExec:
		return "read+exec"
	case ReadOnly:
		return "read"
	case ReadWrite:
		return "read-write"
	case Device:
		return "read-write file"
	}
	return "access(" + strconv.Itoa(int(a)) + ")"
}

// Rule is one Landlock rule: Access beneath Path, a clean absolute path
// with its symbolic links resolved.
type Rule struct {
	Path   string `json:"path"`
	Access Access `json:"access"`
	// What says where the rule comes from: "system", "bundle", "proc",
	// "device", "data dir", "read grant", "write grant", "tool NAME".
	What string `json:"what"`
}

// Account is the user ops run as.
type Account struct {
	Name string `json:"name"`
	UID  int    `json:"uid"`
	GID  int    `json:"gid"`
	// Groups are the supplementary groups the op gets.
	Groups []int `json:"groups"`
}

// Plan is how one module's ops are sandboxed on this host: the same for
// every service and probe of the module.
type Plan struct {
	Module  string                 `json:"module"`
	Mode    nodeconfig.SandboxMode `json:"mode"`
	Network manifest.Network       `json:"network"`
	// Landlock is the Landlock ABI the rules are enforced with; 0 means
	// no Landlock (Missing says why).
	Landlock int `json:"landlock"`
	// Rules are the Landlock rules; nothing outside them is reachable.
	Rules []Rule `json:"rules"`
	// NetNS says ops enter an empty network namespace (network "none").
	NetNS bool `json:"net_ns"`
	// RunAs is the user ops run as; nil means svcrun's own.
	RunAs *Account `json:"run_as,omitempty"`
	// Missing are the layers the ops run without. In require mode any
	// makes Err fail.
	Missing []Missing `json:"missing"`
	// Notes are facts worth a log line that weaken nothing: a grant that
	// does not exist (so it is not granted), a dropped group.
	Notes []string `json:"notes"`
}

// Err is nil when the module's ops may run: always in best_effort mode,
// and in require mode when no layer is missing. Otherwise it names every
// missing layer and why.
func (p *Plan) Err() error {
	if p.Mode != nodeconfig.SandboxRequire || len(p.Missing) == 0 {
		return nil
	}
	ms := make([]string, len(p.Missing))
	for i, m := range p.Missing {
		ms[i] = "missing " + m.String()
	}
	return fmt.Errorf("sandbox = \"require\" but the sandbox of module %q cannot be applied whole on this "+
		"host: %s; set sandbox = \"best_effort\" to run it with what this host supports (svcrun sandbox shows it)",
		p.Module, strings.Join(ms, "; "))
}

// String describes the plan for people, one line per rule and layer.
func (p *Plan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "module %s (sandbox %s, network %s)\n", p.Module, p.Mode, p.Network)
	if p.Landlock > 0 {
		fmt.Fprintf(&b, "  landlock ABI %d rules:\n", p.Landlock)
	} else {
		fmt.Fprintf(&b, "  landlock rules (NOT enforced):\n")
	}
	for _, r := range p.Rules {
		fmt.Fprintf(&b, "    %-15s %s (%s)\n", r.Access, r.Path, r.What)
	}
	switch {
	case p.NetNS:
		fmt.Fprintf(&b, "  network: an empty network namespace\n")
	case p.Network == manifest.NetworkNone:
		fmt.Fprintf(&b, "  network: the host's (NOT isolated)\n")
	default:
		fmt.Fprintf(&b, "  network: the host's\n")
	}
	if p.RunAs != nil {
		fmt.Fprintf(&b, "  user: %s (uid %d, gid %d, groups %v)\n", p.RunAs.Name, p.RunAs.UID, p.RunAs.GID, p.RunAs.Groups)
	} else {
		fmt.Fprintf(&b, "  user: svcrun's own\n")
	}
	for _, m := range p.Missing {
		fmt.Fprintf(&b, "  MISSING %s\n", m)
	}
	for _, n := range p.Notes {
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	if err := p.Err(); err != nil {
		fmt.Fprintf(&b, "  REFUSED: its ops fail to spawn\n")
	}
	return b.String()
}

// PlanFor returns how the ops of module m of cfg are sandboxed on this
// host. An error means the configuration makes the sandbox unsound (see
// the package doc); the module is then refused in both modes.
func PlanFor(cfg *nodeconfig.Config, m nodeconfig.LoadedModule) (*Plan, error) {
	if cfg == nil || m.Manifest == nil {
		return nil, errors.New("sandbox: no node configuration or module")
	}
	return plan(cfg, m.Manifest, m.Config, hostFacts())
}

func hooksOfPlan(p *Plan, err error) (executor.Hooks, error) {
	if err != nil {
		return executor.Hooks{}, err
	}
	if err := p.Err(); err != nil {
		return executor.Hooks{}, err
	}
	return hooksOf(p), nil
}

// For returns the executor.Config.Hooks of the modules of cfg. Build it
// again with each new configuration (executor Update): that is also what
// makes a bundle replaced in place reachable again. A module's plan and
// hooks are made once for all its targets: at 1,000 services of one
// module, making the plan for each was a twentieth of svcrun's CPU at
// boot.
func For(cfg *nodeconfig.Config) func(engine.Target, nodeconfig.LoadedModule) (executor.Hooks, error) {
	type planned struct {
		hooks executor.Hooks
		err   error
	}
	var mu sync.Mutex
	plans := map[*manifest.Module]planned{}
	return func(t engine.Target, m nodeconfig.LoadedModule) (executor.Hooks, error) {
		mu.Lock()
		defer mu.Unlock()
		pl, ok := plans[m.Manifest]
		if !ok {
			pl.hooks, pl.err = hooksOfPlan(PlanFor(cfg, m))
			plans[m.Manifest] = pl
		}
		return pl.hooks, pl.err
	}
}

// Report lists, one line each, what the sandbox lacks or refuses for the
// modules of cfg on this host: for logs at start and reload, and status.
func Report(cfg *nodeconfig.Config, mods []nodeconfig.LoadedModule) []string {
	var out []string
	for _, m := range mods {
		name := m.Manifest.Name
		p, err := PlanFor(cfg, m)
		if err != nil {
			out = append(out, fmt.Sprintf("module %s: refused: %v", name, err))
			continue
		}
		verdict := "runs without"
		if p.Err() != nil {
			verdict = "refused (sandbox = \"require\"), missing"
		}
		for _, miss := range p.Missing {
			out = append(out, fmt.Sprintf("module %s: %s %s", name, verdict, miss))
		}
		for _, n := range p.Notes {
			out = append(out, fmt.Sprintf("module %s: note: %s", name, n))
		}
	}
	return out
}

// ExecutorConfig is the executor.Config of the ops of cfg's modules mods,
// run as id: the one assembly of the node, its modules, the run_as
// identity and the sandbox hooks, so that the daemon, `svcrun op` and
// `svcrun check` run an op alike. Each caller adds only what is its own
// (containers, a logger, pauses, another pipe grace).
func ExecutorConfig(cfg *nodeconfig.Config, mods []nodeconfig.LoadedModule, id Identity) executor.Config {
	return executor.Config{Node: cfg, Modules: mods, User: id.User, Owner: id.Owner, Hooks: For(cfg)}
}

// Identity is who ops run as, for executor.Config: User (USER and
// LOGNAME; "" leaves the executor's default, svcrun's own user) and Owner
// of the module data dirs (nil: svcrun's account).
type Identity struct {
	User    string
	Owner   *svcenv.Owner
	Account *Account // nil: svcrun's own user
}

// IdentityOf returns the identity of cfg's ops on this host: run_as when
// svcrun runs as root and run_as is set, svcrun's own user otherwise.
func IdentityOf(cfg *nodeconfig.Config) (Identity, error) {
	f := hostFacts()
	if f.goos != "linux" || f.euid != 0 || cfg.RunAs == "" {
		return Identity{}, nil
	}
	a, err := lookupAccount(cfg.RunAs)
	if err != nil {
		return Identity{}, err
	}
	return Identity{User: a.Name, Owner: &svcenv.Owner{UID: a.UID, GID: a.GID}, Account: a}, nil
}

// lookupAccount resolves run_as to its uid, gid and groups.
func lookupAccount(name string) (*Account, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("sandbox: run_as %q: %w", name, err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("sandbox: run_as %q: uid %q, gid %q are not numbers", name, u.Uid, u.Gid)
	}
	if uid == 0 || gid == 0 {
		return nil, fmt.Errorf(
			"sandbox: run_as %q has uid %d, gid %d: it must be an unprivileged user with a group of its own", name, uid, gid)
	}
	a := &Account{Name: name, UID: uid, GID: gid}
	ids, err := u.GroupIds()
	if err != nil {
		return nil, fmt.Errorf("sandbox: run_as %q: its groups: %w", name, err)
	}
	for _, s := range ids {
		g, err := strconv.Atoi(s)
		if err != nil {
			return nil, fmt.Errorf("sandbox: run_as %q: group id %q is not a number", name, s)
		}
		a.Groups = append(a.Groups, g)
	}
	return a, nil
}

// facts are what the plan needs to know of the host.
type facts struct {
	goos string
	// landlock is the Landlock ABI, 0 when unusable (landlockReason says
	// why).
	landlock       int
	landlockReason string
	nnpReason      string // "" when no_new_privs works
	netnsReason    string // "" when a network namespace can be entered
	euid           int
}
