package engine

import (
	"fmt"
	"time"

	"github.com/oarbank/svcrun/protocol"
)

// Engine is the service manager's state machine. It is not safe for
// concurrent use: one driver loop owns it.
type Engine struct {
	cfg    Config
	now    time.Time
	booted bool
	out    []Effect
	nextOp OpID
	// Where the pointer effects of a step live (see Effect).
	runOps  slab[RunOp]
	timers  slab[SetTimer]
	cancels slab[CancelTimer]

	modules  map[string]*module
	modOrder []*module // sorted by name
	services map[string]*service
	svcOrder []*service // sorted by full name
	probes   map[string]*probe
	prbOrder []*probe // sorted by full name
	caps     map[string]provider
	pools    map[string]*service
	skipped  []string // services and probes not loaded on this platform, for status
	// offPlatform says, for a capability or pool ("capability x", "pool
	// y") of a service or probe not loaded here, why: rejections name it.
	offPlatform map[string]string
	// offline says why a capability or pool of a disabled module or a
	// removed service is not offered.
	offline map[string]string

	leases   map[LeaseID]*lease
	waiting  []*lease // FIFO
	attempts map[string]int

	ops       opTable // in flight
	slotQueue []actor

	dirty      []actor
	admitDirty bool
	memBlocked []*service
	memUsed    float64
	// memUnknown counts the services that reserve host memory and whose
	// first fingerprint since load or enable is due or running: they may
	// run, so a start that reserves memory waits for them (see holdsStarts).
	memUnknown int

	nextBase  uint32   // the last timer slot base handed out
	freeBases []uint32 // bases of forgotten leases
	// slotServices holds the service of each slot base (by base /
	// timerKinds), so that a service's timer finds it without hashing
	// its name. Service bases are never handed out again.
	slotServices []*service

	// ended says why the engine ended an admitted lease itself (its
	// module was removed): the holder's next renew or release is told,
	// once.
	ended map[LeaseID]string

	// doctorPending: a doctor event's run of the probes and fingerprints
	// is debounced until its timer; doctorAt is when the first event came.
	doctorPending bool
	doctorAt      time.Time

	// The reap round in progress, the number of the last one started,
	// and whether another was asked for meanwhile, with its tickets;
	// when the last round that listed every running service started.
	round       *reapRound
	reapRounds  uint64
	reapAgain   bool
	nextTickets []string
	lastFull    time.Time
}

// provider establishes a capability: a service or a probe.
type provider struct {
	svc *service
	prb *probe
}

// actor is something that runs ops: a service or a probe. Its reconcile
// looks at what is due and starts at most one op.
type actor interface {
	reconcile(e *Engine)
	base() *actorBase
}

// actorBase is what services and probes share: their names, their timer
// slots, and their place in the reconcile and op-slot queues.
type actorBase struct {
	name   string // module/name
	mod    *module
	target Target
	slot   uint32 // timer slot base

	op       *opRun // in flight: &run, or nil
	run      opRun  // one op at a time: reused, not allocated
	dirty    bool   // queued for a reconcile
	waitSlot bool   // queued for a global op slot
	// waitFirst: queued for a start, stop or ready, which go ahead of
	// the polls and the reaping queued for a slot.
	waitFirst bool
	removed   bool // gone from its manifest
}

func (b *actorBase) base() *actorBase { return b }

// opRun is an op in flight.
type opRun struct {
	id         OpID
	op         protocol.Op
	svc        *service
	prb        *probe
	stopReason string
	object     string    // destroy
	snap       *reapSnap // list_owned
}

// New returns an engine that waits for its Boot event.
func New() *Engine {
	return &Engine{
		modules:  map[string]*module{},
		services: map[string]*service{},
		probes:   map[string]*probe{},
		caps:     map[string]provider{},
		pools:    map[string]*service{},
		leases:   map[LeaseID]*lease{},
		attempts: map[string]int{},
		ended:    map[LeaseID]string{},

		offPlatform: map[string]string{},
		offline:     map[string]string{},
	}
}

// Now is the time of the last step.
func (e *Engine) Now() time.Time { return e.now }

// Step applies one event at time now and returns the effects, in the order
// they must be carried out (see the package doc for the persistence rule).
// The returned slice, and the *RunOp, *SetTimer and *CancelTimer effects in
// it, are reused by the next Step: a caller that keeps one past it copies
// it.
func (e *Engine) Step(now time.Time, ev Event) []Effect {
	e.out = e.out[:0]
	e.runOps.reset()
	e.timers.reset()
	e.cancels.reset()
	if now.After(e.now) {
		e.now = now
	}
	if _, isBoot := ev.(Boot); !isBoot && !e.booted {
		e.note("engine", "%s before boot ignored", ev.EventName())
		return e.out
	}
	switch ev := ev.(type) {
	case Boot:
		e.boot(ev)
	case Reload:
		e.reload(ev.Modules, ev.Reason)
	case Acquire:
		e.acquire(ev)
	case Renew:
		e.renew(ev.Lease)
	case Release:
		e.release(ev.Lease)
	case *OpDone:
		e.opDone(ev)
	case Fire:
		e.fire(ev.Timer)
	case ContainerEmptied:
		if s := e.services[ev.Service.String()]; s != nil {
			e.containerEmptied(s)
			e.setContained(s, false)
			s.occupied = false
		}
	case ContainerPopulated:
		if s := e.services[ev.Service.String()]; s != nil {
			e.setContained(s, true)
		}
	case MemberExited:
		if s := e.services[ev.Service.String()]; s != nil {
			e.memberExited(s, ev.Killed)
		}
	case Paused:
		e.paused(ev.Length)
	case Doctor:
		e.doctor(ev.Reason)
	case MemoryPressure:
		e.memoryPressure()
	case Reset:
		e.reset(ev.Service)
	case ReapNow:
		e.reapNow(ev.Ticket)
	default:
		e.note("engine", "unknown event %T ignored", ev)
	}
	e.settle()
	for e.reapSettled() {
		e.settle()
	}
	return e.out
}

// settle runs reconciles and admissions until nothing more changes.
func (e *Engine) settle() {
	// The dirty list is consumed by index so that its array is reused
	// from step to step.
	for i := 0; i < len(e.dirty) || e.admitDirty; {
		if e.admitDirty {
			e.admitDirty = false
			e.admitWaiting()
			continue
		}
		a := e.dirty[i]
		e.dirty[i] = nil
		i++
		a.base().dirty = false
		a.reconcile(e)
	}
	e.dirty = e.dirty[:0]
}

func (e *Engine) markDirty(a actor) {
	if b := a.base(); !b.dirty {
		b.dirty = true
		e.dirty = append(e.dirty, a)
	}
}

func (e *Engine) emit(f Effect) { e.out = append(e.out, f) }

func (e *Engine) note(subject, format string, args ...any) {
	e.emit(Note{Subject: subject, Text: fmt.Sprintf(format, args...)})
}

// warn is a note of something that failed, which svcrun copes with.
func (e *Engine) warn(subject, format string, args ...any) {
	e.emit(Note{Subject: subject, Text: fmt.Sprintf(format, args...), Level: NoteWarn})
}

// alarm is a note of something a person must look at.
func (e *Engine) alarm(subject, format string, args ...any) {
	e.emit(Note{Subject: subject, Text: fmt.Sprintf(format, args...), Level: NoteError})
}

func (e *Engine) setTimer(base uint32, kind TimerKind, subject string, at time.Time) {
	t := e.timers.next()
	*t = SetTimer{Key: TimerKey{Kind: kind, Subject: subject, Slot: base + uint32(kind)}, At: at}
	e.emit(t)
}

func (e *Engine) cancelTimer(base uint32, kind TimerKind, subject string) {
	c := e.cancels.next()
	*c = CancelTimer{Key: TimerKey{Kind: kind, Subject: subject, Slot: base + uint32(kind)}}
	e.emit(c)
}

// slotBase gives an owner (service, probe, lease) its range of timer slots;
// 0 belongs to the node-wide timers. Lease bases are recycled.
func (e *Engine) slotBase() uint32 {
	if n := len(e.freeBases); n > 0 {
		b := e.freeBases[n-1]
		e.freeBases = e.freeBases[:n-1]
		return b
	}
	e.nextBase += timerKinds
	return e.nextBase
}

func (e *Engine) fire(k TimerKey) {
	switch k.Kind {
	case TimerReap:
		e.reapTimer()
	case TimerDoctor:
		e.doctorTimer()
	case TimerProbe:
		if p := e.probes[k.Subject]; p != nil && p.mod.enabled {
			p.due = true
			e.markDirty(p)
		}
	case TimerLeaseWait:
		e.leaseWaitOver(LeaseID(k.Subject))
	case TimerLeaseTTL:
		e.leaseTTLOver(LeaseID(k.Subject))
	default:
		if s := e.timerService(k); s != nil {
			e.serviceTimer(s, k.Kind)
		}
	}
}

// timerService is the service of a service timer, as e.services[k.Subject]
// is, found by the key's slot when its owner is still that service.
func (e *Engine) timerService(k TimerKey) *service {
	if i := int(k.Slot / timerKinds); i < len(e.slotServices) {
		if s := e.slotServices[i]; s != nil && !s.forgotten && s.name == k.Subject {
			return s
		}
	}
	return e.services[k.Subject]
}
