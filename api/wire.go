package api

import (
	"encoding/json"
	"fmt"
	"time"
)

// Bounds of an acquire request: far above what a job runner sends, and
// small enough that no request can bloat svcrun's state, its journal or
// every status answer.
const (
	MaxBody  = 64 << 10    // bytes of a request body
	MaxName  = 256         // bytes of a job, attempt, capability or pool name
	MaxItems = 256         // capabilities, pools, needs_pools: entries of each
	MinTTL   = time.Second // a shorter TTL expires before it can be renewed
	MaxTTL   = 7 * 24 * time.Hour
	MaxWait  = 24 * time.Hour // a long poll longer than this is a lost caller
)

// Duration is a time.Duration that travels as a Go duration string ("30s",
// "1m30s", "250ms"). An empty string is 0.
type Duration time.Duration

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf(`a duration is a string such as "30s" or "10m", not %s`, b)
	}
	if s == "" {
		*d = 0
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf(`%q is not a duration: use a string such as "30s" or "10m"`, s)
	}
	*d = Duration(v)
	return nil
}

// AcquireRequest is the body of POST /v1/leases. The server requires the
// attempt (Client.Acquire makes one when it is empty): an acquire repeated
// with the same attempt and requirements is answered with the lease already
// admitted, so a caller whose answer was lost asks again without leaving a
// second lease behind.
type AcquireRequest struct {
	Job          string           `json:"job,omitempty"`
	Attempt      string           `json:"attempt,omitempty"`
	Pools        map[string]int64 `json:"pools,omitempty"` // tokens to reserve
	NeedsPools   []string         `json:"needs_pools,omitempty"`
	Capabilities []string         `json:"capabilities,omitempty"`
	Wait         Duration         `json:"wait,omitempty"` // how long to wait for admission; 0: admitted now or rejected
	TTL          Duration         `json:"ttl,omitempty"`  // 0: held until released
}

// Grant is an admitted lease, the 200 answer of POST /v1/leases.
type Grant struct {
	Lease    string    `json:"lease"`
	Attempt  string    `json:"attempt"`
	Services []string  `json:"services"`         // module/service, the services it uses
	Expires  time.Time `json:"expires,omitzero"` // zero without a TTL
	NodeID   string    `json:"node_id"`
	// Uses is how a job finds what the lease depends on: every service,
	// and every probe establishing a capability it asked for, with the
	// attrs of its latest fingerprint as the lease was admitted.
	Uses Uses `json:"uses"`
}

// Uses lists what a lease depends on.
type Uses struct {
	Services []UsedService `json:"services"`
	Probes   []UsedProbe   `json:"probes"`
}

// UsedService is a service a lease uses.
type UsedService struct {
	Name         string         `json:"name"` // module/service
	Capabilities []string       `json:"capabilities"`
	Attrs        map[string]any `json:"attrs"` // {} before its first fingerprint
}

// UsedProbe is a probe establishing a capability a lease asked for.
type UsedProbe struct {
	Name       string         `json:"name"` // module/probe
	Capability string         `json:"capability"`
	Attrs      map[string]any `json:"attrs"`
}

// ServicesFile is the JSON file `svcrun run` gives its command, named by
// $OARBANK_SERVICES_FILE: the node, the lease, what it uses, and the
// labels every object the job creates must carry (protocol.LabelAttemptID,
// LabelNode, LabelService). With one service, Labels names it; with
// several, each service's Labels are those for objects of that service,
// and Labels has only the attempt and the node.
type ServicesFile struct {
	NodeID   string            `json:"node_id"`
	Lease    string            `json:"lease"`
	Attempt  string            `json:"attempt"`
	Labels   map[string]string `json:"labels"`
	Services []FileService     `json:"services"`
	Probes   []UsedProbe       `json:"probes"`
}

// FileService is a service of the ServicesFile.
type FileService struct {
	UsedService
	Labels map[string]string `json:"labels"`
}

// Renewal is the answer of POST /v1/leases/{id}/renew.
type Renewal struct {
	Lease   string    `json:"lease"`
	Expires time.Time `json:"expires,omitzero"` // zero without a TTL
}

// Released is the answer of DELETE /v1/leases/{id}.
type Released struct {
	Lease string `json:"lease"`
}

// ReapResult is the answer of POST /v1/reap: the round that ran, once it
// has ended.
type ReapResult struct {
	Round    uint64        `json:"round"`
	Snapshot time.Time     `json:"snapshot"` // when the live attempts were taken
	Services []ReapService `json:"services"`
}

// ReapService is one service's part of a round: not listed (Skipped or
// Failed says why), or its objects.
type ReapService struct {
	Service string       `json:"service"`
	Skipped string       `json:"skipped,omitempty"` // disabled, manual, not running
	Failed  string       `json:"failed,omitempty"`  // its list_owned failed, or it stopped before listing
	Objects []ReapObject `json:"objects"`
}

// ReapObject is what the round did with one listed object.
type ReapObject struct {
	ID      string `json:"id"`
	Kind    string `json:"kind"`
	Attempt string `json:"attempt,omitempty"`
	Outcome string `json:"outcome"`          // destroyed, kept or failed
	Reason  string `json:"reason,omitempty"` // why kept or failed
	Forced  bool   `json:"forced,omitempty"` // destroyed with --force
}

// Done is the answer of the routes that only start something.
type Done struct {
	OK      bool   `json:"ok"`
	Message string `json:"message"`
}

// ReloadResult is the answer of POST /v1/reload.
type ReloadResult struct {
	// RestartNeeded lists the node settings that changed but take effect
	// only at the next start of svcrun.
	RestartNeeded []string `json:"restart_needed"`
}

// ErrorBody is every error answer.
type ErrorBody struct {
	Error  string `json:"error"`
	Code   string `json:"code"`             // see the Code* constants
	Reason string `json:"reason,omitempty"` // a rejection's reason
	Field  string `json:"field,omitempty"`  // a bad request's field: "attempt", "capabilities[2]", "pools.gpu", "body"
}

// Error codes of ErrorBody.Code.
const (
	CodeBadRequest   = "bad_request"   // 400
	CodeForbidden    = "forbidden"     // 403: the peer's uid may not use the API, or an image not approved
	CodeConflict     = "conflict"      // 409: the lease's containers fill its tokens
	CodeNotFound     = "not_found"     // 404: no such route, service or module
	CodeUnknownLease = "unknown_lease" // 404
	CodeNotAllowed   = "method_not_allowed"
	CodeRejected     = "rejected"    // 409: the lease was not admitted
	CodeRefused      = "refused"     // 422: a reload refused; the running configuration stays
	CodeStopping     = "stopping"    // 503: svcrun is stopping
	CodeInternal     = "internal"    // 500
	CodeUnavailable  = "unavailable" // 503: the request could not be answered
	CodeTimeout      = "timeout"     // 504
	CodeStoreFull    = "store_full"  // 507: the data dir is full; new and renewed leases wait for space
	// CodeStoreUnlinked is 507: the state file was deleted or replaced
	// under svcrun; every request that needs a write is refused until it
	// restarts.
	CodeStoreUnlinked = "store_unlinked"
)

// Status is GET /v1/status: the engine's view and the agent's settings.
type Status struct {
	NodeID         string   `json:"node_id"`
	Platform       string   `json:"platform"`
	Config         string   `json:"config"`
	DataDir        string   `json:"data_dir"`
	Socket         string   `json:"socket"`
	Sandbox        string   `json:"sandbox"`                   // require | best_effort
	Containers     string   `json:"containers"`                // how services are contained on this host
	SandboxHost    string   `json:"sandbox_host"`              // what this host's kernel can enforce
	SandboxMissing []string `json:"sandbox_missing,omitempty"` // per module: layers not applied (or refused)
	// StoreFull and StoreUnlinked say why requests that need a write are
	// refused: the data dir is full (new and renewed leases), or the state
	// file was deleted or replaced under svcrun (all of them, until it
	// restarts). Empty otherwise.
	StoreFull     string          `json:"store_full,omitempty"`
	StoreUnlinked string          `json:"store_unlinked,omitempty"`
	StartedAt     time.Time       `json:"started_at"`
	Now           time.Time       `json:"now"`
	Steps         uint64          `json:"steps"`
	OpsInFlight   int             `json:"ops_in_flight"`
	Memory        Memory          `json:"memory"`
	Services      []ServiceStatus `json:"services"`
	Probes        []ProbeStatus   `json:"probes"`
	Leases        []LeaseStatus   `json:"leases"`
	Pools         []PoolStatus    `json:"pools"`
	Skipped       []string        `json:"skipped"` // services and probes not loaded on this platform
	LiveAttempts  []string        `json:"live_attempts"`
}

// Memory is the node's memory budget.
type Memory struct {
	BudgetGB float64 `json:"budget_gb"`
	UsedGB   float64 `json:"used_gb"` // reserved by running services
}

// ServiceStatus is one service.
type ServiceStatus struct {
	Name         string           `json:"name"` // module/service
	Module       string           `json:"module"`
	Enabled      bool             `json:"enabled"`
	Lifecycle    string           `json:"lifecycle"` // on_demand, always, manual (manifest.Lifecycle)
	State        string           `json:"state"`     // unknown, stopped, starting, waiting-ready, ready, stopping
	StateSince   time.Time        `json:"state_since,omitzero"`
	Ready        bool             `json:"ready"` // usable by leases now
	Refs         int              `json:"refs"`
	Waiting      int              `json:"waiting"` // requests waiting for it
	Failures     int              `json:"failures"`
	Unhealthy    bool             `json:"unhealthy"`
	Reason       string           `json:"reason,omitempty"`
	BackoffUntil time.Time        `json:"backoff_until,omitzero"`
	Frozen       bool             `json:"frozen"`
	StopReason   string           `json:"stop_reason,omitempty"`
	MemGB        float64          `json:"mem_gb"`
	Charged      bool             `json:"charged"` // counted against the memory budget
	Pools        map[string]int64 `json:"pools,omitempty"`
	Capabilities []string         `json:"capabilities,omitempty"`
	OpInFlight   string           `json:"op_in_flight,omitempty"`
	Container    string           `json:"container,omitempty"` // cgroup, or process-group: reason
	// Contained: its container holds its daemon, so a crash is seen as
	// the container empties and status runs every watched_status_period_s.
	Contained bool `json:"contained"`
	// The latest fingerprint that answered, once one has
	// (FingerprintedAt): whether the service says it can serve, why
	// not, and its attrs. Unhealthy, above, counts failures instead.
	Healthy         bool           `json:"healthy"`
	Message         string         `json:"message,omitempty"`
	Attrs           map[string]any `json:"attrs,omitempty"`
	FingerprintedAt time.Time      `json:"fingerprinted_at,omitzero"`
}

// ProbeStatus is one probe and its last result.
type ProbeStatus struct {
	Name       string         `json:"name"`
	Capability string         `json:"capability"`
	Enabled    bool           `json:"enabled"`
	Reported   bool           `json:"reported"`
	Healthy    bool           `json:"healthy"`
	Message    string         `json:"message,omitempty"`
	Attrs      map[string]any `json:"attrs,omitempty"`     // of its last run; none when it failed
	CheckedAt  time.Time      `json:"checked_at,omitzero"` // when its last result came
}

// LeaseStatus is one lease, admitted or waiting.
type LeaseStatus struct {
	ID           string           `json:"id"`
	Job          string           `json:"job,omitempty"`
	Attempt      string           `json:"attempt"`
	Admitted     bool             `json:"admitted"`
	Services     []string         `json:"services"`
	Pools        map[string]int64 `json:"pools,omitempty"`
	NeedsPools   []string         `json:"needs_pools,omitempty"`
	Capabilities []string         `json:"capabilities,omitempty"`
	Expires      time.Time        `json:"expires,omitzero"`
	// While it waits: when it was asked for and until when it may wait.
	AskedAt   time.Time `json:"asked_at,omitzero"`
	WaitUntil time.Time `json:"wait_until,omitzero"`
	// Waiting says what it waits for, while it waits: the service and its
	// state, the probe, the pool and its tokens, or the memory budget.
	Waiting string `json:"waiting,omitempty"`
}

// PoolStatus is one pool.
type PoolStatus struct {
	Name    string `json:"name"`
	Service string `json:"service"`
	// Capacity can be reserved now (its service usable); Offered is its
	// latest healthy fingerprint's offer, also while it is stopped.
	Capacity int64 `json:"capacity"`
	Offered  int64 `json:"offered"`
	Reserved int64 `json:"reserved"`
}

// Process is one process in a service's container, as GET
// /v1/services/{module}/{service}/processes lists them.
type Process struct {
	PID     int    `json:"pid"`
	Command string `json:"command"` // its name (comm), "" when it is gone
}

// Record is one line of GET /v1/events.
type Record struct {
	At   time.Time `json:"at"`
	Kind string    `json:"kind"` // note, run, admitted, rejected, ...
	Text string    `json:"text"`
}
