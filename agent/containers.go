package agent

import (
	"context"
	"fmt"
	"io"

	"github.com/oarbank/svcrun/broker"
	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/errdefs"
	"github.com/oarbank/svcrun/internal/podman"
	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/nodeconfig"
)

// brokered is the executor with the container broker in front of it:
// the broker's service is answered in svcrun (package broker), never
// spawned.
type brokered struct {
	Executor
	b *broker.Broker
}

func (x brokered) Run(op engine.RunOp) {
	if op.Target == broker.Target {
		x.b.Run(op)
		return
	}
	x.Executor.Run(op)
}

// Kill, Freeze and Thaw leave the broker alone: its containers are not
// svcrun's processes, and outlive svcrun.
func (x brokered) Kill(t engine.Target) {
	if t != broker.Target {
		x.Executor.Kill(t)
	}
}

func (x brokered) Freeze(t engine.Target) {
	if t != broker.Target {
		x.Executor.Freeze(t)
	}
}

func (x brokered) Thaw(t engine.Target) {
	if t != broker.Target {
		x.Executor.Thaw(t)
	}
}

func (x brokered) ContainerMode(service string) string {
	if service == broker.FullName {
		return "built into svcrun: its containers are the runtime's, at " + x.b.Socket()
	}
	return x.Executor.ContainerMode(service)
}

func (x brokered) Procs(t engine.Target) []int {
	if t == broker.Target {
		return nil
	}
	return x.Executor.Procs(t)
}

// openBroker puts the container broker in front of the executor when
// [containers] is enabled.
func (a *Agent) openBroker(runtime broker.Runtime) {
	x := a.cfg.Containers
	if !x.Enabled {
		return
	}
	if runtime == nil {
		runtime = podman.New(x.Socket)
	}
	a.broker = broker.New(broker.Config{
		Node: a.cfg.NodeID, Containers: x, Approved: broker.Approvals(a.mods), Runtime: runtime,
		Post: a.sched.Post, Log: a.log.With("service", broker.FullName),
	})
	a.exec = brokered{Executor: a.exec, b: a.broker}
	a.log.Info("container broker enabled", "service", broker.FullName, "socket", x.Socket, "max", x.Max)
}

// specs are the module specs of the engine: the configuration's modules
// and, when enabled, the broker's.
func (a *Agent) specs() []engine.ModuleSpec {
	specs := moduleSpecs(a.mods)
	if a.broker != nil {
		specs = append(specs, broker.Spec(true))
	}
	return specs
}

// reloadBroker applies a reload's approvals (grants.containers and
// enabled modules). [containers] itself takes effect at the next start.
func (a *Agent) reloadBroker(mods []nodeconfig.LoadedModule) {
	if a.broker != nil {
		a.broker.SetApproved(broker.Approvals(mods))
	}
}

// leasesEnded tells the broker of the leases a step ended (released,
// expired, ended by svcrun): their containers are removed at once.
func (a *Agent) leasesEnded(effects []engine.Effect) {
	if a.broker == nil {
		return
	}
	for _, f := range effects {
		if d, ok := f.(engine.DeleteLease); ok {
			a.broker.LeaseEnded(d.Lease)
		}
	}
}

// ErrNoBroker is a container call on a node whose broker is not enabled.
var ErrNoBroker = fmt.Errorf("%w: this node offers no containers: the container broker is not "+
	"enabled ([containers].enabled in svcrun's configuration)", errdefs.ErrNotFound)

// containerLease is the broker's view of admitted lease id: the API's
// container calls prove their lease by its id, as renew and release do.
func (a *Agent) containerLease(ctx context.Context, id engine.LeaseID) (*broker.Broker, broker.Lease, error) {
	if a.broker == nil {
		return nil, broker.Lease{}, ErrNoBroker
	}
	st, err := a.current(ctx)
	if err != nil {
		return nil, broker.Lease{}, err
	}
	l, ok := st.lease(id)
	if !ok {
		return nil, broker.Lease{}, errdefs.ErrUnknownLease
	}
	if !l.Admitted {
		reason := fmt.Sprintf("lease %s is not admitted yet (%s)", id, l.WaitingFor)
		return nil, broker.Lease{}, &errdefs.ConflictError{Reason: reason}
	}
	return a.broker, broker.Lease{ID: l.ID, Attempt: l.Attempt, Job: l.Job, Tokens: l.Pools[manifest.ContainersPool]}, nil
}

// CreateContainer creates and starts a container for lease id.
func (a *Agent) CreateContainer(ctx context.Context, id engine.LeaseID,
	req broker.CreateRequest) (broker.Container, error) {
	b, l, err := a.containerLease(ctx, id)
	if err != nil {
		return broker.Container{}, err
	}
	return b.Create(ctx, l, req)
}

// Containers lists lease id's containers.
func (a *Agent) Containers(ctx context.Context, id engine.LeaseID) ([]broker.Container, error) {
	b, l, err := a.containerLease(ctx, id)
	if err != nil {
		return nil, err
	}
	return b.List(ctx, l)
}

// Container returns one of lease id's containers.
func (a *Agent) Container(ctx context.Context, id engine.LeaseID, container string) (broker.Container, error) {
	b, l, err := a.containerLease(ctx, id)
	if err != nil {
		return broker.Container{}, err
	}
	return b.Inspect(ctx, l, container)
}

// WaitContainer waits for one of lease id's containers to exit.
func (a *Agent) WaitContainer(ctx context.Context, id engine.LeaseID, container string) (broker.Container, error) {
	b, l, err := a.containerLease(ctx, id)
	if err != nil {
		return broker.Container{}, err
	}
	return b.Wait(ctx, l, container)
}

// ContainerLogs copies one of lease id's containers' output.
func (a *Agent) ContainerLogs(ctx context.Context, id engine.LeaseID, container string, follow bool,
	stdout, stderr io.Writer) error {
	b, l, err := a.containerLease(ctx, id)
	if err != nil {
		return err
	}
	return b.Logs(ctx, l, container, follow, stdout, stderr)
}

// StopContainer stops one of lease id's containers.
func (a *Agent) StopContainer(ctx context.Context, id engine.LeaseID, container string) error {
	b, l, err := a.containerLease(ctx, id)
	if err != nil {
		return err
	}
	return b.Stop(ctx, l, container)
}

// RemoveContainer removes one of lease id's containers.
func (a *Agent) RemoveContainer(ctx context.Context, id engine.LeaseID, container string) error {
	b, l, err := a.containerLease(ctx, id)
	if err != nil {
		return err
	}
	return b.Remove(ctx, l, container)
}

// writeContainerMetrics adds the broker's families to /metrics.
func (a *Agent) writeContainerMetrics(ctx context.Context, x *expo) {
	if a.broker == nil {
		return
	}
	s := a.broker.Stats()
	x.family("svcrun_containers_healthy", "gauge",
		"1 while the container runtime answers the broker (its last fingerprint).")
	x.sample("svcrun_containers_healthy", b2f(s.Healthy))
	x.family("svcrun_containers_capacity", "gauge", "Running containers the broker offers at most ([containers].max).")
	x.sample("svcrun_containers_capacity", float64(s.Capacity))
	if n, err := a.broker.Running(ctx); err == nil {
		x.family("svcrun_containers_running", "gauge",
			"The broker's containers running on this node, as the runtime lists them.")
		x.sample("svcrun_containers_running", float64(n))
	}
	x.family("svcrun_containers_created_total", "counter",
		"Containers the broker created and started since svcrun started.")
	x.sample("svcrun_containers_created_total", float64(s.Created))
	x.family("svcrun_containers_oom_killed_total", "counter",
		"The broker's containers found killed for memory when waited for, since svcrun started.")
	x.sample("svcrun_containers_oom_killed_total", float64(s.OOMKilled))
	x.family("svcrun_container_pulls_total", "counter", "Image pulls by the broker since svcrun started.")
	x.sample("svcrun_container_pulls_total", float64(s.Pulls))
	x.family("svcrun_container_pull_seconds_total", "counter", "Time the broker's image pulls took, in seconds.")
	x.sample("svcrun_container_pull_seconds_total", s.PullTime.Seconds())
}
