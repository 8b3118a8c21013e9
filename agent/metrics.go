package agent

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/protocol"
)

// MetricsContentType is the Content-Type of the Prometheus text format
// that /metrics answers with.
const MetricsContentType = "text/plain; version=0.0.4; charset=utf-8"

// Histogram buckets (upper bounds, seconds). Ops take from a millisecond
// (a status that answers at once) to their timeouts (start 10 min); store
// writes take milliseconds (one fdatasync) unless the disk stalls (logged
// at SlowWrite); a lease may wait up to an hour.
var (
	opBuckets    = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
	storeBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 3, 10, 30}
	leaseBuckets = []float64{0.001, 0.01, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 600, 1800, 3600}
)

// opOutcomes are the outcome label's values: "ok", or how the op failed.
var opOutcomes = []string{"ok", string(engine.FailOp), string(engine.FailProtocol),
	string(engine.FailTimeout), string(engine.FailSpawn), string(engine.FailPrepare)}

// leaseOutcomes end a lease's wait: admitted (or already held by its
// attempt), rejected (refused, or its wait ran out), withdrawn (its caller
// gave up).
var leaseOutcomes = []string{"admitted", "rejected", "withdrawn"}

// serviceStates are the states a service reports (engine.ServiceStatus),
// each a series of svcrun_service_state so that none appears only when
// entered.
var serviceStates = []string{"unknown", "stopped", "starting", "waiting-ready", "ready", "stopping"}

// histogram is one Prometheus histogram: counts[i] counts the observations
// in (bounds[i-1], bounds[i]], the last one those above every bound.
type histogram struct {
	bounds []float64
	counts []uint64
	sum    float64
}

func newHistogram(bounds []float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

func (h *histogram) observe(d time.Duration) {
	v := d.Seconds()
	h.counts[sort.SearchFloat64s(h.bounds, v)]++
	h.sum += v
}

// opKey labels an op histogram.
type opKey struct{ op, outcome string }

// meters are what the loop measures beyond the status snapshot: op
// durations, store writes, lease waits, the node's signals. The loop
// writes them, scrapes read them, under mu.
type meters struct {
	mu          sync.Mutex
	ops         map[opKey]*histogram
	storeWrites *histogram
	leaseWaits  map[string]*histogram
	// writing is when the store write in progress began; zero when none.
	writing time.Time
	// waiting are the lease requests not answered yet, since when.
	waiting        map[engine.LeaseID]time.Time
	underPressure  bool
	pressureEvents uint64
	clockJumps     uint64

	// opStarted is when each op in flight began (the loop's only).
	opStarted map[engine.OpID]opStart
}

type opStart struct {
	op protocol.Op
	at time.Time
}

func newMeters() *meters {
	m := &meters{
		ops:         map[opKey]*histogram{},
		storeWrites: newHistogram(storeBuckets),
		leaseWaits:  map[string]*histogram{},
		waiting:     map[engine.LeaseID]time.Time{},
		opStarted:   map[engine.OpID]opStart{},
	}
	// Every series exists from the start: a rate over a series that
	// appears with its first failure misses that failure.
	for _, op := range protocol.Ops() {
		for _, o := range opOutcomes {
			m.ops[opKey{string(op), o}] = newHistogram(opBuckets)
		}
	}
	for _, o := range leaseOutcomes {
		m.leaseWaits[o] = newHistogram(leaseBuckets)
	}
	return m
}

// step measures one engine step, on the loop: ops that begin and end,
// lease requests that begin and end their wait.
func (m *meters) step(now time.Time, ev engine.Event, effects []engine.Effect) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch ev := ev.(type) {
	case *engine.OpDone:
		if s, ok := m.opStarted[ev.ID]; ok {
			delete(m.opStarted, ev.ID)
			outcome := string(ev.Outcome.Failure)
			if outcome == "" {
				outcome = "ok"
			}
			if h := m.ops[opKey{string(s.op), outcome}]; h != nil {
				h.observe(now.Sub(s.at))
			}
		}
	case engine.Acquire:
		if _, dup := m.waiting[ev.Lease]; !dup {
			m.waiting[ev.Lease] = now
		}
	}
	for _, f := range effects {
		switch f := f.(type) {
		case *engine.RunOp:
			m.opStarted[f.ID] = opStart{op: f.Op, at: now}
		case engine.Admitted:
			m.waitEnded(now, f.Lease, "admitted")
		case engine.AlreadyHeld:
			m.waitEnded(now, f.Lease, "admitted")
		case engine.Rejected:
			m.waitEnded(now, f.Lease, "rejected")
		case engine.Released:
			m.waitEnded(now, f.Lease, "withdrawn")
		case engine.LeaseUnknown:
			m.waitEnded(now, f.Lease, "withdrawn")
		}
	}
}

func (m *meters) waitEnded(now time.Time, id engine.LeaseID, outcome string) {
	since, ok := m.waiting[id]
	if !ok {
		return // an admitted lease's release, or a lease restored at boot
	}
	delete(m.waiting, id)
	m.leaseWaits[outcome].observe(now.Sub(since))
}

// storeWrite marks a store write begun at start, and returns the function
// that measures it once it ends.
func (m *meters) storeWrite(start time.Time, clock func() time.Time) (done func()) {
	m.mu.Lock()
	m.writing = start
	m.mu.Unlock()
	return func() {
		end := clock()
		m.mu.Lock()
		m.writing = time.Time{}
		m.storeWrites.observe(end.Sub(start))
		m.mu.Unlock()
	}
}

// WriteMetrics writes the Prometheus text exposition of the agent's state
// (docs/metrics.md names every metric): from the status snapshot and the
// loop's measurements, without waiting for the loop, so that it answers
// while a store write waits for the disk too.
func (a *Agent) WriteMetrics(ctx context.Context, w io.Writer) error {
	st, err := a.Status(ctx)
	if err != nil {
		return err
	}
	now := a.opts.Clock.Now()
	x := &expo{w: bufio.NewWriter(w)}
	x.family("svcrun_start_time_seconds", "gauge", "When svcrun started, in seconds since the Unix epoch.")
	x.sample("svcrun_start_time_seconds", float64(st.StartedAt.UnixNano())/1e9)
	x.family("svcrun_engine_steps_total", "counter", "Engine steps since svcrun started.")
	x.sample("svcrun_engine_steps_total", float64(st.Steps))
	x.family("svcrun_ops_in_flight", "gauge", "Op processes running.")
	x.sample("svcrun_ops_in_flight", float64(st.OpsInFlight))
	x.family("svcrun_store_full", "gauge", "1 while the data dir is full: new and renewed leases are refused.")
	x.sample("svcrun_store_full", b2f(st.StoreFull != ""))
	x.family("svcrun_store_unlinked", "gauge",
		"1 once the state file or its log was deleted or replaced under svcrun: every request "+
			"that needs a write is refused until it restarts.")
	x.sample("svcrun_store_unlinked", b2f(st.StoreUnlinked != ""))
	x.family("svcrun_log_lines_left_out_total", "counter",
		"WARN and ERROR lines left out by the log's rate limit since svcrun started (each "+
			"subject's are counted in a line when its minute ends).")
	x.sample("svcrun_log_lines_left_out_total", float64(a.loud.LeftOut()))
	x.family("svcrun_memory_budget_bytes", "gauge", "The memory budget of services that reserve host memory.")
	x.sample("svcrun_memory_budget_bytes", gbToBytes(st.MemoryBudgetGB))
	x.family("svcrun_memory_reserved_bytes", "gauge", "Memory reserved by running services.")
	x.sample("svcrun_memory_reserved_bytes", gbToBytes(st.MemoryUsedGB))

	admitted, waiting := 0, 0
	waitingIDs := map[engine.LeaseID]bool{}
	for _, l := range st.Leases {
		if l.Admitted {
			admitted++
		} else {
			waiting++
			waitingIDs[l.ID] = true
		}
	}
	x.family("svcrun_leases", "gauge", "Leases held (admitted) and lease requests waiting for admission.")
	x.sample("svcrun_leases", float64(admitted), "state", "admitted")
	x.sample("svcrun_leases", float64(waiting), "state", "waiting")

	x.family("svcrun_service_ready", "gauge", "1 while the service is usable by leases.")
	for _, s := range st.Services {
		x.sample("svcrun_service_ready", b2f(s.Ready), "service", s.Name)
	}
	x.family("svcrun_service_state", "gauge", "1 for the service's current state, 0 for the others.")
	for _, s := range st.Services {
		states := serviceStates
		if !slices.Contains(states, s.State) {
			states = append(slices.Clone(states), s.State)
		}
		for _, state := range states {
			x.sample("svcrun_service_state", b2f(state == s.State), "service", s.Name, "state", state)
		}
	}
	x.family("svcrun_service_leases", "gauge", "Admitted leases that use the service.")
	for _, s := range st.Services {
		x.sample("svcrun_service_leases", float64(s.Refs), "service", s.Name)
	}
	x.family("svcrun_service_consecutive_failures", "gauge", "Failures of the service since it last worked.")
	for _, s := range st.Services {
		x.sample("svcrun_service_consecutive_failures", float64(s.Failures), "service", s.Name)
	}
	x.family("svcrun_service_unhealthy", "gauge",
		"1 while the service is marked unhealthy: it is not started until reset.")
	for _, s := range st.Services {
		x.sample("svcrun_service_unhealthy", b2f(s.Unhealthy), "service", s.Name)
	}
	x.family("svcrun_probe_healthy", "gauge", "1 while the probe's capability is available.")
	for _, p := range st.Probes {
		x.sample("svcrun_probe_healthy", b2f(p.Healthy), "probe", p.Name)
	}
	pools := slices.Clone(st.Pools)
	sort.Slice(pools, func(i, j int) bool { return pools[i].Name < pools[j].Name })
	x.family("svcrun_pool_capacity_tokens", "gauge",
		"Tokens of the pool that can be reserved now (0 while its service is not usable).")
	for _, p := range pools {
		x.sample("svcrun_pool_capacity_tokens", float64(p.Capacity), "pool", p.Name)
	}
	x.family("svcrun_pool_offered_tokens", "gauge", "Tokens the pool's service offered in its latest healthy fingerprint.")
	for _, p := range pools {
		x.sample("svcrun_pool_offered_tokens", float64(p.Offered), "pool", p.Name)
	}
	x.family("svcrun_pool_reserved_tokens", "gauge", "Tokens of the pool reserved by admitted leases.")
	for _, p := range pools {
		x.sample("svcrun_pool_reserved_tokens", float64(p.Reserved), "pool", p.Name)
	}
	a.writeContainerMetrics(ctx, x)

	m := a.meters
	m.mu.Lock()
	defer m.mu.Unlock()
	var writing, oldest time.Duration
	if !m.writing.IsZero() {
		writing = max(now.Sub(m.writing), 0)
	}
	for id, since := range m.waiting {
		// Only requests the engine has waiting count: a request whose end
		// the meters missed must not age forever.
		if waitingIDs[id] {
			oldest = max(oldest, now.Sub(since))
		}
	}
	x.family("svcrun_store_write_duration_seconds", "histogram",
		"Duration of the store's writes, one per engine step that changes the state.")
	x.histogram("svcrun_store_write_duration_seconds", m.storeWrites)
	x.family("svcrun_store_write_waiting_seconds", "gauge",
		"How long the store write in progress has waited; 0 when none is.")
	x.sample("svcrun_store_write_waiting_seconds", writing.Seconds())
	x.family("svcrun_op_duration_seconds", "histogram",
		"Duration of ops, by op and outcome (ok, or how it failed: failed, protocol, timeout, spawn).")
	for _, op := range protocol.Ops() {
		for _, o := range opOutcomes {
			x.histogram("svcrun_op_duration_seconds", m.ops[opKey{string(op), o}], "op", string(op), "outcome", o)
		}
	}
	x.family("svcrun_lease_wait_seconds", "histogram",
		"How long lease requests waited for their answer, by outcome (admitted, rejected, withdrawn).")
	for _, o := range leaseOutcomes {
		x.histogram("svcrun_lease_wait_seconds", m.leaseWaits[o], "outcome", o)
	}
	x.family("svcrun_lease_oldest_wait_seconds", "gauge",
		"How long the longest-waiting lease request has waited; 0 when none waits.")
	x.sample("svcrun_lease_oldest_wait_seconds", oldest.Seconds())
	x.family("svcrun_memory_pressure", "gauge", "1 while the host's memory pressure (PSI) is over its threshold.")
	x.sample("svcrun_memory_pressure", b2f(m.underPressure))
	x.family("svcrun_memory_pressure_events_total", "counter",
		"Memory pressure events given to the engine: each stops the idle yieldable services.")
	x.sample("svcrun_memory_pressure_events_total", float64(m.pressureEvents))
	x.family("svcrun_clock_jumps_total", "counter",
		"Jumps of the wall clock against the monotonic clock (the node slept, or the clock was "+
			"set): each runs the probes again.")
	x.sample("svcrun_clock_jumps_total", float64(m.clockJumps))
	return x.w.Flush()
}

// expo writes the Prometheus text format.
type expo struct{ w *bufio.Writer }

func (x *expo) family(name, typ, help string) {
	fmt.Fprintf(x.w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

// sample writes one sample; labels are name, value pairs.
func (x *expo) sample(name string, v float64, labels ...string) {
	x.w.WriteString(name)
	if len(labels) > 0 {
		x.w.WriteByte('{')
		for i := 0; i < len(labels); i += 2 {
			if i > 0 {
				x.w.WriteByte(',')
			}
			x.w.WriteString(labels[i])
			x.w.WriteString(`="`)
			labelEscaper.WriteString(x.w, labels[i+1])
			x.w.WriteByte('"')
		}
		x.w.WriteByte('}')
	}
	x.w.WriteByte(' ')
	x.w.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
	x.w.WriteByte('\n')
}

func (x *expo) histogram(name string, h *histogram, labels ...string) {
	var cum uint64
	for i, b := range h.bounds {
		cum += h.counts[i]
		x.sample(name+"_bucket", float64(cum), append(slices.Clone(labels), "le", strconv.FormatFloat(b, 'g', -1, 64))...)
	}
	cum += h.counts[len(h.bounds)]
	x.sample(name+"_bucket", float64(cum), append(slices.Clone(labels), "le", "+Inf")...)
	x.sample(name+"_sum", h.sum, labels...)
	x.sample(name+"_count", float64(cum), labels...)
}

// labelEscaper escapes a label value as the text format wants: only
// backslash, double quote and newline.
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func gbToBytes(gb float64) float64 { return gb * (1 << 30) }

// metricsServer is the TCP listener of metrics_listen: GET /metrics and
// nothing else (no API on TCP).
type metricsServer struct {
	ln   net.Listener
	http *http.Server
	done chan struct{}
}

// listenMetrics opens the metrics_listen listener; Open calls it so that
// an address in use refuses the start.
func listenMetrics(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics_listen %s: %w", addr, err)
	}
	return ln, nil
}

// serveMetrics serves /metrics on ln until closeMetrics.
func (a *Agent) serveMetrics(ln net.Listener) *metricsServer {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", a.ServeMetrics)
	s := &metricsServer{ln: ln, done: make(chan struct{}), http: &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          a.ErrorLog("metrics_listen"),
	}}
	go func() {
		defer close(s.done)
		if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("metrics listener stopped", "address", ln.Addr().String(), "error", err)
		}
	}()
	a.log.Info("metrics listening", "address", "http://"+ln.Addr().String()+"/metrics")
	return s
}

func (s *metricsServer) close() {
	_ = s.http.Close()
	<-s.done
}

// MetricsAddr is the address the metrics_listen listener is bound to ("" when
// there is none): with port 0 in the configuration, the port chosen.
func (a *Agent) MetricsAddr() string {
	if a.metricsLn == nil {
		return ""
	}
	return a.metricsLn.Addr().String()
}

// ServeMetrics answers a GET /metrics with the text exposition.
func (a *Agent) ServeMetrics(w http.ResponseWriter, r *http.Request) {
	var b strings.Builder
	if err := a.WriteMetrics(r.Context(), &b); err != nil {
		http.Error(w, "metrics: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", MetricsContentType)
	_, _ = io.WriteString(w, b.String())
}
