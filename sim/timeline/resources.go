package timeline

import (
	"slices"
	"strings"
	"time"

	"github.com/oarbank/svcrun/engine"
	"github.com/oarbank/svcrun/protocol"
)

// valStep is a value from a time on.
type valStep struct {
	at time.Duration
	v  float64
}

// hold is an amount of a resource held (or waited for) by a lease or a
// service over a stretch of time.
type hold struct {
	who      string
	from, to time.Duration
	amount   float64
	open     bool
}

// resLane is a pool's tokens or the memory budget over time: the
// capacity, who holds what, and who waits for how much; the lane shows why
// a lease waits.
type resLane struct {
	name     string
	unit     string
	capacity []valStep
	holds    []hold
	waits    []hold
}

func (r *resLane) open(list *[]hold, at time.Duration, who string, amount float64) {
	*list = append(*list, hold{who: who, from: at, amount: amount, open: true})
}

// close ends who's open holds (or waits); one that lasted no time is
// dropped, as it explains nothing.
func (r *resLane) close(list *[]hold, at time.Duration, who string) {
	out := (*list)[:0]
	for _, h := range *list {
		if h.open && h.who == who {
			h.to, h.open = at, false
			if h.to == h.from {
				continue
			}
		}
		out = append(out, h)
	}
	*list = out
}

func (r *resLane) capAt(at time.Duration) float64 {
	v := 0.0
	for _, c := range r.capacity {
		if c.at > at {
			break
		}
		v = c.v
	}
	return v
}

// resources follows the pools and the memory budget through the trace.
type resources struct {
	pools    map[string]*resLane
	memory   *resLane
	reserves map[string]bool             // services that reserve host memory
	memOf    map[string][]valStep        // their mem_gb over time
	poolsOf  map[string]map[string]int64 // the pools each service last offered
	req      map[string]engine.Acquire   // by lease
	memWait  map[string]bool             // services waiting for memory now
}

func newResources(budget float64) resources {
	return resources{
		pools:    map[string]*resLane{},
		memory:   &resLane{name: "memory", unit: "GB", capacity: []valStep{{0, budget}}},
		reserves: map[string]bool{},
		memOf:    map[string][]valStep{},
		poolsOf:  map[string]map[string]int64{},
		req:      map[string]engine.Acquire{},
		memWait:  map[string]bool{},
	}
}

func (rs *resources) pool(name string) *resLane {
	p := rs.pools[name]
	if p == nil {
		p = &resLane{name: "pool " + name, unit: "token(s)"}
		rs.pools[name] = p
	}
	return p
}

func (rs *resources) acquire(at time.Duration, a engine.Acquire) {
	id := string(a.Lease)
	rs.req[id] = a
	for _, n := range slices.Sorted(mapKeys(a.Pools)) {
		p := rs.pool(n)
		p.open(&p.waits, at, id, float64(a.Pools[n]))
	}
}

func (rs *resources) admitted(at time.Duration, id string) {
	a := rs.req[id]
	for _, n := range slices.Sorted(mapKeys(a.Pools)) {
		p := rs.pool(n)
		p.close(&p.waits, at, id)
		p.open(&p.holds, at, id, float64(a.Pools[n]))
	}
}

func (rs *resources) rejected(at time.Duration, id, reason string) {
	for _, n := range slices.Sorted(mapKeys(rs.req[id].Pools)) {
		p := rs.pool(n)
		p.close(&p.waits, at, id)
	}
	// The start given up with its last waiting lease waits no more.
	for svc := range rs.memWait {
		if strings.Contains(reason, svc+" waits for memory") {
			rs.memoryWaitEnds(at, svc)
		}
	}
}

func (rs *resources) released(at time.Duration, id string) {
	for _, n := range slices.Sorted(mapKeys(rs.req[id].Pools)) {
		p := rs.pool(n)
		p.close(&p.waits, at, id)
		p.close(&p.holds, at, id)
	}
}

// fingerprint takes a service's pools (the capacity) and mem_gb.
func (rs *resources) fingerprint(at time.Duration, svc string, fp *protocol.Fingerprint) {
	old := rs.poolsOf[svc]
	for _, n := range slices.Sorted(mapKeys(fp.Pools)) {
		if v, ok := old[n]; !ok || v != fp.Pools[n] {
			p := rs.pool(n)
			p.capacity = append(p.capacity, valStep{at, float64(fp.Pools[n])})
		}
	}
	for _, n := range slices.Sorted(mapKeys(old)) {
		if _, ok := fp.Pools[n]; !ok {
			p := rs.pool(n)
			p.capacity = append(p.capacity, valStep{at, 0})
		}
	}
	rs.poolsOf[svc] = fp.Pools
	if rs.reserves[svc] {
		mem := 0.0
		if fp.Reserve != nil {
			mem = fp.Reserve.MemGB
		}
		if s := rs.memOf[svc]; len(s) == 0 || s[len(s)-1].v != mem {
			rs.memOf[svc] = append(s, valStep{at, mem})
		}
	}
}

func (rs *resources) memAt(svc string, at time.Duration) float64 {
	v := 0.0
	for _, s := range rs.memOf[svc] {
		if s.at > at {
			break
		}
		v = s.v
	}
	return v
}

func (rs *resources) memoryWait(at time.Duration, svc string) {
	if !rs.memWait[svc] {
		rs.memWait[svc] = true
		rs.memory.open(&rs.memory.waits, at, svc, rs.memAt(svc, at))
	}
}

func (rs *resources) memoryWaitEnds(at time.Duration, svc string) {
	if rs.memWait[svc] {
		delete(rs.memWait, svc)
		rs.memory.close(&rs.memory.waits, at, svc)
	}
}

// charged are the states in which a service's memory counts against the
// budget: from the decision to start it until it is stopped.
var charged = map[string]bool{stStarting: true, stWaitingReady: true, stReady: true, stFrozen: true, stStopping: true}

// finish ends what is still open and derives the memory held from the
// services' bands and their mem_gb.
func (rs *resources) finish(until time.Duration, services map[string]*svcTrack) {
	for _, l := range rs.lanes() {
		for i := range l.holds {
			if l.holds[i].open {
				l.holds[i].to, l.holds[i].open = until, false
			}
		}
		for i := range l.waits {
			if l.waits[i].open {
				l.waits[i].to, l.waits[i].open = until, false
			}
		}
	}
	for _, svc := range slices.Sorted(mapKeys(rs.reserves)) {
		s := services[svc]
		for _, bd := range s.bands {
			if !charged[bd.state] {
				continue
			}
			// A band split where the fingerprint's mem_gb changed.
			cuts := []time.Duration{bd.from}
			for _, m := range rs.memOf[svc] {
				if m.at > bd.from && m.at < bd.to {
					cuts = append(cuts, m.at)
				}
			}
			cuts = append(cuts, bd.to)
			for i := 0; i+1 < len(cuts); i++ {
				mem := rs.memAt(svc, cuts[i])
				if mem <= 0 {
					continue
				}
				h := &rs.memory.holds
				if n := len(*h); n > 0 && (*h)[n-1].who == svc && (*h)[n-1].to == cuts[i] && (*h)[n-1].amount == mem {
					(*h)[n-1].to = cuts[i+1]
					continue
				}
				*h = append(*h, hold{who: svc, from: cuts[i], to: cuts[i+1], amount: mem})
			}
		}
	}
	// Stacked in the order of the services' names, so that a service's
	// block keeps its place above the others.
	slices.SortStableFunc(rs.memory.holds, func(a, b hold) int { return strings.Compare(a.who, b.who) })
}

// lanes are the resource lanes to draw: the memory budget when a service
// reserves memory, then the pools by name.
func (rs *resources) lanes() []*resLane {
	var out []*resLane
	if len(rs.reserves) > 0 {
		out = append(out, rs.memory)
	}
	for _, n := range slices.Sorted(mapKeys(rs.pools)) {
		out = append(out, rs.pools[n])
	}
	return out
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
