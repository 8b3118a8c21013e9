package engine

import (
	"slices"
	"sort"

	"github.com/oarbank/svcrun/manifest"
)

// memEpsilon absorbs float rounding in sums of reservations.
const memEpsilon = 1e-9

// fits says s can start within the memory budget now.
func (e *Engine) fits(s *service) bool {
	return !s.spec.ReservesHostMemory || e.memUsed+s.memGB <= e.cfg.MemoryBudgetGB+memEpsilon
}

// memoryFor says whether s may start now. When it may not, it asks idle
// yieldable services to stop (least recently used first) if that makes
// room, and s waits for their stops.
func (e *Engine) memoryFor(s *service) bool {
	if e.fits(s) {
		e.unblock(s)
		return true
	}
	need := e.memUsed + s.memGB - e.cfg.MemoryBudgetGB
	var cands []*service
	freeing := 0.0
	for _, c := range e.svcOrder {
		if c == s || !c.spec.ReservesHostMemory || c.memGB <= 0 {
			continue
		}
		if c.state == sStopping {
			freeing += c.memGB // already on its way out
			continue
		}
		if c.state == sReady && c.idle() && c.yieldsByLRU() {
			cands = append(cands, c)
		}
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].lastUsed.Before(cands[j].lastUsed) })
	var chosen []*service
	for _, c := range cands {
		if freeing >= need-memEpsilon {
			break
		}
		chosen = append(chosen, c)
		freeing += c.memGB
	}
	if freeing >= need-memEpsilon {
		for _, c := range chosen {
			e.beginStop(c, "yielding memory to "+s.name)
		}
	} else if !s.memNoted {
		s.memNoted = true
		e.note(s.name, "waits for memory: reserves %v GB, %v of %v GB in use and not enough idle yieldable services",
			s.memGB, round2(e.memUsed), e.cfg.MemoryBudgetGB)
	}
	e.block(s)
	return false
}

// yieldsByLRU says s may yield its memory to a start, least recently used
// first: the services whose last use is stored (ServiceRecord.LastUsed).
// Only they: a store write at every lease's end for every service would
// keep an order nothing reads.
func (s *service) yieldsByLRU() bool {
	return s.spec.ReservesHostMemory && s.spec.Yieldable && s.spec.Lifecycle == manifest.OnDemand
}

func (e *Engine) block(s *service) {
	if !slices.Contains(e.memBlocked, s) {
		e.memBlocked = append(e.memBlocked, s)
	}
}

func (e *Engine) unblock(s *service) {
	s.memNoted = false
	e.memBlocked = slices.DeleteFunc(e.memBlocked, func(x *service) bool { return x == s })
}

// unblockMemory reconsiders services waiting for memory after some was
// freed.
func (e *Engine) unblockMemory() {
	for _, b := range e.memBlocked {
		e.markDirty(b)
	}
}

// memoryPressure answers the host's memory pressure: the idle yieldable
// on_demand services that are ready stop.
func (e *Engine) memoryPressure() {
	n := 0
	for _, s := range e.svcOrder {
		if s.idle() && s.spec.Yieldable && s.state == sReady && s.spec.Lifecycle == manifest.OnDemand {
			e.beginStop(s, "memory pressure")
			n++
		}
	}
	e.note("memory", "host memory pressure: %d idle yieldable service(s) stopped", n)
}
