package agent

import (
	"context"
	"fmt"
	"io"
	"sort"
)

// WriteMetrics writes the Prometheus text exposition of the agent's state,
// from the status snapshot: it does not wait for the loop.
func (a *Agent) WriteMetrics(ctx context.Context, w io.Writer) error {
	st, err := a.Status(ctx)
	if err != nil {
		return err
	}
	metric := func(name, help, typ string) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	metric("svcrun_store_full", "1 while the data dir is full: new and renewed leases are refused.", "gauge")
	fmt.Fprintf(w, "svcrun_store_full %d\n", b2i(st.StoreFull != ""))
	metric("svcrun_engine_steps_total", "Engine steps since start.", "counter")
	fmt.Fprintf(w, "svcrun_engine_steps_total %d\n", st.Steps)
	metric("svcrun_ops_in_flight", "Op processes running.", "gauge")
	fmt.Fprintf(w, "svcrun_ops_in_flight %d\n", st.OpsInFlight)
	metric("svcrun_memory_budget_gb", "The node's memory budget.", "gauge")
	fmt.Fprintf(w, "svcrun_memory_budget_gb %g\n", st.MemoryBudgetGB)
	metric("svcrun_memory_reserved_gb", "Memory reserved by running services.", "gauge")
	fmt.Fprintf(w, "svcrun_memory_reserved_gb %g\n", st.MemoryUsedGB)
	admitted, waiting := 0, 0
	for _, l := range st.Leases {
		if l.Admitted {
			admitted++
		} else {
			waiting++
		}
	}
	metric("svcrun_leases", "Leases by state.", "gauge")
	fmt.Fprintf(w, "svcrun_leases{state=\"admitted\"} %d\nsvcrun_leases{state=\"waiting\"} %d\n", admitted, waiting)
	metric("svcrun_service_up", "1 when the service is ready for leases.", "gauge")
	for _, s := range st.Services {
		fmt.Fprintf(w, "svcrun_service_up{service=%q,state=%q} %d\n", s.Name, s.State, b2i(s.Ready))
	}
	metric("svcrun_service_refs", "Admitted leases that need the service.", "gauge")
	for _, s := range st.Services {
		fmt.Fprintf(w, "svcrun_service_refs{service=%q} %d\n", s.Name, s.Refs)
	}
	metric("svcrun_service_failures", "Consecutive failures of the service.", "gauge")
	for _, s := range st.Services {
		fmt.Fprintf(w, "svcrun_service_failures{service=%q} %d\n", s.Name, s.Failures)
	}
	metric("svcrun_service_unhealthy", "1 when the service is marked unhealthy.", "gauge")
	for _, s := range st.Services {
		fmt.Fprintf(w, "svcrun_service_unhealthy{service=%q} %d\n", s.Name, b2i(s.Unhealthy))
	}
	metric("svcrun_probe_healthy", "1 while the probe's capability is available.", "gauge")
	for _, p := range st.Probes {
		fmt.Fprintf(w, "svcrun_probe_healthy{probe=%q,capability=%q} %d\n", p.Name, p.Capability, b2i(p.Healthy))
	}
	metric("svcrun_pool_tokens", "Pool capacity and reservations.", "gauge")
	sort.Slice(st.Pools, func(i, j int) bool { return st.Pools[i].Name < st.Pools[j].Name })
	for _, p := range st.Pools {
		fmt.Fprintf(w, "svcrun_pool_tokens{pool=%q,kind=\"capacity\"} %d\nsvcrun_pool_tokens{pool=%q,kind=\"offered\"} %d\nsvcrun_pool_tokens{pool=%q,kind=\"reserved\"} %d\n",
			p.Name, p.Capacity, p.Name, p.Offered, p.Name, p.Reserved)
	}
	return nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
