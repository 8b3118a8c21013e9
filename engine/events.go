package engine

import (
	"time"

	"github.com/oarbank/svcrun/protocol"
)

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
	// Reason says what made the module set change when it is not a new
	// configuration (a module enabled or disabled by hand, svcrun stopping
	// its services at exit): the notes and the stops then say it, and the
	// probes are not run again. Empty: the configuration was reloaded.
	Reason string `json:"why,omitempty"`
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

// OpDone reports the end of an op started by a RunOp effect. It travels as
// *OpDone, so that a driver that ends many ops (the simulator's fake
// executor) can reuse one once its step is over: Step keeps nothing of it
// but copies of its fields.
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
	// Occupied, of a fingerprint: when it ended, the service's process
	// container held processes that no op runs (cgroup mode only; the
	// fingerprint's own process not counted). A fingerprint saying not
	// running is then no proof that nothing runs: the service is stopped
	// before it is started (docs/decisions.md, rule-occupied).
	Occupied bool `json:"occupied,omitempty"`
}

// FailureKind classifies a failed op.
type FailureKind string

const (
	FailNone     FailureKind = ""
	FailOp       FailureKind = "failed"   // non-zero exit (protocol.OpError)
	FailProtocol FailureKind = "protocol" // bad output (protocol.ProtocolError)
	FailTimeout  FailureKind = "timeout"  // killed at its timeout
	FailSpawn    FailureKind = "spawn"    // could not be started at all
	// FailPrepare: svcrun could not prepare the op for a reason of the node,
	// not of the module (a full disk, a container that could not be made):
	// nothing of the module ran.
	FailPrepare FailureKind = "prepare"
)

// Fire is a timer set by a SetTimer effect, now due.
type Fire struct{ Timer TimerKey }

// ContainerEmptied says the last process of a service's process container
// exited: a crash if the service should be up.
type ContainerEmptied struct{ Service Target }

// ContainerPopulated says a service's process container holds a process
// that no op of it runs (its daemon, once an op left it there, or found at
// adoption): the service is contained, its death will be a
// ContainerEmptied, and status becomes a safety net
// (Config.WatchedStatusPeriod). The process-group fallback never posts it.
type ContainerPopulated struct{ Service Target }

// MemberExited says a long-lived process of a service's process container
// ended while others live on (a master whose workers remain): the
// container will not empty, so its status is due at once. Killed says
// that process was svcrun's own child (the topmost process of the daemon,
// which svcrun inherits as subreaper) and a signal killed it: the daemon
// crashed, no status needed (rule-member-exited).
type MemberExited struct {
	Service Target
	Killed  bool `json:",omitempty"`
}

// Paused says svcrun itself did not run for Length (SIGSTOP, a VM paused,
// a host suspended, a stalled page-in): what fell due meanwhile is late
// through no fault of a holder or a module. A driver delivers it before
// any timer that fell due during the pause.
type Paused struct{ Length time.Duration }

// Doctor asks for the probes to run again (debounced): an explicit request,
// a configuration reload, or the node waking from sleep.
type Doctor struct{ Reason string }

// MemoryPressure says the host is short of memory: idle yieldable services
// are stopped.
type MemoryPressure struct{}

// Reset clears a service's failures and its unhealthy mark.
type Reset struct{ Service Target }

// ReapNow runs a reap round at once, or, while one runs, once it ends.
// Ticket, when set, names the request: the ReapDone ending its round
// carries it.
type ReapNow struct {
	Ticket string `json:"ticket,omitempty"`
}

func (Boot) EventName() string               { return "boot" }
func (Reload) EventName() string             { return "reload" }
func (Acquire) EventName() string            { return "acquire" }
func (Renew) EventName() string              { return "renew" }
func (Release) EventName() string            { return "release" }
func (*OpDone) EventName() string            { return "op-done" }
func (Fire) EventName() string               { return "fire" }
func (ContainerEmptied) EventName() string   { return "container-emptied" }
func (ContainerPopulated) EventName() string { return "container-populated" }
func (MemberExited) EventName() string       { return "member-exited" }
func (Paused) EventName() string             { return "paused" }
func (Doctor) EventName() string             { return "doctor" }
func (MemoryPressure) EventName() string     { return "memory-pressure" }
func (Reset) EventName() string              { return "reset" }
func (ReapNow) EventName() string            { return "reap-now" }
