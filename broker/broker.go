// Package broker is svcrun's container broker: the built-in service
// svcrun/containers, whose pool "containers" lends containers of a
// runtime (podman, through its API socket) to leases, one running
// container per token (docs/containers.md).
//
// # One more service
//
// The engine knows the broker as any service: module Module, service
// Service, lifecycle always, pool manifest.ContainersPool. Its seven ops
// are answered in-process instead of spawned: Wrap puts the broker in
// front of the agent's executor, and a RunOp for Target is answered by a
// goroutine that posts its OpDone as an executor does. So leases, pools,
// readiness, health and reaping apply unchanged, and the simulator can
// model the broker as a service. Its fingerprint offers Max tokens while
// the runtime answers Ping, and says unhealthy with the reason otherwise,
// which withdraws the pool; running containers are left alone. Its
// list_owned lists the containers carrying its service label, and
// destroy removes one: the engine's reap rules (all three labels, this
// node, this service, attempt not live, created before the snapshot)
// choose what is destroyed.
//
// # Containers belong to a lease
//
// The API's container calls (Create, List, Wait, Logs, Stop, Remove)
// name their lease, which the caller has already checked is admitted.
// Every container is created with the three labels of owned objects plus
// LabelLease, LabelModule and LabelJob, in the create call itself; a
// lease's containers are found by LabelLease, at the runtime, so that
// the containers of a lease held across an svcrun restart are adopted
// without any state of the broker's own. LeaseEnded stops and removes
// them at once.
package broker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/errdefs"
	"github.com/oarbank/svcrun/internal/podman"
	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/nodeconfig"
	"github.com/oarbank/svcrun/protocol"
)

// The broker's names: nodeconfig refuses a module of this name.
const (
	Module   = nodeconfig.ReservedModule
	Service  = "containers"
	FullName = Module + "/" + Service
)

// Target is the broker's service as the engine names it.
var Target = engine.Target{Module: Module, Name: Service}

// Labels of a broker's container besides the three of every owned object.
const (
	LabelLease  = "oarbank.lease"
	LabelModule = "oarbank.module"
	LabelJob    = "oarbank.job"
	// reservedPrefix starts the labels only svcrun sets.
	reservedPrefix = "oarbank."
)

// stopGrace is how long a container has from SIGTERM to SIGKILL when the
// broker stops it (a lease ended, stop, destroy).
const stopGrace = 10 * time.Second

// Runtime is what the broker needs of the container runtime: the podman
// client, or a fake in tests.
type Runtime interface {
	Ping(ctx context.Context) (version string, err error)
	Create(ctx context.Context, s podman.Spec) (id string, err error)
	Start(ctx context.Context, id string) error
	Inspect(ctx context.Context, id string) (podman.Container, error)
	List(ctx context.Context, labels map[string]string) ([]podman.Container, error)
	Wait(ctx context.Context, id string) (exitCode int, err error)
	Logs(ctx context.Context, id string, follow bool, stdout, stderr io.Writer) error
	Stop(ctx context.Context, id string, timeout time.Duration) error
	Remove(ctx context.Context, id string) error
	Pull(ctx context.Context, ref string) error
}

// Config configures a Broker.
type Config struct {
	Node       string
	Containers nodeconfig.Containers
	// Approved maps each image the enabled modules' grants approve (full
	// references) to the module that approved it.
	Approved map[string]string
	Runtime  Runtime
	// Post delivers an op's OpDone to the driver's scheduler.
	Post func(engine.Event)
	Log  *slog.Logger
}

// Approvals collects the images the enabled modules were approved for.
func Approvals(mods []nodeconfig.LoadedModule) map[string]string {
	out := map[string]string{}
	for _, m := range mods {
		if !m.Config.Enabled {
			continue
		}
		for _, img := range m.Config.Grants.Containers {
			if _, ok := out[img]; !ok {
				out[img] = m.Manifest.Name
			}
		}
	}
	return out
}

// Spec is the broker's module as the engine loads it.
func Spec(enabled bool) engine.ModuleSpec {
	return engine.ModuleSpec{Enabled: enabled, Module: &manifest.Module{
		Name: Module, Version: "builtin",
		Sandbox: manifest.Sandbox{Network: manifest.NetworkHost},
		Services: []manifest.Service{{
			Module: Module, Name: Service, Exec: []string{"(built into svcrun)"},
			Lifecycle:    manifest.Always,
			IdleTimeout:  manifest.DefaultIdleTimeout,
			StartTimeout: manifest.DefaultStartTimeout,
			Pools:        []string{manifest.ContainersPool},
			Restart: manifest.Restart{BackoffInitial: manifest.DefaultBackoffInitial, BackoffMax: manifest.DefaultBackoffMax,
				MaxFailures: manifest.DefaultMaxFailures, ResetAfter: manifest.DefaultResetAfter},
		}},
	}}
}

// Lease is what the broker needs of an admitted lease.
type Lease struct {
	ID      engine.LeaseID
	Attempt string
	Job     string
	// Tokens are the containers tokens it holds: its running containers
	// at most.
	Tokens int64
}

// Broker answers the broker service's ops and the API's container calls.
type Broker struct {
	cfg Config
	log *slog.Logger

	// leases serialises the creates of each lease, so that two at once
	// cannot both pass the token check.
	mu     sync.Mutex
	leases map[engine.LeaseID]*sync.Mutex
	// ended are leases ended while a create of theirs ran: the create
	// removes what it made.
	ended map[engine.LeaseID]bool

	metrics Metrics
}

// Metrics are the broker's counters for svcrun's /metrics.
type Metrics struct {
	mu        sync.Mutex
	healthy   bool
	reason    string
	created   uint64
	oomKilled uint64
	pulls     uint64
	pullTime  time.Duration
}

// New makes a broker.
func New(cfg Config) *Broker {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Broker{cfg: cfg, log: cfg.Log, leases: map[engine.LeaseID]*sync.Mutex{}, ended: map[engine.LeaseID]bool{}}
}

// SetApproved replaces the approved images (a configuration reload).
func (b *Broker) SetApproved(approved map[string]string) {
	b.mu.Lock()
	b.cfg.Approved = approved
	b.mu.Unlock()
}

func (b *Broker) approved() map[string]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cfg.Approved
}

// Socket is the runtime's API socket.
func (b *Broker) Socket() string { return b.cfg.Containers.Socket }

// Run answers one op of the broker's service from a goroutine: Run must
// not block the driver's loop.
func (b *Broker) Run(op engine.RunOp) {
	go func() {
		ctx := context.Background()
		if op.Timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, op.Timeout)
			defer cancel()
		}
		b.cfg.Post(&engine.OpDone{ID: op.ID, Outcome: b.answer(ctx, op)})
	}()
}

func failed(err error) engine.Outcome {
	return engine.Outcome{Failure: engine.FailOp, Message: err.Error()}
}

// answer runs op against the runtime. The broker runs as long as svcrun
// does: a runtime that does not answer makes it unhealthy (no tokens),
// never stopped, so that its running containers are left alone.
func (b *Broker) answer(ctx context.Context, op engine.RunOp) engine.Outcome {
	res := protocol.Result{Op: op.Op}
	running := true
	switch op.Op {
	case protocol.OpFingerprint:
		fp := &protocol.Fingerprint{Running: &running, Healthy: true,
			Pools: map[string]int64{manifest.ContainersPool: int64(b.cfg.Containers.Max)}}
		version, err := b.cfg.Runtime.Ping(ctx)
		if err != nil {
			fp.Healthy, fp.Pools, fp.Message = false, nil, err.Error()
		} else {
			fp.Attrs = map[string]any{"runtime_version": version, "socket": b.cfg.Containers.Socket}
		}
		b.metrics.setHealth(err)
		res.Fingerprint = fp
	case protocol.OpStart:
		if _, err := b.cfg.Runtime.Ping(ctx); err != nil {
			b.metrics.setHealth(err)
			return failed(err)
		}
		res.OpResult = &protocol.OpResult{OK: true, Message: "the broker answers in svcrun"}
	case protocol.OpStop:
		res.OpResult = &protocol.OpResult{OK: true, Message: "containers are left to their leases"}
	case protocol.OpStatus:
		res.Status = &protocol.Status{Running: true, Ready: true}
	case protocol.OpReady:
		_, err := b.cfg.Runtime.Ping(ctx)
		res.Status = &protocol.Status{Running: true, Ready: err == nil}
		if err != nil {
			res.Status.Message = err.Error()
		}
	case protocol.OpListOwned:
		list, err := b.cfg.Runtime.List(ctx, map[string]string{protocol.LabelService: FullName})
		if err != nil {
			return failed(fmt.Errorf("list the broker's containers: %w", err))
		}
		res.OwnedList = &protocol.OwnedList{Objects: []protocol.Object{}}
		for _, c := range list {
			if protocol.ValidObjectID(c.ID) != nil {
				res.Warnings = append(res.Warnings, fmt.Sprintf("/objects: container %q skipped: not a valid object id", c.ID))
				continue
			}
			res.OwnedList.Objects = append(res.OwnedList.Objects, protocol.Object{
				ID: c.ID, Kind: protocol.KindContainer, Labels: c.Labels, CreatedAt: c.Created, Busy: c.State == "running",
			})
		}
	case protocol.OpDestroy:
		if len(op.Args) == 0 {
			return engine.Outcome{Failure: engine.FailProtocol, Message: "destroy without an object id"}
		}
		changed, err := b.destroy(ctx, op.Args[0])
		if err != nil {
			return failed(err)
		}
		res.OpResult = &protocol.OpResult{OK: true, Changed: changed}
	default:
		return engine.Outcome{Failure: engine.FailProtocol, Message: fmt.Sprintf("the broker has no op %q", op.Op)}
	}
	return engine.Outcome{Result: res}
}

// destroy removes a container the reap chose, if it is still the
// broker's on this node: an id is never trusted alone.
func (b *Broker) destroy(ctx context.Context, id string) (bool, error) {
	c, err := b.cfg.Runtime.Inspect(ctx, id)
	if errors.Is(err, podman.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("destroy container %s: %w", id, err)
	}
	if c.Labels[protocol.LabelService] != FullName || c.Labels[protocol.LabelNode] != b.cfg.Node {
		return false, fmt.Errorf("destroy container %s: not the broker's on node %s (labels %s=%q, %s=%q): left alone",
			id, b.cfg.Node, protocol.LabelService, c.Labels[protocol.LabelService],
			protocol.LabelNode, c.Labels[protocol.LabelNode])
	}
	if err := b.remove(ctx, c.ID); err != nil {
		return false, fmt.Errorf("destroy container %s: %w", id, err)
	}
	return true, nil
}

// remove stops a container and removes it; an absent one is no error.
func (b *Broker) remove(ctx context.Context, id string) error {
	if err := b.cfg.Runtime.Stop(ctx, id, stopGrace); err != nil && !errors.Is(err, podman.ErrNotFound) {
		return err
	}
	if err := b.cfg.Runtime.Remove(ctx, id); err != nil && !errors.Is(err, podman.ErrNotFound) {
		return err
	}
	return nil
}

// CreateRequest is a container a lease asks for. Zero limits take the
// node's defaults.
type CreateRequest struct {
	Image   string
	Command []string
	Env     map[string]string
	WorkDir string
	User    string
	Network string
	MemGB   float64
	CPUs    float64
	Pids    int64
	Labels  map[string]string
}

// InvalidError is a request field the broker refuses (a 400 naming it).
type InvalidError struct{ Field, Reason string }

func (e *InvalidError) Error() string { return e.Field + ": " + e.Reason }

// Is makes an InvalidError a bad request.
func (e *InvalidError) Is(target error) bool { return target == errdefs.ErrInvalid }

func invalid(field, format string, args ...any) error {
	return &InvalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Container is one container of a lease, as the API shows it.
type Container struct {
	ID        string
	Name      string
	Image     string
	State     string
	ExitCode  int
	OOMKilled bool
	Created   time.Time
	Address   string // its IP address; "" on network none
	Labels    map[string]string
}

func containerOf(c podman.Container) Container {
	return Container{ID: c.ID, Name: c.Name, Image: c.Image, State: c.State, ExitCode: c.ExitCode, OOMKilled: c.OOMKilled,
		Created: c.Created, Address: c.IPAddress, Labels: c.Labels}
}

// runs says a container holds its lease's token: it is not over.
// running counts the containers of list that run.
func running(list []podman.Container) int {
	n := 0
	for _, c := range list {
		if runs(c) {
			n++
		}
	}
	return n
}

func runs(c podman.Container) bool {
	switch c.State {
	case "exited", "stopped", "dead", "removing":
		return false
	}
	return true
}

// Create checks req against the node's rules, creates the container with
// its labels, checks that the runtime applied the limits asked, and
// starts it.
func (b *Broker) Create(ctx context.Context, l Lease, req CreateRequest) (Container, error) {
	spec, module, err := b.spec(l, req)
	if err != nil {
		return Container{}, err
	}
	lk := b.leaseLock(l.ID)
	lk.Lock()
	defer lk.Unlock()
	mine, err := b.list(ctx, l)
	if err != nil {
		return Container{}, err
	}
	if n := running(mine); n >= int(l.Tokens) {
		return Container{}, &errdefs.ConflictError{
			Reason: fmt.Sprintf(
				"lease %s holds %d %s token(s) and has %d container(s) running: stop or remove one, or acquire the lease with "+
					"more (pools.%s)",
				l.ID, l.Tokens, manifest.ContainersPool, n, manifest.ContainersPool)}
	}
	id, err := b.create(ctx, spec)
	if err != nil {
		return Container{}, err
	}
	// From here on the container exists: any failure removes it.
	fail := func(err error) (Container, error) {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopGrace+5*time.Second)
		defer cancel()
		if rerr := b.remove(rctx, id); rerr != nil {
			b.log.Error("cannot remove a container that failed its create: the reap removes it once its lease ends",
				"container", id, "error", rerr)
		}
		return Container{}, err
	}
	got, err := b.cfg.Runtime.Inspect(ctx, id)
	if err != nil {
		return fail(b.unavailable("inspect container "+id, err))
	}
	if err := limitsApplied(spec, got.Limits); err != nil {
		return fail(fmt.Errorf("container %s of %s removed: %w", id, spec.Image, err))
	}
	if b.leaseEnded(l.ID) {
		return fail(fmt.Errorf("lease %s: %w", l.ID, errdefs.ErrUnknownLease))
	}
	if err := b.cfg.Runtime.Start(ctx, id); err != nil {
		return fail(b.unavailable("start container "+id, err))
	}
	if got, err = b.cfg.Runtime.Inspect(ctx, id); err != nil {
		return fail(b.unavailable("inspect container "+id, err))
	}
	b.metrics.mu.Lock()
	b.metrics.created++
	b.metrics.mu.Unlock()
	b.log.Info("container started", "container", id, "image", spec.Image, "lease", l.ID, "module", module)
	return containerOf(got), nil
}

// unavailable wraps a runtime's failure: a 503 when the runtime cannot be
// reached, the runtime's own answer otherwise.
func (b *Broker) unavailable(what string, err error) error {
	var ae *podman.APIError
	if errors.As(err, &ae) || errors.Is(err, podman.ErrNotFound) || errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", what, err)
	}
	return fmt.Errorf("%s: %w: %w", what, errdefs.ErrUnavailable, err)
}

// limitsApplied compares what the runtime applied with what was asked:
// a runtime that ignores a field it does not know must not leave a
// container without its limits.
func limitsApplied(s podman.Spec, got podman.Limits) error {
	var bad []string
	if got.MemoryBytes != s.MemoryBytes {
		bad = append(bad, fmt.Sprintf("memory %d bytes asked, %d applied", s.MemoryBytes, got.MemoryBytes))
	}
	if s.MemoryBytes > 0 && got.MemorySwapBytes != s.MemoryBytes {
		bad = append(bad, fmt.Sprintf("memory+swap %d bytes asked (no swap), %d applied", s.MemoryBytes, got.MemorySwapBytes))
	}
	if math.Abs(got.CPUs-s.CPUs) > 0.001 {
		bad = append(bad, fmt.Sprintf("cpus %v asked, %v applied", s.CPUs, got.CPUs))
	}
	if got.Pids != s.Pids {
		bad = append(bad, fmt.Sprintf("pids %d asked, %d applied", s.Pids, got.Pids))
	}
	if len(bad) > 0 {
		return fmt.Errorf("the runtime did not apply the limits asked: %s", strings.Join(bad, "; "))
	}
	return nil
}

// spec checks a request and makes the runtime's spec of it, with the
// module that approved its image.
func (b *Broker) spec(l Lease, req CreateRequest) (podman.Spec, string, error) {
	x := b.cfg.Containers
	if req.Image == "" {
		return podman.Spec{}, "", invalid("image", "is required")
	}
	image, err := manifest.NormalizeImage(req.Image)
	if err != nil {
		return podman.Spec{}, "", invalid("image", "%v", err)
	}
	approved := b.approved()
	module, ok := approved[image]
	if !ok {
		list := slices.Sorted(maps.Keys(approved))
		what := "none: approve images in [[modules]].grants.containers of a module whose [sandbox].containers asks for them"
		if len(list) > 0 {
			what = strings.Join(list, ", ")
		}
		return podman.Spec{}, "", &errdefs.ForbiddenError{
			Reason: fmt.Sprintf("image %s is approved for no enabled module; approved: %s", image, what)}
	}
	network := req.Network
	if network == "" {
		network = x.Networks[0]
	}
	if !x.AllowsNetwork(network) {
		return podman.Spec{}, "", invalid("network", "%q is not allowed on this node: allowed %s ([containers].networks)",
			network, strings.Join(x.Networks, ", "))
	}
	mem, cpus, pids := req.MemGB, req.CPUs, req.Pids
	switch {
	case mem < 0:
		return podman.Spec{}, "", invalid("mem_gb", "must not be negative, got %v", mem)
	case mem > x.MaxMemGB:
		return podman.Spec{}, "", invalid("mem_gb", "%v is more than this node's maximum %v ([containers].max_mem_gb)",
			mem, x.MaxMemGB)
	case cpus < 0:
		return podman.Spec{}, "", invalid("cpus", "must not be negative, got %v", cpus)
	case cpus > x.MaxCPUs:
		return podman.Spec{}, "", invalid("cpus", "%v is more than this node's maximum %v ([containers].max_cpus)", cpus,
			x.MaxCPUs)
	case pids < 0:
		return podman.Spec{}, "", invalid("pids", "must not be negative, got %d", pids)
	case pids > x.MaxPids:
		return podman.Spec{}, "", invalid("pids", "%d is more than this node's maximum %d ([containers].max_pids)", pids,
			x.MaxPids)
	}
	if mem == 0 {
		mem = x.MemGB
	}
	if cpus == 0 {
		cpus = x.CPUs
	}
	if pids == 0 {
		pids = x.Pids
	}
	labels := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(req.Labels)) {
		if strings.HasPrefix(k, reservedPrefix) {
			return podman.Spec{}, "", invalid("labels", "%q: labels starting with %q are svcrun's", k, reservedPrefix)
		}
		labels[k] = req.Labels[k]
	}
	maps.Copy(labels, map[string]string{
		protocol.LabelAttemptID: l.Attempt,
		protocol.LabelNode:      b.cfg.Node,
		protocol.LabelService:   FullName,
		LabelLease:              string(l.ID),
		LabelModule:             module,
		LabelJob:                l.Job,
	})
	return podman.Spec{
		Image: image, Command: req.Command, Env: req.Env, WorkDir: req.WorkDir, User: req.User,
		Labels: labels, Network: network, MemoryBytes: int64(math.Round(mem * (1 << 30))), CPUs: cpus, Pids: pids,
	}, module, nil
}

// create creates the container, with its image brought as
// [containers].pull says: "always" pulls first; "missing" and "never"
// create at once, and only a create the runtime refuses for want of the
// image pulls (then creates again) or fails saying so. An image already
// there costs no call of its own, and no registry is asked.
func (b *Broker) create(ctx context.Context, spec podman.Spec) (string, error) {
	policy := b.cfg.Containers.Pull
	if policy == nodeconfig.PullAlways {
		if err := b.pull(ctx, spec.Image); err != nil {
			return "", err
		}
	}
	id, err := b.cfg.Runtime.Create(ctx, spec)
	if errors.Is(err, podman.ErrNotFound) && policy != nodeconfig.PullAlways {
		if policy == nodeconfig.PullNever {
			return "", fmt.Errorf(
				"image %s is not on this node and [containers].pull is \"never\": load it first (podman load or podman pull): %w",
				spec.Image, errdefs.ErrNotFound)
		}
		if err := b.pull(ctx, spec.Image); err != nil {
			return "", err
		}
		id, err = b.cfg.Runtime.Create(ctx, spec)
	}
	if err != nil {
		return "", b.unavailable("create a container of "+spec.Image, err)
	}
	return id, nil
}

// pull pulls the image within [containers].pull_timeout_s.
func (b *Broker) pull(ctx context.Context, image string) error {
	x := b.cfg.Containers
	pctx, cancel := context.WithTimeout(ctx, x.PullTimeout)
	defer cancel()
	start := time.Now()
	err := b.cfg.Runtime.Pull(pctx, image)
	b.metrics.mu.Lock()
	b.metrics.pulls++
	b.metrics.pullTime += time.Since(start)
	b.metrics.mu.Unlock()
	if err != nil {
		return b.unavailable(fmt.Sprintf("pull %s (within pull_timeout_s %v)", image, x.PullTimeout.Seconds()), err)
	}
	return nil
}

func (b *Broker) leaseLock(id engine.LeaseID) *sync.Mutex {
	b.mu.Lock()
	defer b.mu.Unlock()
	lk, ok := b.leases[id]
	if !ok {
		lk = &sync.Mutex{}
		b.leases[id] = lk
	}
	return lk
}

func (b *Broker) leaseEnded(id engine.LeaseID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ended[id]
}

// mine returns a container of lease l, or a not-found error: the
// containers of other leases do not exist for it.
func (b *Broker) mine(ctx context.Context, l Lease, id string) (podman.Container, error) {
	c, err := b.cfg.Runtime.Inspect(ctx, id)
	if err == nil && (c.Labels[LabelLease] != string(l.ID) || c.Labels[protocol.LabelService] != FullName) {
		err = podman.ErrNotFound
	}
	if errors.Is(err, podman.ErrNotFound) {
		return podman.Container{}, &errdefs.NotFoundError{Kind: "container", Name: id, Known: b.names(ctx, l)}
	}
	if err != nil {
		return podman.Container{}, b.unavailable("inspect container "+id, err)
	}
	return c, nil
}

func (b *Broker) names(ctx context.Context, l Lease) []string {
	list, _ := b.list(ctx, l)
	var out []string
	for _, c := range list {
		out = append(out, c.ID)
	}
	return out
}

func (b *Broker) list(ctx context.Context, l Lease) ([]podman.Container, error) {
	list, err := b.cfg.Runtime.List(ctx, map[string]string{LabelLease: string(l.ID), protocol.LabelService: FullName})
	if err != nil {
		return nil, b.unavailable("list the containers of lease "+string(l.ID), err)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Created.Before(list[j].Created) })
	return list, nil
}

// List returns the lease's containers, oldest first.
func (b *Broker) List(ctx context.Context, l Lease) ([]Container, error) {
	list, err := b.list(ctx, l)
	if err != nil {
		return nil, err
	}
	out := make([]Container, 0, len(list))
	for _, c := range list {
		out = append(out, containerOf(c))
	}
	return out, nil
}

// Inspect returns one container of the lease.
func (b *Broker) Inspect(ctx context.Context, l Lease, id string) (Container, error) {
	c, err := b.mine(ctx, l, id)
	return containerOf(c), err
}

// Wait waits until the container exits (or ctx ends) and returns it as
// it ended.
func (b *Broker) Wait(ctx context.Context, l Lease, id string) (Container, error) {
	c, err := b.mine(ctx, l, id)
	if err != nil {
		return Container{}, err
	}
	// One that ended already is answered from the look that found it
	// the lease's: no wait, no second look.
	if runs(c) {
		if _, err := b.cfg.Runtime.Wait(ctx, c.ID); err != nil {
			return Container{}, b.unavailable("wait for container "+id, err)
		}
		if c, err = b.cfg.Runtime.Inspect(ctx, c.ID); err != nil {
			return Container{}, b.unavailable("inspect container "+id, err)
		}
	}
	if c.OOMKilled {
		b.metrics.mu.Lock()
		b.metrics.oomKilled++
		b.metrics.mu.Unlock()
	}
	return containerOf(c), nil
}

// Logs copies the container's output, following it until it exits when
// follow is set.
func (b *Broker) Logs(ctx context.Context, l Lease, id string, follow bool, stdout, stderr io.Writer) error {
	c, err := b.mine(ctx, l, id)
	if err != nil {
		return err
	}
	if err := b.cfg.Runtime.Logs(ctx, c.ID, follow, stdout, stderr); err != nil {
		return b.unavailable("logs of container "+id, err)
	}
	return nil
}

// Stop stops a container of the lease (its token is free again); one
// stopped already is no error.
func (b *Broker) Stop(ctx context.Context, l Lease, id string) error {
	c, err := b.mine(ctx, l, id)
	if err != nil {
		return err
	}
	if err := b.cfg.Runtime.Stop(ctx, c.ID, stopGrace); err != nil && !errors.Is(err, podman.ErrNotFound) {
		return b.unavailable("stop container "+id, err)
	}
	return nil
}

// Remove stops and removes a container of the lease; one already gone
// is no error.
func (b *Broker) Remove(ctx context.Context, l Lease, id string) error {
	c, err := b.mine(ctx, l, id)
	if errors.Is(err, errdefs.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if !runs(c) {
		// Nothing to stop: one call, not two.
		err = b.cfg.Runtime.Remove(ctx, c.ID)
	} else {
		err = b.remove(ctx, c.ID)
	}
	if err != nil && !errors.Is(err, podman.ErrNotFound) {
		return b.unavailable("remove container "+id, err)
	}
	return nil
}

// LeaseEnded stops and removes the lease's containers, from a goroutine
// of its own: the driver's loop calls it. A create of the lease still
// running removes what it makes.
func (b *Broker) LeaseEnded(id engine.LeaseID) {
	b.mu.Lock()
	b.ended[id] = true
	b.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		lk := b.leaseLock(id)
		lk.Lock()
		b.cleanLease(ctx, id)
		lk.Unlock()
		b.mu.Lock()
		delete(b.leases, id)
		delete(b.ended, id)
		b.mu.Unlock()
	}()
}

// cleanLease removes every container of lease id, at once and in
// parallel: a released lease's tokens are free for the next one.
func (b *Broker) cleanLease(ctx context.Context, id engine.LeaseID) {
	list, err := b.cfg.Runtime.List(ctx,
		map[string]string{LabelLease: string(id), protocol.LabelService: FullName, protocol.LabelNode: b.cfg.Node})
	if err != nil {
		b.log.Error("cannot list the containers of an ended lease: the reap removes them", "lease", id, "error", err)
		return
	}
	var wg sync.WaitGroup
	for _, c := range list {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := b.remove(ctx, c.ID); err != nil {
				b.log.Error("cannot remove a container of an ended lease: the reap removes it", "lease", id, "container", c.ID,
					"error", err)
				return
			}
			b.log.Info("container of an ended lease removed", "lease", id, "container", c.ID)
		}()
	}
	wg.Wait()
}

// Stats is the broker's state for status and metrics.
type Stats struct {
	Healthy   bool
	Reason    string
	Capacity  int
	Created   uint64
	OOMKilled uint64
	Pulls     uint64
	PullTime  time.Duration
}

// Stats returns the broker's counters and its health as its last
// fingerprint found it.
func (b *Broker) Stats() Stats {
	m := &b.metrics
	m.mu.Lock()
	defer m.mu.Unlock()
	return Stats{Healthy: m.healthy, Reason: m.reason, Capacity: b.cfg.Containers.Max, Created: m.created,
		OOMKilled: m.oomKilled, Pulls: m.pulls, PullTime: m.pullTime}
}

// Running counts the broker's running containers on this node.
func (b *Broker) Running(ctx context.Context) (int, error) {
	list, err := b.cfg.Runtime.List(ctx,
		map[string]string{protocol.LabelService: FullName, protocol.LabelNode: b.cfg.Node})
	if err != nil {
		return 0, err
	}
	return running(list), nil
}

func (m *Metrics) setHealth(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.healthy, m.reason = err == nil, ""
	if err != nil {
		m.reason = err.Error()
	}
}

// The podman client is the runtime svcrun uses.
var _ Runtime = (*podman.Client)(nil)
