package engine

import (
	"time"

	"github.com/oarbank/svcrun/manifest"
	"github.com/oarbank/svcrun/protocol"
)

// probe establishes a capability while its last run reported healthy.
type probe struct {
	actorBase
	spec *manifest.Probe
	due  bool

	reported bool
	healthy  bool
	message  string
	attrs    map[string]any // of the last run; none when it failed
	checked  time.Time      // when the last result came
}

func (p *probe) usable() bool { return p.mod.enabled && p.reported && p.healthy }

func (p *probe) reconcile(e *Engine) {
	if p.op != nil || p.waitSlot || !p.due || !p.mod.enabled || p.removed {
		return
	}
	r := &p.run
	*r = opRun{op: protocol.OpFingerprint, prb: p}
	if e.runOp(p, r, p.target, nil, protocol.DefaultTimeout(protocol.OpFingerprint)) {
		p.op = r
		p.due = false
		e.cancelTimer(p.slot, TimerProbe, p.name)
	}
}

func (e *Engine) probeOpDone(p *probe, o Outcome) {
	p.op = nil
	if !p.mod.enabled || p.removed {
		return
	}
	var healthy bool
	var msg string
	var attrs map[string]any
	if o.Failure == FailNone {
		healthy, msg, attrs = o.Result.Fingerprint.Healthy, o.Result.Fingerprint.Message, o.Result.Fingerprint.Attrs
	} else {
		msg = failText(o)
	}
	if healthy != p.healthy || !p.reported {
		if healthy {
			e.note(p.name, "healthy: capability %s available", p.spec.Name)
		} else {
			e.warn(p.name, "unhealthy: capability %s withdrawn: %s", p.spec.Name, msg)
		}
	}
	p.reported, p.healthy, p.message, p.attrs, p.checked = true, healthy, msg, attrs, e.now
	e.setTimer(p.slot, TimerProbe, p.name, e.now.Add(p.spec.Period))
	e.admitDirty = true
	if p.due {
		e.markDirty(p)
	}
}

func (e *Engine) doctor(reason string) {
	e.note("doctor", "%s: probes run again", reason)
	if e.doctorPending {
		return
	}
	e.doctorPending = true
	e.doctorAt = e.now
	e.setTimer(0, TimerDoctor, "", e.now.Add(e.cfg.DoctorDebounce))
}

// doctorTimer ends a doctor event's debounce: the probes and the watched
// fingerprints run again.
func (e *Engine) doctorTimer() {
	e.doctorPending = false
	for _, p := range e.prbOrder {
		if p.mod.enabled {
			p.due = true
			e.markDirty(p)
		}
	}
	for _, s := range e.svcOrder {
		// One fingerprinted since the doctor event came (at the
		// reload that sent it) is not fingerprinted again.
		if s.fpWatched() && s.enabled() && s.fpRan.Before(e.doctorAt) {
			s.fpDue = true
			e.markDirty(s)
		}
	}
}
