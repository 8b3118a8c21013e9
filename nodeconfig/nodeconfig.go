// Package nodeconfig loads svcrun's node configuration, svcrun.toml
// (docs/decisions.md, Node configuration): who the node is, where its state lives, how much memory
// its services may reserve, how strictly they are sandboxed, how often they
// are watched, the owner's limits, and the modules with what the owner
// approved for each.
//
// # Contract
//
// Parse is pure: the host's facts (host name, physical memory, cores,
// platform, users) are inputs, so every default and check is testable.
// Load gathers those facts and reads the file. Both return a Config only
// when the whole file is valid; otherwise a tomldoc.ErrorList with every
// mistake as "file:line:col: field: reason".
//
// LoadModules then reads every module's manifest and checks what spans the
// files: each bundle a directory holding a readable module.toml (else an
// error at the position of its bundle key in the config file), module
// names, pool and capability names unique among enabled modules, and each
// grant approved only where the manifest asked for it. Each module comes
// back as a LoadedModule, its [[modules]] entry with its manifest, and
// travels so: nobody pairs the two again by position.
//
// A caller runs Load, then LoadModules. So that one run still shows every
// mistake when the config file has some, Load then also does what
// LoadModules would with what it could read of the file, and returns the
// mistakes of the bundles and manifests with the file's own. Only a TOML
// syntax error stops it before the modules. The list comes back with the
// config file's mistakes first, in position order, then each other file's.
//
// Every key is documented in docs/node-config.md.
package nodeconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/oarbank/svcrun/internal/tomldoc"
	"github.com/oarbank/svcrun/manifest"
)

// SandboxMode is how strictly the sandbox is applied.
type SandboxMode string

const (
	// SandboxRequire refuses to run a service whose sandbox cannot be
	// applied whole.
	SandboxRequire SandboxMode = "require"
	// SandboxBestEffort runs it and reports which layers are missing.
	SandboxBestEffort SandboxMode = "best_effort"
)

// Defaults (docs/decisions.md, Node configuration).
const (
	DefaultDataDir      = "/var/lib/svcrun"
	DefaultSocketName   = "svcrun.sock"
	DefaultStatusPeriod = 10 * time.Second
	// DefaultWatchedStatusPeriod is the status period of a service whose
	// cgroup container tells its death: status is then a safety net.
	DefaultWatchedStatusPeriod = 300 * time.Second
	// DefaultFingerprintPeriod: at 1,000 services, 60 s would be 16.7
	// fingerprint ops a second, more than svcrun's whole idle CPU budget.
	DefaultFingerprintPeriod = 300 * time.Second
	DefaultReapPeriod        = 60 * time.Second
	// DefaultReapSweepPeriod: between sweeps a reap round lists only the
	// services that may hold an orphan (engine.Config.ReapSweepPeriod).
	DefaultReapSweepPeriod = 600 * time.Second
	// DefaultBudgetShare of physical memory is the default memory budget.
	DefaultBudgetShare = 0.8
)

// maxSocketPath is the room in sockaddr_un.sun_path (108 on Linux, 104 on
// macOS) less the terminating NUL; the smaller one is used everywhere so a
// config is portable.
const maxSocketPath = 103

// Host is what Parse needs to know of the machine.
type Host struct {
	Hostname    string
	MemoryBytes uint64 // physical memory; 0 if unknown
	Cores       int
	Platform    string // linux, macos or windows
	// UserExists tells whether run_as names a user; nil skips the check.
	UserExists func(name string) bool
	// GroupID resolves socket_group's name to a gid; nil takes only
	// numeric gids.
	GroupID func(name string) (int, bool)
}

// Config is a valid node configuration. Paths are absolute.
type Config struct {
	File    string // absolute
	NodeID  string
	DataDir string
	Socket  string
	// SocketGroup is socket_group as written ("" when unset), SocketGID
	// its gid (-1 when unset): the socket is then 0660 with that group, and
	// its members may use the API.
	SocketGroup      string
	SocketGID        int
	Platform         string
	MemoryBudgetGB   float64
	Sandbox          SandboxMode
	RunAs            string // "" when ops run as svcrun's own user
	MaxConcurrentOps int
	StatusPeriod     time.Duration
	// WatchedStatusPeriod is the status period of a service contained in
	// its cgroup (engine.ContainerPopulated); at least StatusPeriod.
	WatchedStatusPeriod time.Duration
	FingerprintPeriod   time.Duration
	ReapPeriod          time.Duration
	// ReapSweepPeriod is how often a reap round lists every running
	// service; at least ReapPeriod.
	ReapSweepPeriod time.Duration
	Limits          Limits
	Containers      Containers
	Modules         []Module
	// ModuleDataDirs overrides ModuleDataDir for the modules it names: a
	// node that svcrun op makes up for a bundle (op --bundle --data DIR);
	// a configuration file never sets it.
	ModuleDataDirs map[string]string
	// Warnings are accepted oddities worth a log line.
	Warnings []string

	// MetricsListen is the TCP address of the /metrics listener; "" for
	// none (the socket's /metrics stays).
	MetricsListen  string
	MemoryPressure MemoryPressure

	name string // the file as messages name it; File when empty
}

// Limits are the owner's caps, written to OARBANK_LIMITS_FILE and applied to
// each service's process container. Zero means no cap.
type Limits struct {
	MemGB float64 `json:"mem_gb,omitempty"`
	Pids  int64   `json:"pids,omitempty"`
}

// Module is one [[modules]] entry.
type Module struct {
	Bundle   string // absolute
	Enabled  bool
	Grants   Grants
	Tools    map[string]string // tool name -> absolute path
	Settings map[string]any    // JSON-ready: TOML dates become RFC 3339 strings

	field string // "modules[2]", for messages
	pos   tomldoc.Pos
	raw   string // bundle as written, for messages: "" when not from a file
}

// Grants are the approved part of a manifest's [sandbox] read, write and
// containers; Containers are full image references (manifest.NormalizeImage).
type Grants struct {
	Read       []string
	Write      []string
	Containers []string
}

// ModuleDataDir is the data directory of module name: home, temporary
// files, and the settings, tools and limits files.
func (c *Config) ModuleDataDir(name string) string {
	if d, ok := c.ModuleDataDirs[name]; ok {
		return d
	}
	return filepath.Join(c.DataDir, "modules", name)
}

// The name patterns are compiled on first use: their counted repetitions
// make big programs, and every command of the binary, a client's too, would
// compile them at start.
var (
	nodeIDRE   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$`) })
	userRE     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z_][a-z0-9_.-]{0,31}\$?$`) })
	toolNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$`) })
)

// Load reads the node configuration at file, with the facts of this host.
// When the file has mistakes, the error lists those of its modules'
// bundles and manifests too (what LoadModules would report).
func Load(file string) (*Config, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, fmt.Errorf("node config %s: %w", file, err)
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return nil,
			tomldoc.ErrorList{{File: file, Reason: fmt.Sprintf("cannot read the node configuration: %v", unwrapPathErr(err))}}
	}
	return load(file, abs, data, ThisHost())
}

// load is Load once the file is read: when the file has mistakes, the
// modules it names are loaded too, so that their mistakes are reported
// with the file's.
func load(file, abs string, data []byte, host Host) (*Config, error) {
	c, doc, err := parseDoc(file, abs, data, host)
	if err != nil {
		return nil, err
	}
	errs := append(tomldoc.ErrorList(nil), doc.Errors()...)
	if len(errs) == 0 {
		return c, nil
	}
	_, modErrs := loadModules(c)
	return nil, sortErrors(append(errs, modErrs...), c.fileName())
}

// Parse checks the content of the configuration file named file (for
// messages), whose absolute path abs anchors relative paths. It reads
// nothing else: the bundles are LoadModules' business.
func Parse(file, abs string, data []byte, host Host) (*Config, error) {
	c, doc, err := parseDoc(file, abs, data, host)
	if err != nil {
		return nil, err
	}
	if err := doc.Err(); err != nil {
		return nil, err
	}
	return c, nil
}

// parseDoc reads what it can of the file: the Config holds every value that
// was valid (defaults for the others), the Doc every mistake. err is a
// syntax error, when there is no Config at all.
func parseDoc(file, abs string, data []byte, host Host) (*Config, *tomldoc.Doc, error) {
	doc, err := tomldoc.Parse(file, data)
	if err != nil {
		return nil, nil, err
	}
	base := filepath.Dir(abs)
	t := doc.Root()
	c := &Config{File: abs, name: file}

	c.NodeID = t.String("node_id", host.Hostname)
	if !nodeIDRE().MatchString(c.NodeID) {
		if t.Has("node_id") {
			t.Errorf("node_id",
				"%q is not a valid node id: use 1-253 of A-Z, a-z, 0-9, '.', '_' and '-', starting with a letter or digit",
				c.NodeID)
		} else {
			t.Errorf("node_id", "is required: the host name %q is not a valid node id", host.Hostname)
		}
	}
	c.DataDir = absPath(t, "data_dir", DefaultDataDir, base)
	c.Socket = absPath(t, "socket", filepath.Join(c.DataDir, DefaultSocketName), base)
	if len(c.Socket) > maxSocketPath {
		t.Errorf("socket", "%s is %d bytes long; a Unix socket path can have at most %d: choose a shorter socket path",
			c.Socket, len(c.Socket), maxSocketPath)
	}
	c.SocketGroup, c.SocketGID = t.String("socket_group", ""), -1
	if c.SocketGroup != "" { // "" (or not a string, reported) is unset
		c.SocketGID = socketGID(t, c.SocketGroup, host)
	}

	c.Platform = t.String("platform", host.Platform)
	switch c.Platform {
	case "linux", "macos", "windows":
	default:
		t.Errorf("platform", "%q is not a platform: use \"linux\", \"macos\" or \"windows\"", c.Platform)
	}

	memGB := float64(host.MemoryBytes) / (1 << 30)
	switch {
	case t.Has("memory_budget_gb"):
		c.MemoryBudgetGB = t.Number("memory_budget_gb", 0)
		switch {
		case !isNumber(t, "memory_budget_gb"): // Number said why
		case c.MemoryBudgetGB <= 0:
			t.Errorf("memory_budget_gb", "must be more than 0, got %v", c.MemoryBudgetGB)
		case host.MemoryBytes > 0 && c.MemoryBudgetGB > memGB:
			t.Errorf("memory_budget_gb", "%v is more than the host's physical memory (%.1f GB)", c.MemoryBudgetGB, memGB)
		}
	case host.MemoryBytes == 0:
		t.Errorf("memory_budget_gb", "is required: the physical memory of this host is unknown")
	default:
		c.MemoryBudgetGB = math.Floor(memGB*DefaultBudgetShare*100) / 100
	}

	switch m := SandboxMode(t.String("sandbox", string(SandboxRequire))); m {
	case SandboxRequire, SandboxBestEffort:
		c.Sandbox = m
	default:
		t.Errorf("sandbox", "%q is not a sandbox mode: use \"require\" or \"best_effort\"", m)
	}

	c.RunAs = t.String("run_as", "")
	if t.Has("run_as") {
		switch {
		case !userRE().MatchString(c.RunAs):
			t.Errorf("run_as", "%q is not a valid user name", c.RunAs)
		case c.RunAs == "root":
			t.Errorf("run_as", "must name an unprivileged user, not root: leave it out to run ops as svcrun's own user")
		case host.UserExists != nil && !host.UserExists(c.RunAs):
			t.Errorf("run_as", "no user %q on this host: create it (useradd --system %s) or change run_as", c.RunAs, c.RunAs)
		}
	}

	cores := max(host.Cores, 1)
	n := t.Int("max_concurrent_ops", int64(4*cores))
	if n < 1 || n > 4096 {
		t.Errorf("max_concurrent_ops", "must be between 1 and 4096, got %d", n)
	}
	c.MaxConcurrentOps = int(n)

	c.StatusPeriod = t.Seconds("status_period_s", DefaultStatusPeriod, false)
	c.WatchedStatusPeriod = max(DefaultWatchedStatusPeriod, c.StatusPeriod)
	if t.Has("watched_status_period_s") {
		c.WatchedStatusPeriod = t.Seconds("watched_status_period_s", c.WatchedStatusPeriod, false)
		if c.WatchedStatusPeriod < c.StatusPeriod {
			t.Errorf("watched_status_period_s",
				"must be at least status_period_s (%v s), got %v s: a contained service is polled less often, never more",
				c.StatusPeriod.Seconds(), c.WatchedStatusPeriod.Seconds())
		}
	}
	c.FingerprintPeriod = t.Seconds("fingerprint_period_s", DefaultFingerprintPeriod, false)
	c.ReapPeriod = t.Seconds("reap_period_s", DefaultReapPeriod, false)
	c.ReapSweepPeriod = max(DefaultReapSweepPeriod, c.ReapPeriod)
	if t.Has("reap_sweep_period_s") {
		c.ReapSweepPeriod = t.Seconds("reap_sweep_period_s", c.ReapSweepPeriod, false)
		if c.ReapSweepPeriod < c.ReapPeriod {
			t.Errorf("reap_sweep_period_s",
				"must be at least reap_period_s (%v s), got %v s: a sweep is a reap round that lists every running service",
				c.ReapPeriod.Seconds(), c.ReapSweepPeriod.Seconds())
		}
	}

	c.MetricsListen = parseMetricsListen(t)
	c.MemoryPressure = parsePressure(t.Table("memory_pressure"))
	c.Limits = parseLimits(t.Table("limits"))
	c.Containers = parseContainers(t.Table("containers"), c, host)

	bundles := map[string]string{}
	for _, mt := range t.Tables("modules") {
		m := parseModule(mt, base, c)
		if m.Bundle != "" {
			if prev, dup := bundles[m.Bundle]; dup {
				mt.Errorf("bundle", "bundle %s is already listed by %s", m.Bundle, prev)
			}
			bundles[m.Bundle] = mt.Field()
		}
		c.Modules = append(c.Modules, m)
	}
	if len(c.Modules) == 0 {
		// Valid (a node may be set up before its modules), but an emptied
		// or truncated file looks the same: say what it means.
		c.Warnings = append(c.Warnings, fmt.Sprintf("%s: no [[modules]]: svcrun runs nothing on this node; "+
			"a running svcrun refuses to reload this file while it has modules enabled (to stop them all, "+
			"set enabled = false on each and reload first)", file))
	}
	t.Close()
	return c, doc, nil
}

// fileName is the config file as messages name it.
func (c *Config) fileName() string {
	if c.name != "" {
		return c.name
	}
	return c.File
}

func isNumber(t *tomldoc.Table, key string) bool {
	v, _ := t.Raw(key)
	switch v.(type) {
	case int64, float64:
		return true
	}
	return false
}

// absPath reads a path that is relative to the config file's directory
// when not absolute, and cleans it.
func absPath(t *tomldoc.Table, key, def, base string) string {
	if v, ok := t.Raw(key); ok {
		if _, isStr := v.(string); !isStr {
			return t.String(key, def) // says why
		}
	}
	p := t.String(key, def)
	switch {
	case p == "":
		t.Errorf(key, "must not be empty")
		return def
	case strings.ContainsRune(p, 0):
		t.Errorf(key, "must not contain a NUL byte")
		return def
	case filepath.IsAbs(p):
		return filepath.Clean(p)
	}
	return filepath.Join(base, p)
}

func parseLimits(t *tomldoc.Table) Limits {
	var l Limits
	if t.Has("mem_gb") {
		l.MemGB = t.Number("mem_gb", 0)
		if l.MemGB <= 0 && isNumber(t, "mem_gb") {
			t.Errorf("mem_gb", "must be more than 0, got %v (leave it out for no cap)", l.MemGB)
		}
	}
	if t.Has("pids") {
		l.Pids = t.Int("pids", 0)
		if l.Pids < 1 && isNumber(t, "pids") {
			t.Errorf("pids", "must be at least 1, got %d (leave it out for no cap)", l.Pids)
		}
	}
	t.Close()
	return l
}

func parseModule(t *tomldoc.Table, base string, c *Config) Module {
	m := Module{Enabled: true, field: t.Field(), pos: t.Pos("bundle")}
	if !t.Has("bundle") {
		t.Errorf("bundle", "is required: the module's bundle directory (relative to this file or absolute)")
	} else {
		m.Bundle = absPath(t, "bundle", "", base)
		v, _ := t.Raw("bundle")
		m.raw, _ = v.(string)
	}
	m.Enabled = t.Bool("enabled", true)

	g := t.Table("grants")
	m.Grants.Read = grantList(g, "read", c)
	m.Grants.Write = grantList(g, "write", c)
	m.Grants.Containers = containerGrants(g)
	g.Close()

	tools := t.Table("tools")
	for _, name := range tools.Keys() {
		if !toolNameRE().MatchString(name) {
			tools.Errorf(name, "%q is not a valid tool name: use letters, digits, '.', '_', '+' and '-'", name)
			continue
		}
		if v, _ := tools.Raw(name); v == "" {
			tools.Errorf(name, "the tool's path is empty")
			continue
		}
		p := tools.String(name, "")
		switch {
		case p == "": // not a string: String said why
		case !filepath.IsAbs(p) || filepath.Clean(p) != p:
			tools.Errorf(name, "%q must be a clean absolute path to the tool", p)
		default:
			if what, why := manifest.Forbidden(p); what != "" {
				tools.Errorf(name,
					"%q gives access to %s (%s), which is never granted: the module's jobs use the agent's container broker",
					p, what, why)
				continue
			}
			if m.Tools == nil {
				m.Tools = map[string]string{}
			}
			m.Tools[name] = p
		}
	}
	tools.Close()

	st := t.Table("settings")
	m.Settings = map[string]any{}
	for _, k := range st.Keys() {
		v, _ := st.Raw(k)
		m.Settings[k] = jsonValue(v)
	}
	st.Close()
	t.Close()
	return m
}

// grantList reads approved paths: each must be grantable at all and must
// not reach svcrun's own state, socket or other modules' data.
func grantList(t *tomldoc.Table, key string, c *Config) []string {
	list, ok := t.Strings(key)
	if !ok {
		return nil
	}
	var out []string
	for i, p := range list {
		if err := manifest.CheckGrantPath(p); err != nil {
			t.ElemErrorf(key, i, "%v", err)
			continue
		}
		if manifest.ContainsPath(p, c.DataDir) || manifest.ContainsPath(c.DataDir, p) {
			t.ElemErrorf(key, i, "%q overlaps svcrun's data dir %s (its state and every module's data): "+
				"a module's own data dir is always writable and needs no grant", p, c.DataDir)
			continue
		}
		if manifest.ContainsPath(p, c.Socket) {
			t.ElemErrorf(key, i, "%q gives access to svcrun's own socket %s, which is never granted", p, c.Socket)
			continue
		}
		out = append(out, p)
	}
	return out
}

// jsonValue turns a decoded TOML value into what encoding/json writes
// plainly: dates and times become their RFC 3339 text.
func jsonValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonValue(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonValue(e)
		}
		return out
	case time.Time:
		return x.Format(time.RFC3339Nano)
	case string, int64, float64, bool:
		return x
	case fmt.Stringer: // go-toml's local dates and times
		return x.String()
	}
	return fmt.Sprint(v)
}

// LoadedModule is one module of the node: its [[modules]] entry and the
// manifest of its bundle, which travel together from LoadModules on.
type LoadedModule struct {
	Config   Module
	Manifest *manifest.Module
}

// LoadModules reads every module's manifest and checks the rules that span
// files: each bundle a directory holding a readable module.toml, each
// manifest valid, module names unique, pool and capability names unique
// among enabled modules, and every grant approved only within what the
// manifest asked. The modules come back in config order, one per entry
// with a bundle (Parse refuses an entry without one).
func LoadModules(c *Config) ([]LoadedModule, error) {
	mods, errs := loadModules(c)
	if len(errs) > 0 {
		return nil, sortErrors(errs, c.fileName())
	}
	var out []LoadedModule
	for i, m := range mods {
		if m != nil {
			out = append(out, LoadedModule{Config: c.Modules[i], Manifest: m})
		}
	}
	return out, nil
}

// loadModules is LoadModules returning every mistake, unsorted, and the
// modules that loaded (nil for the others). It works on a Config that Parse
// refused too: modules without a bundle, or whose bundle an earlier module
// lists (Parse reported both), are skipped.
func loadModules(c *Config) ([]*manifest.Module, tomldoc.ErrorList) {
	var errs tomldoc.ErrorList
	mods := make([]*manifest.Module, len(c.Modules))
	var enabled []*manifest.Module
	listed := map[string]bool{}
	for i, mc := range c.Modules {
		if mc.Bundle == "" || listed[mc.Bundle] {
			continue
		}
		listed[mc.Bundle] = true
		if why := bundleProblem(c, mc); why != "" {
			errs = append(errs, moduleError(c, mc, ".bundle", why))
			continue
		}
		m, err := manifest.Load(mc.Bundle)
		if err != nil {
			if l, ok := err.(tomldoc.ErrorList); ok {
				errs = append(errs, l...)
			} else {
				errs = append(errs, moduleError(c, mc, ".bundle", err.Error()))
			}
			continue
		}
		mods[i] = m
		errs = append(errs, checkGrants(c, mc, m)...)
		if mc.Enabled {
			enabled = append(enabled, m)
		}
	}
	// Module names are unique whether enabled or not: they name data dirs.
	seen := map[string]int{}
	for i, m := range mods {
		if m == nil {
			continue
		}
		if m.Name == ReservedModule {
			errs = append(errs, moduleError(c, c.Modules[i], ".bundle",
				fmt.Sprintf(
					"module name %q is reserved for svcrun's built-in container broker (service %s/containers): rename the module",
					m.Name, ReservedModule)))
			continue
		}
		if j, dup := seen[m.Name]; dup {
			errs = append(errs, moduleError(c, c.Modules[i], ".bundle",
				fmt.Sprintf("module %q is also the module of %s (%s); module names are unique on a node",
					m.Name, c.Modules[j].field, c.Modules[j].Bundle)))
			continue
		}
		seen[m.Name] = i
	}
	if err := manifest.CheckSet(enabled); err != nil {
		if l, ok := err.(tomldoc.ErrorList); ok {
			for _, e := range l {
				if !strings.HasPrefix(e.Reason, "module ") { // duplicate names are reported above
					errs = append(errs, e)
				}
			}
		}
	}
	return mods, errs
}

// moduleError is a mistake of module mc, at its bundle key in the config
// file.
func moduleError(c *Config, mc Module, key, reason string) *tomldoc.FieldError {
	return &tomldoc.FieldError{File: c.fileName(), Pos: mc.pos, Field: mc.field + key, Reason: reason}
}

// bundleProblem says why mc's bundle cannot be read as a bundle: it must be
// a directory holding a readable module.toml. "" when it can.
func bundleProblem(c *Config, mc Module) string {
	dir := mc.Bundle
	hint := "check the path"
	if mc.raw != "" && !filepath.IsAbs(mc.raw) {
		hint += fmt.Sprintf("; %q is relative to the config file's directory, %s", mc.raw, filepath.Dir(c.File))
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		return fmt.Sprintf("the bundle directory %s does not exist: %s", dir, hint)
	case err != nil:
		return fmt.Sprintf("cannot read the bundle directory %s: %v: check that it can be read by the user svcrun runs as",
			dir, unwrapPathErr(err))
	case !fi.IsDir():
		return fmt.Sprintf("%s is not a directory: bundle names the module's bundle directory, the one holding %s; %s",
			dir, manifest.FileName, hint)
	}
	file := filepath.Join(dir, manifest.FileName)
	f, err := os.Open(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf(
			"the bundle directory %s has no %s: bundle names the directory that holds the module's manifest, %s; %s",
			dir, manifest.FileName, manifest.FileName, hint)
	case err != nil:
		return fmt.Sprintf("cannot read the manifest %s: %v: check that it can be read by the user svcrun runs as",
			file, unwrapPathErr(err))
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && !fi.Mode().IsRegular() {
		return fmt.Sprintf("the manifest %s is not a regular file: a bundle holds its manifest, %s, at its root",
			file, manifest.FileName)
	}
	return ""
}

// sortErrors orders errs as messages are read: the config file's first,
// then each other file's, each in position order.
func sortErrors(errs tomldoc.ErrorList, config string) error {
	errs.Sort()
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].File == config && errs[j].File != config })
	return errs
}

// checkGrants accepts a grant only under a path the manifest asked for in
// the same mode: the owner may approve less than asked, never more.
func checkGrants(c *Config, mc Module, m *manifest.Module) tomldoc.ErrorList {
	var errs tomldoc.ErrorList
	check := func(key string, granted, asked []string) {
		for _, g := range granted {
			ok := false
			for _, a := range asked {
				if manifest.ContainsPath(a, g) {
					ok = true
					break
				}
			}
			if !ok {
				askedText := "nothing"
				if len(asked) > 0 {
					askedText = strings.Join(asked, ", ")
				}
				errs = append(errs, moduleError(c, mc, ".grants."+key,
					fmt.Sprintf("%q is not asked for by module %q, whose [sandbox].%s asks for %s: grant only what the manifest asks",
						g, m.Name, key, askedText)))
			}
		}
	}
	check("read", mc.Grants.Read, append(append([]string(nil), m.Sandbox.Read...), m.Sandbox.Write...))
	check("write", mc.Grants.Write, m.Sandbox.Write)
	return append(errs, checkContainerGrants(c, mc, m)...)
}

func unwrapPathErr(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// socketGID resolves socket_group: a group name of this host, or a gid.
func socketGID(t *tomldoc.Table, group string, host Host) int {
	if gid, err := strconv.Atoi(group); err == nil {
		if gid < 0 {
			t.Errorf("socket_group", "%q is not a group: use a group name or a gid of 0 or more", group)
			return -1
		}
		return gid
	}
	if !userRE().MatchString(group) {
		t.Errorf("socket_group", "%q is not a valid group name", group)
		return -1
	}
	if host.GroupID == nil {
		t.Errorf("socket_group", "group names cannot be looked up here: give the gid")
		return -1
	}
	gid, ok := host.GroupID(group)
	if !ok {
		t.Errorf("socket_group", "no group %q on this host: create it (groupadd --system %s) or change socket_group",
			group, group)
		return -1
	}
	return gid
}
