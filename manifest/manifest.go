// Package manifest loads and checks a module's module.toml: the module, its
// sandbox requests, its services and its probes (docs/decisions.md, Manifest).
//
// # Contract
//
// Load reads <bundle>/module.toml and returns a Module only when the whole
// manifest is valid: defaults applied, every name, exec path, platform,
// lifecycle and restart table checked, and every exec resolved on disk
// (symlinks followed and kept inside the bundle, a regular executable file).
// Otherwise it returns a tomldoc.ErrorList with every mistake found, each as
// "file:line:col: field: reason"; nothing is half-loaded.
//
// Rules that span modules (pool and capability names are node-wide) are
// checked by CheckSet over the enabled modules.
package manifest

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/oarbank/svcrun/internal/tomldoc"
)

// FileName is the manifest's name at the bundle root.
const FileName = "module.toml"

// ContainersPool is the pool name that belongs to the agent's container
// broker. A service that declares it loses it, with a warning.
const ContainersPool = "containers"

// Lifecycle says who starts and stops a service.
type Lifecycle string

const (
	OnDemand Lifecycle = "on_demand" // reference-counted by admitted leases
	Always   Lifecycle = "always"    // kept up while the module is enabled
	Manual   Lifecycle = "manual"    // never started or stopped, only fingerprinted
)

// Network is a module's network access.
type Network string

const (
	NetworkHost Network = "host"
	NetworkNone Network = "none" // its own empty network namespace
)

// Platforms are the platform names a manifest may use.
var platformNames = []string{"linux", "macos", "windows"}

// Defaults (docs/decisions.md, Manifest).
const (
	DefaultIdleTimeout    = 300 * time.Second
	DefaultStartTimeout   = 120 * time.Second
	DefaultBackoffInitial = 1 * time.Second
	DefaultBackoffMax     = 300 * time.Second
	DefaultMaxFailures    = 5
	DefaultResetAfter     = 600 * time.Second
	DefaultProbePeriod    = 300 * time.Second
)

// Module is a valid manifest.
type Module struct {
	Name    string
	Version string
	Dir     string // the bundle root, absolute and with symlinks resolved
	File    string // the manifest's path, as given to messages
	Sandbox Sandbox

	Services []Service
	Probes   []Probe

	// Warnings are things accepted but changed, such as a declared
	// containers pool that was dropped.
	Warnings []string

	// decl remembers where each pool and capability was declared, for
	// CheckSet's messages.
	decl map[string]declSite
}

type declSite struct {
	pos   tomldoc.Pos
	field string
}

// Sandbox is what the module asks of its sandbox. The node owner approves a
// part of it in the node configuration.
type Sandbox struct {
	Read       []string
	Write      []string
	Network    Network
	Containers []string
}

// Restart is a service's failure policy.
type Restart struct {
	BackoffInitial time.Duration
	BackoffMax     time.Duration
	MaxFailures    int
	ResetAfter     time.Duration
}

// Service is one service of a module.
type Service struct {
	Module             string
	Name               string
	Exec               []string // exec[0] is relative to the bundle root
	Platforms          []string // nil means every platform
	Lifecycle          Lifecycle
	IdleTimeout        time.Duration
	StartTimeout       time.Duration
	Pools              []string
	Capabilities       []string
	ReservesHostMemory bool
	Yieldable          bool
	FreezeOK           bool
	Restart            Restart
}

// FullName is "<module>/<service>", the service's node-wide name.
func (s *Service) FullName() string { return s.Module + "/" + s.Name }

// RunsOn reports whether the service is loaded on platform p.
func (s *Service) RunsOn(p string) bool { return runsOn(s.Platforms, p) }

// Probe is one probe of a module; its name is the capability it establishes.
type Probe struct {
	Module    string
	Name      string
	Exec      []string
	Period    time.Duration
	Platforms []string
}

// RunsOn reports whether the probe is loaded on platform p.
func (p *Probe) RunsOn(platform string) bool { return runsOn(p.Platforms, platform) }

func runsOn(platforms []string, p string) bool {
	if platforms == nil {
		return true
	}
	for _, x := range platforms {
		if x == p {
			return true
		}
	}
	return false
}

// The name patterns are compiled on first use: their counted repetitions
// make big programs, and every command of the binary, a client's too, would
// compile them at start.
var (
	moduleNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`) })
	// Pools and capabilities are node-wide names that jobs spell in their
	// requirements; dots and underscores are allowed for names like
	// "java.17" or "gpu_slots".
	resourceNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`) })
)

// Load reads and checks the manifest of the bundle at dir.
func Load(dir string) (*Module, error) {
	file := filepath.Join(dir, FileName)
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, tomldoc.ErrorList{{File: file, Reason: fmt.Sprintf("cannot read the manifest: %v", unwrapPathErr(err))}}
	}
	return load(file, data, dir)
}

// Parse checks a manifest's content without looking at the bundle on disk:
// everything but the exec files. Module.Dir stays empty.
func Parse(file string, data []byte) (*Module, error) {
	doc, err := tomldoc.Parse(file, data)
	if err != nil {
		return nil, err
	}
	m, _ := parse(doc)
	if err := doc.Err(); err != nil {
		return nil, err
	}
	return m, nil
}

func load(file string, data []byte, dir string) (*Module, error) {
	doc, err := tomldoc.Parse(file, data)
	if err != nil {
		return nil, err
	}
	m, execs := parse(doc)
	root, rootErr := bundleRoot(dir)
	if rootErr != nil {
		doc.Errorf("bundle %s: %v", dir, rootErr)
	} else {
		m.Dir = root
		for _, e := range execs {
			if e.path == "" {
				continue // already reported
			}
			if err := checkExecFile(root, e.path); err != nil {
				e.table.ElemErrorf("exec", 0, "%v", err)
			}
		}
	}
	if err := doc.Err(); err != nil {
		return nil, err
	}
	return m, nil
}

// execRef is an exec[0] to check on disk, with the table to blame.
type execRef struct {
	table *tomldoc.Table
	path  string
}

func parse(doc *tomldoc.Doc) (*Module, []execRef) {
	root := doc.Root()
	m := &Module{File: doc.File, decl: map[string]declSite{}}

	mod := root.Table("module")
	if !root.Has("module") {
		doc.Errorf("[module] is missing: a manifest starts with [module] name = \"...\" and version = \"...\"")
	}
	m.Name = mod.String("name", "")
	switch {
	case !mod.Has("name"):
		if root.Has("module") {
			mod.Errorf("name", "is required")
		}
	case !moduleNameRE().MatchString(m.Name):
		mod.Errorf("name", "%q is not a valid module name: use 1-63 of a-z, 0-9 and '-', starting with a letter "+
			"or digit", m.Name)
	}
	m.Version = mod.String("version", "")
	switch {
	case !mod.Has("version"):
		if root.Has("module") {
			mod.Errorf("version", "is required")
		}
	case m.Version == "" || len(m.Version) > 64 || !printableNoSpace(m.Version):
		mod.Errorf("version", "%q is not a valid version: use 1-64 printable characters without spaces", m.Version)
	}
	mod.Close()

	m.Sandbox = parseSandbox(root.Table("sandbox"))

	var execs []execRef
	names := map[string]string{} // service or probe name -> field that declared it
	for _, t := range root.Tables("services") {
		s, e := parseService(m, t)
		execs = append(execs, e)
		if s.Name != "" {
			if prev, dup := names["service "+s.Name]; dup {
				t.Errorf("name", "service %q is already declared by %s", s.Name, prev)
			}
			names["service "+s.Name] = t.Field()
		}
		m.Services = append(m.Services, s)
	}
	for _, t := range root.Tables("probes") {
		p, e := parseProbe(m, t)
		execs = append(execs, e)
		if p.Name != "" {
			if prev, dup := names["probe "+p.Name]; dup {
				t.Errorf("name", "probe %q is already declared by %s", p.Name, prev)
			}
			names["probe "+p.Name] = t.Field()
			m.declare(t, "name", "capability", p.Name)
		}
		m.Probes = append(m.Probes, p)
	}
	if len(m.Services) == 0 && len(m.Probes) == 0 && !root.Has("services") && !root.Has("probes") {
		doc.Errorf("the module declares no [[services]] and no [[probes]]")
	}
	root.Close()
	return m, execs
}

// declare records a node-wide name (pool or capability) and rejects a second
// declaration of it in the same module.
func (m *Module) declare(t *tomldoc.Table, key, kind, name string) {
	k := kind + " " + name
	if _, dup := m.decl[k]; dup {
		t.Errorf(key, "%s %q is declared twice in module %q: %s names are node-wide, each belongs to one service "+
			"or probe", kind, name, m.Name, kind)
		return
	}
	m.decl[k] = declSite{t.Pos(key), t.Field() + "." + key}
}

func parseSandbox(t *tomldoc.Table) Sandbox {
	sb := Sandbox{Network: NetworkHost}
	sb.Read = grantPaths(t, "read")
	sb.Write = grantPaths(t, "write")
	switch n := Network(t.String("network", string(NetworkHost))); n {
	case NetworkHost, NetworkNone:
		sb.Network = n
	default:
		t.Errorf("network", "%q is not a network mode: use \"host\" or \"none\"", n)
	}
	if list, ok := t.Strings("containers"); ok {
		seen := map[string]bool{}
		for i, img := range list {
			switch {
			case img == "" || strings.ContainsFunc(img, unicode.IsSpace) || !utf8.ValidString(img):
				t.ElemErrorf("containers", i, "%q is not a container image reference", img)
			default:
				full, err := NormalizeImage(img)
				if err != nil {
					t.ElemErrorf("containers", i, "%v", err)
					continue
				}
				if seen[full] {
					t.ElemErrorf("containers", i, "image %q is listed twice (as %s)", img, full)
					continue
				}
				seen[full] = true
				sb.Containers = append(sb.Containers, img)
			}
		}
	}
	t.Close()
	return sb
}

// grantPaths reads a list of absolute paths the module asks for, rejecting
// the ones that are never granted.
func grantPaths(t *tomldoc.Table, key string) []string {
	list, ok := t.Strings(key)
	if !ok {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for i, p := range list {
		if err := CheckGrantPath(p); err != nil {
			t.ElemErrorf(key, i, "%v", err)
			continue
		}
		if seen[p] {
			t.ElemErrorf(key, i, "%q is listed twice", p)
			continue
		}
		seen[p] = true
		out = append(out, p)
	}
	return out
}

// CheckGrantPath checks one path of a read or write grant: absolute, clean,
// and giving no access to what a module may never reach.
func CheckGrantPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("empty path")
	case strings.ContainsRune(p, 0) || !utf8.ValidString(p):
		return fmt.Errorf("%q is not a valid path", p)
	case !isAbs(p):
		return fmt.Errorf("%q must be an absolute path", p)
	case cleanAbs(p) != p:
		return fmt.Errorf("%q is not clean: write %q", p, cleanAbs(p))
	}
	if bad, why := Forbidden(p); bad != "" {
		return fmt.Errorf("%q gives access to %s (%s), which is never granted: services cannot start containers "+
			"or VMs themselves; declare the images in [sandbox].containers and let jobs use the agent's broker", p, bad, why)
	}
	return nil
}

// isAbs accepts "/x" everywhere and "C:\x" style paths for Windows hosts.
func isAbs(p string) bool {
	if strings.HasPrefix(p, "/") {
		return true
	}
	return len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/') && unicode.IsLetter(rune(p[0]))
}

func cleanAbs(p string) string {
	if strings.HasPrefix(p, "/") {
		return path.Clean(p)
	}
	return p // windows paths are kept as written
}

// forbiddenPaths are reached by no grant, whatever a manifest asks: the
// container runtimes' sockets and /dev/kvm. A "*" matches one path element.
var forbiddenPaths = []struct{ pattern, why string }{
	{"/var/run/docker.sock", "the Docker socket"},
	{"/run/docker.sock", "the Docker socket"},
	{"/run/user/*/docker.sock", "a rootless Docker socket"},
	{"/var/run/containerd/containerd.sock", "the containerd socket"},
	{"/run/containerd/containerd.sock", "the containerd socket"},
	{"/var/run/podman/podman.sock", "the Podman socket"},
	{"/run/podman/podman.sock", "the Podman socket"},
	{"/run/user/*/podman/podman.sock", "a rootless Podman socket"},
	{"/var/run/crio/crio.sock", "the CRI-O socket"},
	{"/run/crio/crio.sock", "the CRI-O socket"},
	{"/run/buildkit/buildkitd.sock", "the BuildKit socket"},
	{"/dev/kvm", "the KVM device"},
}

// ForbiddenPaths returns the fixed paths no grant may reach (sockets of the
// container runtimes and /dev/kvm), as glob patterns where "*" matches one
// path element: for the sandbox's checks of what exists on a host.
func ForbiddenPaths() []string {
	out := make([]string, len(forbiddenPaths))
	for i, f := range forbiddenPaths {
		out[i] = f.pattern
	}
	return out
}

// forbiddenNames are socket names refused wherever they stand.
var forbiddenNames = map[string]string{
	"docker.sock":     "a Docker socket",
	"containerd.sock": "a containerd socket",
	"podman.sock":     "a Podman socket",
	"crio.sock":       "a CRI-O socket",
	"buildkitd.sock":  "a BuildKit socket",
}

// Forbidden reports whether a grant of the clean absolute path p would reach
// a forbidden path: p is the path, lies under it, or contains it. It returns
// the forbidden path and why, or "".
func Forbidden(p string) (what, why string) {
	pe := splitPath(p)
	for _, f := range forbiddenPaths {
		fe := splitPath(f.pattern)
		n := min(len(pe), len(fe))
		match := true
		for i := 0; i < n; i++ {
			if ok, _ := path.Match(fe[i], pe[i]); !ok {
				match = false
				break
			}
		}
		if match {
			return f.pattern, f.why
		}
	}
	if why, ok := forbiddenNames[path.Base(p)]; ok {
		return p, why
	}
	return "", ""
}

// ContainsPath reports whether grant p (clean, absolute) covers q: q is p or
// lies under it.
func ContainsPath(p, q string) bool {
	if p == "/" {
		return strings.HasPrefix(q, "/")
	}
	return q == p || strings.HasPrefix(q, p+"/")
}

func splitPath(p string) []string {
	if p == "/" {
		return nil
	}
	return strings.Split(strings.TrimPrefix(p, "/"), "/")
}

func parseService(m *Module, t *tomldoc.Table) (Service, execRef) {
	s := Service{Module: m.Name}
	s.Name = t.String("name", "")
	switch {
	case !t.Has("name"):
		t.Errorf("name", "is required")
	case !moduleNameRE().MatchString(s.Name):
		t.Errorf("name", "%q is not a valid service name: use 1-63 of a-z, 0-9 and '-', starting with a letter "+
			"or digit", s.Name)
		s.Name = ""
	}
	s.Exec, s.Platforms = parseExec(t), parsePlatforms(t)
	switch lc := Lifecycle(t.String("lifecycle", string(OnDemand))); lc {
	case OnDemand, Always, Manual:
		s.Lifecycle = lc
	default:
		t.Errorf("lifecycle", "%q is not a lifecycle: use \"on_demand\", \"always\" or \"manual\"", lc)
	}
	s.IdleTimeout = t.Seconds("idle_timeout_s", DefaultIdleTimeout, false)
	s.StartTimeout = t.Seconds("start_timeout_s", DefaultStartTimeout, false)
	for _, p := range resourceNames(t, "pools", "pool") {
		if p == ContainersPool {
			m.Warnings = append(m.Warnings,
				fmt.Sprintf("%s:%d:%d: %s.pools: pool %q belongs to the agent's container broker and was dropped: the "+
					"module's jobs reserve containers from the broker",
					m.File, t.Pos("pools").Line, t.Pos("pools").Col, t.Field(), ContainersPool))
			continue
		}
		m.declare(t, "pools", "pool", p)
		s.Pools = append(s.Pools, p)
	}
	for _, c := range resourceNames(t, "capabilities", "capability") {
		m.declare(t, "capabilities", "capability", c)
		s.Capabilities = append(s.Capabilities, c)
	}
	s.ReservesHostMemory = t.Bool("reserves_host_memory", false)
	s.Yieldable = t.Bool("yieldable", false)
	s.FreezeOK = t.Bool("freeze_ok", false)
	s.Restart = parseRestart(t)
	t.Close()
	ref := execRef{table: t}
	if len(s.Exec) > 0 {
		ref.path = s.Exec[0]
	}
	return s, ref
}

func parseRestart(svc *tomldoc.Table) Restart {
	t := svc.Table("restart")
	r := Restart{
		// 0: the first retry at once (as runsv restarts a crashed daemon),
		// each later one after backoff_max_s (engine.Backoff).
		BackoffInitial: t.Seconds("backoff_initial_s", DefaultBackoffInitial, true),
		BackoffMax:     t.Seconds("backoff_max_s", DefaultBackoffMax, false),
		ResetAfter:     t.Seconds("reset_after_s", DefaultResetAfter, false),
	}
	mf := t.Int("max_failures", DefaultMaxFailures)
	switch {
	case mf < 1:
		t.Errorf("max_failures", "must be at least 1, got %d", mf)
	case mf > 1000:
		t.Errorf("max_failures", "must be at most 1000, got %d", mf)
	default:
		r.MaxFailures = int(mf)
	}
	if r.BackoffInitial > r.BackoffMax {
		key := "backoff_initial_s"
		if !t.Has(key) {
			key = "backoff_max_s"
		}
		t.Errorf(key, "backoff_initial_s (%v) must not exceed backoff_max_s (%v)", r.BackoffInitial, r.BackoffMax)
	}
	t.Close()
	return r
}

func parseProbe(m *Module, t *tomldoc.Table) (Probe, execRef) {
	p := Probe{Module: m.Name}
	p.Name = t.String("name", "")
	switch {
	case !t.Has("name"):
		t.Errorf("name", "is required (the capability the probe establishes)")
	case !resourceNameRE().MatchString(p.Name):
		t.Errorf("name", "%q is not a valid capability name: use 1-63 of a-z, 0-9, '.', '_' and '-', starting "+
			"with a letter or digit", p.Name)
		p.Name = ""
	}
	p.Exec, p.Platforms = parseExec(t), parsePlatforms(t)
	p.Period = t.Seconds("period_s", DefaultProbePeriod, false)
	t.Close()
	ref := execRef{table: t}
	if len(p.Exec) > 0 {
		ref.path = p.Exec[0]
	}
	return p, ref
}

func resourceNames(t *tomldoc.Table, key, kind string) []string {
	list, ok := t.Strings(key)
	if !ok {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for i, n := range list {
		switch {
		case !resourceNameRE().MatchString(n):
			t.ElemErrorf(key, i,
				"%q is not a valid %s name: use 1-63 of a-z, 0-9, '.', '_' and '-', starting with a letter or digit", n, kind)
		case seen[n]:
			t.ElemErrorf(key, i, "%s %q is listed twice", kind, n)
		default:
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// parseExec checks the exec array's form; the file itself is checked by
// checkExecFile when the bundle is on disk.
func parseExec(t *tomldoc.Table) []string {
	if !t.Has("exec") {
		t.Errorf("exec", "is required: the executable relative to the bundle root, then its arguments, e.g. "+
			"[\"bin/service\"]")
		return nil
	}
	list, ok := t.Strings("exec")
	if !ok {
		return nil
	}
	if len(list) == 0 {
		t.Errorf("exec", "must not be empty: give the executable relative to the bundle root, e.g. [\"bin/service\"]")
		return nil
	}
	valid := true
	if err := checkExecPath(list[0]); err != nil {
		t.ElemErrorf("exec", 0, "%v", err)
		valid = false
	}
	for i, a := range list[1:] {
		if strings.ContainsRune(a, 0) {
			t.ElemErrorf("exec", i+1, "an argument must not contain a NUL byte")
			valid = false
		}
	}
	if !valid {
		return nil
	}
	return list
}

// checkExecPath applies the exec rules that need no disk: a clean path
// relative to the bundle root, slash-separated, that stays inside it.
func checkExecPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("the executable path is empty")
	case strings.ContainsRune(p, 0) || !utf8.ValidString(p):
		return fmt.Errorf("%q is not a valid path", p)
	case strings.ContainsRune(p, '\\'):
		return fmt.Errorf("%q: use '/' to separate path elements", p)
	case isAbs(p):
		return fmt.Errorf("%q must be relative to the bundle root (no PATH lookup, no absolute paths)", p)
	case path.Clean(p) != p:
		return fmt.Errorf("%q is not a clean path: write %q", p, path.Clean(p))
	case p == ".." || strings.HasPrefix(p, "../"):
		return fmt.Errorf("%q leaves the bundle", p)
	case p == ".":
		return fmt.Errorf("%q is the bundle root, not an executable", p)
	}
	return nil
}

func bundleRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	root, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", unwrapPathErr(err)
	}
	return root, nil
}

// checkExecFile resolves rel inside root and checks that it is a regular
// executable file that stays in the bundle.
func checkExecFile(root, rel string) error {
	joined := filepath.Join(root, filepath.FromSlash(rel))
	resolved, err := filepath.EvalSymlinks(joined)
	if err != nil {
		if os.IsNotExist(err) {
			return fmt.Errorf("%q does not exist in the bundle %s", rel, root)
		}
		return fmt.Errorf("%q: %v", rel, unwrapPathErr(err))
	}
	if r, err := filepath.Rel(root, resolved); err != nil || r == ".." ||
		strings.HasPrefix(r, ".."+string(filepath.Separator)) || filepath.IsAbs(r) {
		return fmt.Errorf("%q resolves to %s, outside the bundle", rel, resolved)
	}
	fi, err := os.Stat(resolved)
	if err != nil {
		return fmt.Errorf("%q: %v", rel, unwrapPathErr(err))
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%q is not a regular file (%s)", rel, fi.Mode().Type())
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%q is not executable (mode %v): chmod +x it", rel, fi.Mode().Perm())
	}
	return nil
}

func parsePlatforms(t *tomldoc.Table) []string {
	if !t.Has("platforms") {
		return nil
	}
	list, ok := t.Strings("platforms")
	if !ok {
		return []string{} // mistyped: runs nowhere, and the error is recorded
	}
	if len(list) == 0 {
		t.Errorf("platforms", "must not be empty: leave it out to run on every platform")
	}
	out := []string{}
	seen := map[string]bool{}
	for i, p := range list {
		switch {
		case !isPlatform(p):
			t.ElemErrorf("platforms", i, "%q is not a platform: use %s", p, quoteList(platformNames))
		case seen[p]:
			t.ElemErrorf("platforms", i, "platform %q is listed twice", p)
		default:
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

func isPlatform(p string) bool {
	for _, x := range platformNames {
		if p == x {
			return true
		}
	}
	return false
}

func quoteList(l []string) string {
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

func printableNoSpace(s string) bool {
	for _, r := range s {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return false
		}
	}
	return utf8.ValidString(s)
}

// unwrapPathErr drops the path from an *os.PathError, since messages
// already name the file.
func unwrapPathErr(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}
