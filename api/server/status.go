package server

import (
	"github.com/oarbank/svcrun/agent"
	"github.com/oarbank/svcrun/api"
	"github.com/oarbank/svcrun/engine"
)

// statusOf converts the agent's view to the wire's.
func statusOf(st agent.Status) api.Status {
	out := api.Status{
		NodeID: st.NodeID, Platform: st.Platform, Config: st.Config, DataDir: st.DataDir, Socket: st.Socket,
		Sandbox: st.Sandbox, Containers: st.Containers, SandboxHost: st.SandboxHost, SandboxMissing: st.SandboxMissing,
		StoreFull: st.StoreFull, StoreUnlinked: st.StoreUnlinked, StartedAt: st.StartedAt, Now: st.Now, Steps: st.Steps,
		OpsInFlight: st.OpsInFlight, Memory: api.Memory{BudgetGB: st.MemoryBudgetGB, UsedGB: st.MemoryUsedGB},
		Services: []api.ServiceStatus{}, Probes: []api.ProbeStatus{}, Leases: []api.LeaseStatus{},
		Pools: []api.PoolStatus{}, Skipped: append([]string{}, st.Skipped...),
		LiveAttempts: append([]string{}, st.LiveAttempts...),
	}
	for _, s := range st.Services {
		out.Services = append(out.Services, api.ServiceStatus{
			Name: s.Name, Module: s.Module, Enabled: s.Enabled, Lifecycle: string(s.Lifecycle), State: s.State,
			StateSince: s.StateSince, Ready: s.Ready,
			Refs: s.Refs, Waiting: s.Waiting, Failures: s.Failures, Unhealthy: s.Unhealthy, Reason: s.Reason,
			BackoffUntil: s.BackoffUntil, Frozen: s.Frozen, StopReason: s.StopReason, MemGB: s.MemGB, Charged: s.Charged,
			Pools: s.Pools, Capabilities: s.Capabilities, OpInFlight: s.OpInFlight, Container: st.ContainerModes[s.Name],
			Contained: s.Contained, Healthy: s.Healthy, Message: s.Message, Attrs: s.Attrs,
			FingerprintedAt: s.FingerprintedAt,
		})
	}
	for _, p := range st.Probes {
		out.Probes = append(out.Probes, api.ProbeStatus{Name: p.Name, Capability: p.Capability, Enabled: p.Enabled,
			Reported: p.Reported, Healthy: p.Healthy, Message: p.Message, Attrs: p.Attrs, CheckedAt: p.CheckedAt})
	}
	for _, l := range st.Leases {
		out.Leases = append(out.Leases, api.LeaseStatus{ID: string(l.ID), Job: l.Job,
			Attempt: l.Attempt, Admitted: l.Admitted,
			Services: l.Services, Pools: l.Pools, NeedsPools: l.NeedsPools, Capabilities: l.Capabilities, Expires: l.Expires,
			AskedAt: l.AskedAt, WaitUntil: l.WaitUntil, Waiting: l.WaitingFor})
	}
	for _, p := range st.Pools {
		out.Pools = append(out.Pools, api.PoolStatus{Name: p.Name, Service: p.Service,
			Capacity: p.Capacity, Offered: p.Offered, Reserved: p.Reserved})
	}
	return out
}

// grantOf converts an admitted lease to the wire's. Lists and attrs are
// never null, so that a job reads them without checking.
func grantOf(g agent.Grant) api.Grant {
	out := api.Grant{Lease: string(g.Lease), Attempt: g.Attempt, Services: nonNil(g.Services),
		Expires: g.Expires, NodeID: g.NodeID,
		Uses: api.Uses{Services: []api.UsedService{}, Probes: []api.UsedProbe{}}}
	for _, s := range g.Uses {
		out.Uses.Services = append(out.Uses.Services, api.UsedService{Name: s.Name,
			Capabilities: nonNil(s.Capabilities), Attrs: attrs(s.Attrs)})
	}
	for _, p := range g.Probes {
		out.Uses.Probes = append(out.Uses.Probes, api.UsedProbe{Name: p.Name,
			Capability: p.Capability, Attrs: attrs(p.Attrs)})
	}
	return out
}

func attrs(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// reapOf converts a reap round's outcome to the wire's.
func reapOf(d engine.ReapDone) api.ReapResult {
	out := api.ReapResult{Round: d.Round, Snapshot: d.Snapshot, Services: []api.ReapService{}}
	for _, s := range d.Services {
		rs := api.ReapService{Service: s.Service, Skipped: s.Skipped, Failed: s.Failed, Objects: []api.ReapObject{}}
		for _, o := range s.Objects {
			rs.Objects = append(rs.Objects, api.ReapObject{ID: o.ID, Kind: o.Kind,
				Attempt: o.Attempt, Outcome: string(o.Outcome), Reason: o.Reason, Forced: o.Forced})
		}
		out.Services = append(out.Services, rs)
	}
	return out
}
