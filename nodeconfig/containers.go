package nodeconfig

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/oarbank/svcrun/internal/tomldoc"
	"github.com/oarbank/svcrun/manifest"
)

// ReservedModule is the module name of svcrun's built-in container
// broker; no module of the configuration may take it.
const ReservedModule = "svcrun"

// PullPolicy says when the container broker pulls an image.
type PullPolicy string

const (
	PullMissing PullPolicy = "missing" // when the runtime does not have it
	PullNever   PullPolicy = "never"   // never: an offline node's images are loaded by hand
	PullAlways  PullPolicy = "always"  // at every create
)

// Defaults of [containers] (docs/node-config.md).
const (
	DefaultContainerSocket   = "/run/podman/podman.sock"
	DefaultContainerMemGB    = 1.0
	DefaultContainerCPUs     = 1.0
	DefaultContainerPids     = 1024
	DefaultContainerMaxPids  = 4096
	DefaultContainerPullWait = 300 * time.Second
	// maxContainersCeiling bounds max: beyond it, a 2-core node's runtime
	// would spend its time starting containers.
	maxContainersCeiling = 10000
)

// Networks a container may be given: "none" (a loopback of its own) and
// "bridge" (the runtime's NATed network), which an owner must list.
var containerNetworks = []string{"none", "bridge"}

// Containers is [containers]: the container broker, a built-in service
// whose pool "containers" lends containers of a runtime (podman) to leases.
// Memory, CPU and pids hold a per-container default, used when a request
// gives none, and a maximum no request may pass.
type Containers struct {
	Enabled     bool
	Socket      string // the runtime's API socket; svcrun never starts the runtime
	Max         int    // running containers at once: the pool's capacity
	MemGB       float64
	MaxMemGB    float64
	CPUs        float64
	MaxCPUs     float64
	Pids        int64
	MaxPids     int64
	Networks    []string
	Pull        PullPolicy
	PullTimeout time.Duration
}

// AllowsNetwork says whether the owner allows network n.
func (c Containers) AllowsNetwork(n string) bool { return slices.Contains(c.Networks, n) }

// parseContainers reads [containers]. Every default is set, enabled or
// not, so that validate shows what enabling it would give.
func parseContainers(t *tomldoc.Table, c *Config, host Host) Containers {
	cores := max(host.Cores, 1)
	x := Containers{Enabled: t.Bool("enabled", false)}
	x.Socket = absPath(t, "socket", DefaultContainerSocket, filepath.Dir(c.File))
	if len(x.Socket) > maxSocketPath {
		t.Errorf("socket", "%s is %d bytes long; a Unix socket path can have at most %d",
			x.Socket, len(x.Socket), maxSocketPath)
	}

	x.MemGB = positive(t, "mem_gb", DefaultContainerMemGB)
	x.MaxMemGB = positive(t, "max_mem_gb", max(x.MemGB, math.Min(4, c.MemoryBudgetGB)))
	if x.MemGB > x.MaxMemGB && t.Has("mem_gb") {
		t.Errorf("mem_gb", "%v is more than max_mem_gb (%v): the default of a container must be within the maximum",
			x.MemGB, x.MaxMemGB)
	}
	x.CPUs = positive(t, "cpus", DefaultContainerCPUs)
	x.MaxCPUs = positive(t, "max_cpus", max(x.CPUs, float64(cores)))
	if x.CPUs > x.MaxCPUs && t.Has("cpus") {
		t.Errorf("cpus", "%v is more than max_cpus (%v): the default of a container must be within the maximum",
			x.CPUs, x.MaxCPUs)
	}
	x.Pids = t.Int("pids", DefaultContainerPids)
	x.MaxPids = t.Int("max_pids", max(x.Pids, DefaultContainerMaxPids))
	for _, k := range []struct {
		key string
		v   int64
	}{{"pids", x.Pids}, {"max_pids", x.MaxPids}} {
		if k.v < 1 && isNumber(t, k.key) {
			t.Errorf(k.key, "must be at least 1, got %d", k.v)
		}
	}
	if x.Pids > x.MaxPids && t.Has("pids") {
		t.Errorf("pids", "%d is more than max_pids (%d): the default of a container must be within the maximum",
			x.Pids, x.MaxPids)
	}

	// Two per core, and no more than the budget holds at the default
	// memory: a container's cost is mostly the runtime's starting it.
	def := int64(2 * cores)
	if c.MemoryBudgetGB > 0 {
		def = min(def, max(1, int64(c.MemoryBudgetGB/x.MemGB)))
	}
	n := t.Int("max", def)
	if n < 1 || n > maxContainersCeiling {
		t.Errorf("max", "must be between 1 and %d, got %d", maxContainersCeiling, n)
	}
	x.Max = int(n)
	if over := float64(x.Max) * x.MemGB; x.Enabled && c.MemoryBudgetGB > 0 && over > c.MemoryBudgetGB {
		c.Warnings = append(c.Warnings, fmt.Sprintf("%s: containers.max %d x containers.mem_gb %v = %v GB is more than "+
			"memory_budget_gb (%v): containers at their default memory can fill the node; lower max or mem_gb",
			c.fileName(), x.Max, x.MemGB, over, c.MemoryBudgetGB))
	}

	x.Networks = []string{"none"}
	if list, ok := t.Strings("networks"); ok {
		x.Networks = nil
		for i, n := range list {
			switch {
			case !slices.Contains(containerNetworks, n):
				t.ElemErrorf("networks", i, "%q is not a container network: use \"none\" or \"bridge\"", n)
			case slices.Contains(x.Networks, n):
				t.ElemErrorf("networks", i, "network %q is listed twice", n)
			default:
				x.Networks = append(x.Networks, n)
			}
		}
	}

	switch p := PullPolicy(t.String("pull", string(PullMissing))); p {
	case PullMissing, PullNever, PullAlways:
		x.Pull = p
	default:
		t.Errorf("pull", "%q is not a pull policy: use \"missing\", \"never\" or \"always\"", p)
		x.Pull = PullMissing
	}
	x.PullTimeout = t.Seconds("pull_timeout_s", DefaultContainerPullWait, false)
	t.Close()
	return x
}

// positive reads a number that must be more than 0.
func positive(t *tomldoc.Table, key string, def float64) float64 {
	if !t.Has(key) {
		return def
	}
	v := t.Number(key, def)
	if !isNumber(t, key) {
		return def
	}
	if v <= 0 {
		t.Errorf(key, "must be more than 0, got %v", v)
		return def
	}
	return v
}

// containerGrants reads grants.containers: image references, each
// normalised (docker.io/library/x:latest) so that the broker compares
// full names only.
func containerGrants(t *tomldoc.Table) []string {
	list, ok := t.Strings("containers")
	if !ok {
		return nil
	}
	var out []string
	for i, ref := range list {
		full, err := manifest.NormalizeImage(ref)
		if err != nil {
			t.ElemErrorf("containers", i, "%v", err)
			continue
		}
		if slices.Contains(out, full) {
			t.ElemErrorf("containers", i, "image %q is listed twice (as %s)", ref, full)
			continue
		}
		out = append(out, full)
	}
	return out
}

// checkContainerGrants accepts an approved image only when the manifest
// asked for it: the same full name, and the same digest when the request
// pins one (a pinned request approved without its digest would let any
// content of that tag run). Pinning an unpinned request approves less,
// and is accepted.
func checkContainerGrants(c *Config, mc Module, m *manifest.Module) tomldoc.ErrorList {
	var errs tomldoc.ErrorList
	var asked []string
	for _, a := range m.Sandbox.Containers {
		if full, err := manifest.NormalizeImage(a); err == nil {
			asked = append(asked, full)
		}
	}
	for _, g := range mc.Grants.Containers {
		if slices.Contains(asked, g) || narrows(g, asked) {
			continue
		}
		askedText := "nothing"
		if len(asked) > 0 {
			askedText = strings.Join(asked, ", ")
		}
		why := "grant only what the manifest asks"
		for _, a := range asked {
			if an, digest, pinned := strings.Cut(a, "@"); pinned && repository(an) == repository(g) {
				why = fmt.Sprintf("the manifest pins %s to digest %s: approve it with that digest", an, digest)
			}
		}
		errs = append(errs, moduleError(c, mc, ".grants.containers",
			fmt.Sprintf("%q is not asked for by module %q, whose [sandbox].containers asks for %s: %s",
				g, m.Name, askedText, why)))
	}
	return errs
}

// narrows says whether the pinned grant g approves one content of an
// unpinned request (the same repository, and the same tag if g has one).
func narrows(g string, asked []string) bool {
	name, _, pinned := strings.Cut(g, "@")
	if !pinned {
		return false
	}
	return slices.ContainsFunc(asked, func(a string) bool {
		return !strings.Contains(a, "@") && (a == name || repository(a) == name)
	})
}

// repository is a full reference without its tag and digest.
func repository(full string) string {
	name, _, _ := strings.Cut(full, "@")
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		name = name[:i]
	}
	return name
}
