package runtime

import (
	"time"

	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/protocol"
)

// Config is what the engine knows of the node.
type Config struct {
	NodeID            string
	Platform          string // linux, macos or windows: services and probes of other platforms are not loaded
	MemoryBudgetGB    float64
	MaxConcurrentOps  int
	StatusPeriod      time.Duration
	FingerprintPeriod time.Duration
	ReapPeriod        time.Duration

	// ReadyPoll is the pause between two ready ops while a start waits for
	// readiness. Default 1 s.
	ReadyPoll time.Duration
	// DoctorDebounce gathers doctor events arriving within this window into
	// one run of the probes. Default 1 s.
	DoctorDebounce time.Duration
	// ForceAfter is the number of reap periods an orphan must survive before
	// it is destroyed with --force. Default 3.
	ForceAfter int
}

func (c *Config) withDefaults() {
	if c.MaxConcurrentOps <= 0 {
		c.MaxConcurrentOps = 8
	}
	if c.StatusPeriod <= 0 {
		c.StatusPeriod = 10 * time.Second
	}
	if c.FingerprintPeriod <= 0 {
		c.FingerprintPeriod = time.Minute
	}
	if c.ReapPeriod <= 0 {
		c.ReapPeriod = time.Minute
	}
	if c.ReadyPoll <= 0 {
		c.ReadyPoll = time.Second
	}
	if c.DoctorDebounce <= 0 {
		c.DoctorDebounce = time.Second
	}
	if c.ForceAfter <= 0 {
		c.ForceAfter = 3
	}
}

// ModuleSpec is one module of the node configuration.
type ModuleSpec struct {
	Module  *manifest.Module
	Enabled bool
}

// LeaseID names a lease; the caller chooses it and it is unique among live
// leases.
type LeaseID string

// Requirements is what a lease needs: pool tokens to reserve, pools that
// only need capacity, and capabilities.
type Requirements struct {
	Pools        map[string]int64 `json:"pools,omitempty"`
	NeedsPools   []string         `json:"needs_pools,omitempty"`
	Capabilities []string         `json:"capabilities,omitempty"`
}

// ----- Events: what happens to the engine. -----

// Event is an input of Engine.Step. Every event is a plain value that can be
// written to a journal and replayed.
type Event interface{ EventName() string }

// Boot starts the engine: the node, its modules, and what the store kept
// from the previous run. It must be the first event, and comes once.
type Boot struct {
	Config  Config
	Modules []ModuleSpec
	State   State
}

// Reload replaces the set of modules (a configuration reload): modules that
// appear or become enabled are enabled, the others disabled.
type Reload struct {
	Modules []ModuleSpec
	// Why says what made the module set change when it is not a new
	// configuration (a module enabled or disabled by hand, svcrun stopping
	// its services at exit): the notes and the stops then say it, and the
	// probes are not run again. Empty: the configuration was reloaded.
	Why string `json:"why,omitempty"`
}

// Acquire asks for a lease. The answer is an Admitted or Rejected effect,
// at once or after waiting (at most Wait) for services to be ready and
// tokens to be free.
type Acquire struct {
	Lease   LeaseID
	Job     string
	Attempt string
	Requirements
	Wait time.Duration // how long the request may wait for admission
	TTL  time.Duration // 0: held until released; else renewed within TTL
}

// Renew extends a lease's TTL.
type Renew struct{ Lease LeaseID }

// Release ends a lease (or withdraws a waiting request).
type Release struct{ Lease LeaseID }

// OpDone reports the end of an op started by a RunOp effect.
type OpDone struct {
	ID      OpID
	Outcome Outcome
}

// Outcome is how an op ended. Result is set only when Failure is empty.
type Outcome struct {
	Result  protocol.Result
	Failure FailureKind
	Message string // why it failed, for people
	// Reasons are the protocol violations of a FailProtocol, one each,
	// as protocol.ProtocolError lists them (Message joins them).
	Reasons []string
}

// FailureKind classifies a failed op.
type FailureKind string

const (
	FailNone     FailureKind = ""
	FailOp       FailureKind = "failed"   // non-zero exit (protocol.OpError)
	FailProtocol FailureKind = "protocol" // bad output (protocol.ProtocolError)
	FailTimeout  FailureKind = "timeout"  // killed at its timeout
	FailSpawn    FailureKind = "spawn"    // could not be started at all
)

// Fire is a timer set by a SetTimer effect, now due.
type Fire struct{ Timer TimerKey }

// ContainerEmptied says the last process of a service's process container
// exited: a crash if the service should be up.
type ContainerEmptied struct{ Service string }

// Doctor asks for the probes to run again (debounced): an explicit request,
// a configuration reload, or the node waking from sleep.
type Doctor struct{ Reason string }

// MemoryPressure says the host is short of memory: idle yieldable services
// are stopped.
type MemoryPressure struct{}

// Reset clears a service's failures and its unhealthy mark.
type Reset struct{ Service string }

// ReapNow runs a reap round at once.
type ReapNow struct{}

func (Boot) EventName() string             { return "boot" }
func (Reload) EventName() string           { return "reload" }
func (Acquire) EventName() string          { return "acquire" }
func (Renew) EventName() string            { return "renew" }
func (Release) EventName() string          { return "release" }
func (OpDone) EventName() string           { return "op-done" }
func (Fire) EventName() string             { return "fire" }
func (ContainerEmptied) EventName() string { return "container-emptied" }
func (Doctor) EventName() string           { return "doctor" }
func (MemoryPressure) EventName() string   { return "memory-pressure" }
func (Reset) EventName() string            { return "reset" }
func (ReapNow) EventName() string          { return "reap-now" }

// ----- Effects: what the engine asks the driver to do. -----

// Effect is an output of Engine.Step.
type Effect interface{ effectName() string }

// OpID names one op run.
type OpID uint64

// Target is what an op runs: a service or a probe of a module.
type Target struct {
	Module string
	Name   string
	Probe  bool
}

// String is the target's node-wide name, "module/name".
func (t Target) String() string { return t.Module + "/" + t.Name }

// RunOp runs one op of a service or probe; the driver answers with OpDone.
type RunOp struct {
	ID      OpID
	Target  Target
	Op      protocol.Op
	Args    []string // destroy: the object id, then --force when forced
	Timeout time.Duration
}

// TimerKind says what a timer is for.
type TimerKind uint8

const (
	TimerIdle          TimerKind = iota + 1 // on_demand service idle long enough: stop it
	TimerBackoff                            // a failed service may start again
	TimerReadyPoll                          // poll ready again
	TimerStartDeadline                      // start_timeout_s is over: not ready is a failure
	TimerStatus                             // status of a running service is due
	TimerFingerprint                        // fingerprint of a running service is due
	TimerResetAfter                         // ready long enough: forget failures
	TimerProbe                              // a probe's period is over
	TimerDoctor                             // the doctor debounce window closed
	TimerLeaseWait                          // a waiting lease's deadline
	TimerLeaseTTL                           // an admitted lease's TTL
	TimerReap                               // a reap round is due
)

var timerNames = [...]string{"", "idle", "backoff", "ready-poll", "start-deadline", "status", "fingerprint",
	"reset-after", "probe", "doctor", "lease-wait", "lease-ttl", "reap"}

func (k TimerKind) String() string {
	if int(k) < len(timerNames) {
		return timerNames[k]
	}
	return "timer?"
}

// TimerKey names a timer: at most one is pending per key. Subject is a
// service, a probe or a lease. Slot is the same key as a small number
// (owner base + kind), unique among pending timers, so that a driver can
// keep its timers in a slice instead of hashing subjects.
type TimerKey struct {
	Kind    TimerKind
	Subject string
	Slot    uint32
}

// timerKinds is the room each owner has in the slot space.
const timerKinds = 16

// SetTimer asks for Fire{Key} at At, replacing a pending timer of the same
// key.
type SetTimer struct {
	Key TimerKey
	At  time.Time
}

// CancelTimer drops the pending timer of Key, if any.
type CancelTimer struct{ Key TimerKey }

// Kill forcefully stops everything in a service's process container (the
// escalation of a failed stop).
type Kill struct{ Service string }

// Freeze stops a service's processes from running; Thaw resumes them.
type Freeze struct{ Service string }

// Thaw resumes a frozen service.
type Thaw struct{ Service string }

// Admitted answers an Acquire: the lease holds, with the services it uses.
type Admitted struct {
	Lease    LeaseID
	Services []string
}

// AlreadyHeld answers an Acquire of an attempt whose lease Held is already
// admitted, with the same requirements: that lease is the answer (its TTL
// restarted), no new lease is made. Lease is the request's id, which the
// driver routes the answer by.
type AlreadyHeld struct {
	Lease    LeaseID
	Held     LeaseID
	Services []string
	Expires  time.Time // zero without a TTL
}

// Rejected answers an Acquire that cannot be admitted, or whose wait ran
// out.
type Rejected struct {
	Lease  LeaseID
	Reason string
}

// Expired says an admitted lease ended without its holder releasing it:
// its TTL passed (Reason empty), or what it needed left the node (Reason
// says what, e.g. its module was removed from the configuration).
type Expired struct {
	Lease  LeaseID
	Reason string
}

// Renewed answers a Renew: the lease now expires at Expires (zero: no TTL).
type Renewed struct {
	Lease   LeaseID
	Expires time.Time
}

// Released answers a Release.
type Released struct{ Lease LeaseID }

// LeaseUnknown answers a Renew or Release of a lease the engine does not
// hold (never admitted, released, or expired). Reason is set the first time
// a holder asks about a lease the engine ended itself (Expired with a
// Reason): why it ended.
type LeaseUnknown struct {
	Lease  LeaseID
	Reason string
}

// PutLease persists an admitted lease.
type PutLease struct{ Lease LeaseRecord }

// DeleteLease removes a lease from the store.
type DeleteLease struct{ Lease LeaseID }

// PutService persists a service's failure record.
type PutService struct{ Service ServiceRecord }

// Note explains a decision, for logs and traces.
type Note struct {
	Subject string
	Text    string
}

func (RunOp) effectName() string        { return "run" }
func (SetTimer) effectName() string     { return "set-timer" }
func (CancelTimer) effectName() string  { return "cancel-timer" }
func (Kill) effectName() string         { return "kill" }
func (Freeze) effectName() string       { return "freeze" }
func (Thaw) effectName() string         { return "thaw" }
func (Admitted) effectName() string     { return "admitted" }
func (AlreadyHeld) effectName() string  { return "already-held" }
func (Rejected) effectName() string     { return "rejected" }
func (Expired) effectName() string      { return "expired" }
func (Renewed) effectName() string      { return "renewed" }
func (Released) effectName() string     { return "released" }
func (LeaseUnknown) effectName() string { return "lease-unknown" }
func (PutLease) effectName() string     { return "put-lease" }
func (DeleteLease) effectName() string  { return "delete-lease" }
func (PutService) effectName() string   { return "put-service" }
func (Note) effectName() string         { return "note" }

// ----- Durable state. -----

// State is what the store keeps across agent restarts.
type State struct {
	Leases   []LeaseRecord
	Services []ServiceRecord
}

// LeaseRecord is an admitted lease as stored.
type LeaseRecord struct {
	ID      LeaseID `json:"id"`
	Job     string  `json:"job,omitempty"`
	Attempt string  `json:"attempt"`
	Requirements
	TTL      time.Duration `json:"ttl,omitempty"`
	Expires  time.Time     `json:"expires,omitzero"` // zero when TTL is 0
	Admitted time.Time     `json:"admitted"`
}

// ServiceRecord is a service's failure history as stored.
type ServiceRecord struct {
	Name         string    `json:"name"`
	Failures     int       `json:"failures"`
	Unhealthy    bool      `json:"unhealthy,omitempty"`
	Reason       string    `json:"reason,omitempty"` // the last failure
	BackoffUntil time.Time `json:"backoff_until,omitzero"`
}
