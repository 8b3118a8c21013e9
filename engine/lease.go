package engine

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/oarbank/svcrun/manifest"
)

type lease struct {
	id      LeaseID
	slot    uint32 // timer slot base
	job     string
	attempt string
	req     Requirements
	ttl     time.Duration

	services []*service // needed, sorted by name, unique
	probes   []*probe
	// grants are the tokens it holds, each on the service that granted
	// them: a pool name may later be offered by another service (its
	// module disabled, another enabled), whose tokens these are not.
	grants []grant

	// waitless: acquired with no wait, it waits only while the thaw checks
	// of its services run, the check being part of its admission.
	waitless   bool
	askedAt    time.Time // when the acquire came
	waitUntil  time.Time // its deadline, while it waits
	admitted   bool
	admittedAt time.Time
	expires    time.Time
}

// grant is n tokens of a pool reserved on a service.
type grant struct {
	svc  *service
	pool string
	n    int64
}

func (l *lease) record() LeaseRecord {
	return LeaseRecord{ID: l.id, Job: l.job, Attempt: l.attempt, Requirements: l.req, TTL: l.ttl, Expires: l.expires,
		Admitted: l.admittedAt}
}

// resolve finds the services and probes a lease needs, or says why it can
// never be admitted.
func (e *Engine) resolve(req Requirements) (svcs []*service, prbs []*probe, reason string) {
	svcs, prbs, reason = e.lookup(req)
	if reason != "" {
		return nil, nil, reason
	}
	for _, s := range svcs {
		if reason := e.neverUsable(s); reason != "" {
			return nil, nil, reason
		}
	}
	if reason := e.overOffer(req); reason != "" {
		return nil, nil, reason
	}
	for _, p := range prbs {
		if !p.mod.enabled {
			return nil, nil, fmt.Sprintf("capability %q: module %s is disabled", p.spec.Name, p.mod.name)
		}
	}
	return svcs, prbs, ""
}

// lookup finds the providers of req's capabilities and pools: services
// sorted by name and unique, probes in the order asked. It stops at the
// first one missing and says why.
func (e *Engine) lookup(req Requirements) (svcs []*service, prbs []*probe, reason string) {
	seen := map[*service]bool{}
	addSvc := func(s *service) {
		if !seen[s] {
			seen[s] = true
			svcs = append(svcs, s)
		}
	}
	for _, c := range req.Capabilities {
		p, ok := e.caps[c]
		switch {
		case ok && p.svc != nil:
			addSvc(p.svc)
		case ok:
			prbs = append(prbs, p.prb)
		default:
			return nil, nil, e.notOffered("capability", "capabilities", c, e.capNames)
		}
	}
	// One slice, no iterator: this runs for every acquire.
	poolNames := make([]string, 0, len(req.Pools)+len(req.NeedsPools))
	for name := range req.Pools {
		poolNames = append(poolNames, name)
	}
	sort.Strings(poolNames)
	for _, name := range poolNames {
		if n := req.Pools[name]; n <= 0 {
			return nil, nil, fmt.Sprintf("pool %q: a reservation needs at least 1 token, got %d", name, n)
		}
	}
	poolNames = append(poolNames, req.NeedsPools...)
	sort.Strings(poolNames)
	for _, name := range poolNames {
		s, ok := e.pools[name]
		switch {
		case ok:
			addSvc(s)
		default:
			return nil, nil, e.notOffered("pool", "pools", name, e.poolNames)
		}
	}
	slices.SortFunc(svcs, func(a, b *service) int { return strings.Compare(a.name, b.name) })
	return svcs, prbs, ""
}

// neverUsable says why waiting for s is pointless, or "".
func (e *Engine) neverUsable(s *service) string {
	switch {
	case !s.mod.enabled:
		return fmt.Sprintf("service %s: module %s is disabled", s.name, s.mod.name)
	case s.removed:
		return fmt.Sprintf("service %s was removed from its module", s.name)
	case s.unhealthy:
		return s.unhealthyReason()
	case s.spec.ReservesHostMemory && s.memGB > e.cfg.MemoryBudgetGB:
		return fmt.Sprintf("service %s reserves %v GB, more than the node's memory budget of %v GB", s.name, s.memGB,
			e.cfg.MemoryBudgetGB)
	}
	return ""
}

func (e *Engine) known(what string, names []string) string {
	if len(names) == 0 {
		return " (it offers no " + what + ")"
	}
	if len(names) > 8 {
		names = append(names[:8:8], "...")
	}
	return " (" + what + ": " + strings.Join(names, ", ") + ")"
}

func (e *Engine) capNames() []string { return slices.Sorted(maps.Keys(e.caps)) }

// poolNames is sized once, not grown as slices.Sorted does: every status
// view lists the pools.
func (e *Engine) poolNames() []string {
	names := make([]string, 0, len(e.pools))
	for name := range e.pools {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

func (e *Engine) acquire(a Acquire) {
	reject := func(reason string) {
		e.emit(Rejected{Lease: a.Lease, Reason: reason})
	}
	switch {
	case a.Lease == "":
		reject("a lease needs an id")
		return
	case e.leases[a.Lease] != nil:
		reject(fmt.Sprintf("lease %s already exists", a.Lease))
		return
	case a.Attempt == "":
		reject("a lease needs an attempt id")
		return
	case a.Wait < 0 || a.TTL < 0:
		reject("wait and ttl must not be negative")
		return
	case e.attempts[a.Attempt] > 0 && e.acquireAgain(a):
		return
	}
	svcs, prbs, reason := e.resolve(a.Requirements)
	if reason != "" {
		reject(reason)
		return
	}
	l := &lease{id: a.Lease, slot: e.slotBase(), job: a.Job, attempt: a.Attempt, req: a.Requirements, ttl: a.TTL,
		services: svcs, probes: prbs, askedAt: e.now, waitUntil: e.now.Add(a.Wait)}
	e.leases[l.id] = l
	e.attempts[l.attempt]++
	for _, s := range svcs {
		s.waiting++
		e.markDirty(s)
	}
	e.waiting = append(e.waiting, l)
	e.admitWaiting()
	if l.admitted {
		return
	}
	if a.Wait == 0 {
		e.noWait(l)
		return
	}
	e.setTimer(l.slot, TimerLeaseWait, string(l.id), l.waitUntil)
}

// noWait answers a waiting lease acquired without a wait: rejected now,
// unless it waits only for the thaw checks of its services.
func (e *Engine) noWait(l *lease) {
	if e.awaitsCheck(l) {
		l.waitless = true
		return
	}
	e.dropWaiting(l, e.waitingReason(l))
}

// acquireAgain answers an acquire of an attempt that already has a lease,
// and says whether it did. A caller whose answer was lost (svcrun killed
// between storing the lease and answering, or the connection cut) asks
// again with the same attempt: it gets the lease already admitted, its TTL
// restarted, rather than a second lease, while the first would pin its
// services with nobody to release it. A request of the attempt still
// waiting is taken over by the new one, which keeps its place in line: its
// caller is most likely gone (a caller that is not gets a rejection that
// says why). Asking for something else under the same attempt is refused:
// an attempt holds one lease.
func (e *Engine) acquireAgain(a Acquire) bool {
	// Stores written before this rule may hold several leases of an
	// attempt, all admitted (a waiting request is alone in its attempt:
	// every later acquire of the attempt comes here): one that matches
	// wins, then the lowest id, so that replays choose alike.
	var l *lease
	rank := func(x *lease) int {
		r := 0
		if sameRequest(x, a) {
			r++
		}
		return r
	}
	for _, x := range e.leases {
		if x.attempt != a.Attempt {
			continue
		}
		if l == nil || rank(x) > rank(l) || rank(x) == rank(l) && x.id < l.id {
			l = x
		}
	}
	if l == nil {
		return false
	}
	if !sameRequest(l, a) {
		state := "waits for admission as"
		if l.admitted {
			state = "holds"
		}
		e.emit(Rejected{Lease: a.Lease, Reason: fmt.Sprintf("attempt %s already %s lease %s for %s; this acquire asks "+
			"for %s: an attempt holds one lease, so release %s first or use another attempt id", a.Attempt, state, l.id,
			describeRequest(l.job, l.req, l.ttl), describeRequest(a.Job, a.Requirements, a.TTL), l.id)})
		return true
	}
	if l.admitted {
		if l.ttl > 0 {
			l.expires = e.now.Add(l.ttl)
			e.setTimer(l.slot, TimerLeaseTTL, string(l.id), l.expires)
			e.emit(PutLease{Lease: l.record()})
		}
		names := make([]string, len(l.services))
		for i, s := range l.services {
			names[i] = s.name
		}
		e.emit(AlreadyHeld{Lease: a.Lease, Held: l.id, Services: names, Expires: l.expires})
		return true
	}
	e.cancelTimer(l.slot, TimerLeaseWait, string(l.id))
	e.emit(Rejected{Lease: l.id,
		Reason: fmt.Sprintf("superseded: attempt %s asked again (request %s), which takes this request's place in line",
			a.Attempt, a.Lease)})
	delete(e.leases, l.id)
	l.id = a.Lease
	e.leases[l.id] = l
	l.waitless = false
	if a.Wait == 0 {
		e.noWait(l)
		return true
	}
	// It keeps its place in line (askedAt) and gets the new deadline.
	l.waitUntil = e.now.Add(a.Wait)
	e.setTimer(l.slot, TimerLeaseWait, string(l.id), l.waitUntil)
	return true
}

// sameRequest says a asks for what l was asked for: the same job, TTL and
// requirements (lists compared as sets).
func sameRequest(l *lease, a Acquire) bool {
	if l.job != a.Job || l.ttl != a.TTL || len(l.req.Pools) != len(a.Pools) ||
		!sameSet(l.req.Capabilities, a.Capabilities) || !sameSet(l.req.NeedsPools, a.NeedsPools) {
		return false
	}
	for name, n := range l.req.Pools {
		if m, ok := a.Pools[name]; !ok || m != n {
			return false
		}
	}
	return true
}

func sameSet(x, y []string) bool {
	in := make(map[string]bool, len(x))
	for _, v := range x {
		in[v] = true
	}
	for _, v := range y {
		if !in[v] {
			return false
		}
	}
	out := make(map[string]bool, len(y))
	for _, v := range y {
		out[v] = true
	}
	return len(in) == len(out)
}

// describeRequest renders what a lease asks for, in the words of a
// scenario's acquire line ("job=j cap=kv pool=slots:1 ttl=30s").
func describeRequest(job string, req Requirements, ttl time.Duration) string {
	var parts []string
	if job != "" {
		parts = append(parts, "job="+job)
	}
	if len(req.Capabilities) > 0 {
		parts = append(parts, "cap="+strings.Join(req.Capabilities, ","))
	}
	if len(req.Pools) > 0 {
		var pools []string
		for _, name := range slices.Sorted(maps.Keys(req.Pools)) {
			pools = append(pools, fmt.Sprintf("%s:%d", name, req.Pools[name]))
		}
		parts = append(parts, "pool="+strings.Join(pools, ","))
	}
	if len(req.NeedsPools) > 0 {
		parts = append(parts, "needs="+strings.Join(req.NeedsPools, ","))
	}
	if ttl > 0 {
		parts = append(parts, "ttl="+ttl.String())
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, " ")
}

// admitWaiting admits waiting leases in FIFO order. A lease blocked on a
// pool's tokens blocks the later leases that want that pool, so that a
// stream of small requests cannot starve a large one.
func (e *Engine) admitWaiting() {
	var blocked map[string]bool
	for i := 0; i < len(e.waiting); {
		l := e.waiting[i]
		if e.tryAdmit(l, blocked) {
			continue // tryAdmit removed it (never one over the offer: its tokens exceed the capacity)
		}
		if reason := e.overOffer(l.req); reason != "" {
			e.dropWaiting(l, reason) // its pool's offer shrank: it would block the pool for ever
			continue
		}
		if l.waitless && !e.awaitsCheck(l) {
			e.dropWaiting(l, e.waitingReason(l)) // checked, and not admissible
			continue
		}
		if e.readyBarTokens(l) { // it lacks only tokens: later requests for its pools wait behind it
			if blocked == nil {
				blocked = map[string]bool{}
			}
			for p := range l.req.Pools {
				blocked[p] = true
			}
		}
		i++
	}
}

// tryAdmit admits l if every service and probe it needs is usable and its
// tokens are free.
func (e *Engine) tryAdmit(l *lease, blocked map[string]bool) bool {
	if !e.readyBarTokens(l) {
		return false
	}
	for name, n := range l.req.Pools {
		if blocked[name] || e.free(name) < n {
			return false
		}
	}
	e.removeWaiting(l)
	l.admitted = true
	l.admittedAt = e.now
	e.reserve(l)
	names := make([]string, len(l.services))
	for i, s := range l.services {
		s.waiting--
		s.refs++
		s.lastUsed = e.now
		names[i] = s.name
		e.markDirty(s)
	}
	e.cancelTimer(l.slot, TimerLeaseWait, string(l.id))
	if l.ttl > 0 {
		l.expires = e.now.Add(l.ttl)
		e.setTimer(l.slot, TimerLeaseTTL, string(l.id), l.expires)
	}
	e.emit(PutLease{Lease: l.record()})
	e.emit(Admitted{Lease: l.id, Services: names})
	return true
}

// overOffer says why req asks a pool for more tokens than its service
// offers in all, or "". Such a request is rejected at once: waiting would
// not help it, and as the first in line it would hold back every later
// request for the pool. Only the offer of a usable (running, ready,
// healthy) service fingerprinted since it runs counts: a stopped one may
// report what it can provide only once started, so a request for its pool
// waits for the start and the fingerprint that follows it.
func (e *Engine) overOffer(req Requirements) string {
	over := ""
	for name, n := range req.Pools {
		// Map order: the first pool over in name order is named, so that
		// the reason is the same from run to run. No sorting on the
		// admission path, which runs this for every waiting lease.
		if s := e.pools[name]; s != nil && s.usable() && s.fpRunning && n > s.pools[name] && (over == "" || name < over) {
			over = name
		}
	}
	if over == "" {
		return ""
	}
	s := e.pools[over]
	return fmt.Sprintf("pool %s: needs %d token(s), but %s offers %d in all (its latest fingerprint while running)",
		over, req.Pools[over], s.name, s.pools[over])
}

// capacity is what a pool offers now: the latest fingerprint of its
// service, while that service is usable.
func (e *Engine) capacity(pool string) int64 {
	s := e.pools[pool]
	if s == nil || !s.usable() {
		return 0
	}
	return s.pools[pool]
}

// reservedOn is how many tokens of pool the service that offers it now
// has granted.
func (e *Engine) reservedOn(pool string) int64 {
	if s := e.pools[pool]; s != nil {
		return s.reserved[pool]
	}
	return 0
}

// free is how many tokens of pool can be reserved now.
func (e *Engine) free(pool string) int64 { return e.capacity(pool) - e.reservedOn(pool) }

// reserve takes l's tokens on the services that offer its pools now.
func (e *Engine) reserve(l *lease) {
	grants := l.grants[:0]
	for name, n := range l.req.Pools {
		grants = append(grants, grant{svc: e.pools[name], pool: name, n: n})
	}
	e.take(l, grants)
}

// take reserves grants for l.
func (e *Engine) take(l *lease, grants []grant) {
	for _, g := range grants {
		if g.svc.reserved == nil {
			g.svc.reserved = map[string]int64{}
		}
		g.svc.reserved[g.pool] += g.n
	}
	l.grants = grants
}

// unreserve gives l's tokens back to the services that granted them.
func (e *Engine) unreserve(l *lease) {
	for _, g := range l.grants {
		if g.svc.reserved[g.pool] -= g.n; g.svc.reserved[g.pool] == 0 {
			delete(g.svc.reserved, g.pool)
		}
	}
	l.grants = l.grants[:0]
}

// readyBarTokens says everything l needs is there but pool tokens: its
// services are admissible, its probes usable and its needs_pools have
// capacity (needs_pools take no tokens, so FIFO blocking does not apply to
// them).
func (e *Engine) readyBarTokens(l *lease) bool {
	for _, s := range l.services {
		if !s.admissible() {
			return false
		}
	}
	return e.probesAndNeeds(l)
}

// awaitsCheck says l would be admitted now but for the thaw checks of its
// services: at least one is frozen or not checked since its thaw, the
// others admissible, its tokens free.
func (e *Engine) awaitsCheck(l *lease) bool {
	checking := false
	for _, s := range l.services {
		if s.checking() {
			checking = true
		} else if !s.admissible() {
			return false
		}
	}
	if !checking || !e.probesAndNeeds(l) {
		return false
	}
	for name, n := range l.req.Pools {
		if e.free(name) < n {
			return false
		}
	}
	return true
}

// probesAndNeeds says l's probes are usable and its needs_pools have
// capacity.
func (e *Engine) probesAndNeeds(l *lease) bool {
	for _, p := range l.probes {
		if !p.usable() {
			return false
		}
	}
	for _, name := range l.req.NeedsPools {
		if e.capacity(name) <= 0 {
			return false
		}
	}
	return true
}

func (e *Engine) removeWaiting(l *lease) {
	for i, w := range e.waiting {
		if w == l {
			e.waiting = append(e.waiting[:i], e.waiting[i+1:]...)
			return
		}
	}
}

// dropWaiting ends a waiting lease with a rejection.
func (e *Engine) dropWaiting(l *lease, reason string) {
	e.endWaiting(l)
	e.emit(Rejected{Lease: l.id, Reason: reason})
	e.unblockMemory()
}

// endWaiting forgets a waiting lease: its place in line, its claim on its
// services and its wait timer. Its caller answers the holder.
func (e *Engine) endWaiting(l *lease) {
	e.removeWaiting(l)
	e.forgetLease(l)
	for _, s := range l.services {
		s.waiting--
		e.markDirty(s)
	}
	e.cancelTimer(l.slot, TimerLeaseWait, string(l.id))
	e.admitDirty = true
}

func (e *Engine) forgetLease(l *lease) {
	delete(e.leases, l.id)
	// The base is free again: its timers were cancelled or fired (a
	// cancel effect of this step precedes any new timer of the base).
	e.freeBases = append(e.freeBases, l.slot)
	for _, s := range l.services {
		reapMark(s, "a lease that used it ended")
	}
	if e.attempts[l.attempt]--; e.attempts[l.attempt] <= 0 {
		delete(e.attempts, l.attempt)
	}
}

// failWaitingFor rejects the waiting leases that need the service s or
// the probe p (either may be nil).
func (e *Engine) failWaitingFor(s *service, p *probe, reason string) {
	for _, l := range slices.Clone(e.waiting) {
		if s != nil && slices.Contains(l.services, s) || p != nil && slices.Contains(l.probes, p) {
			e.dropWaiting(l, reason)
		}
	}
}

func (e *Engine) leaseWaitOver(id LeaseID) {
	l := e.leases[id]
	if l == nil || l.admitted || e.now.Before(l.waitUntil) {
		return // a stale fire: a pause moved the deadline
	}
	e.dropWaiting(l, "not admitted in time: "+e.waitingReason(l))
}

// whyWaiting says, for people, what a waiting lease is waiting for.
func (e *Engine) waitingReason(l *lease) string {
	// A frozen service's thaw check is no obstacle of its own: it is
	// named only when nothing else keeps l out, else the pool tokens held
	// by others would hide behind it.
	var parts, checks []string
	for _, s := range l.services {
		switch {
		case s.admissible():
		case s.checking():
			checks = append(checks, e.describeWait(s))
		default:
			parts = append(parts, e.describeWait(s))
		}
	}
	for _, p := range l.probes {
		switch {
		case p.usable():
		case !p.reported:
			parts = append(parts, fmt.Sprintf("capability %s: its probe has not reported yet", p.spec.Name))
		default:
			parts = append(parts, fmt.Sprintf("capability %s: its probe reports unhealthy: %s", p.spec.Name, p.message))
		}
	}
	if len(parts) == 0 {
		for _, n := range slices.Sorted(maps.Keys(l.req.Pools)) {
			if e.free(n) < l.req.Pools[n] {
				parts = append(parts, fmt.Sprintf("pool %s: needs %d token(s), %d of %d reserved", n, l.req.Pools[n],
					e.reservedOn(n), e.capacity(n)))
			}
		}
		for _, n := range l.req.NeedsPools {
			if e.capacity(n) <= 0 {
				parts = append(parts, fmt.Sprintf("pool %s: no capacity", n))
			}
		}
	}
	if len(parts) == 0 {
		parts = checks
	}
	if len(parts) == 0 {
		parts = append(parts, "earlier requests for the same pools wait first")
	}
	return strings.Join(parts, "; ")
}

func (e *Engine) describeWait(s *service) string {
	switch {
	case s.checking() && s.prepFailures > 0:
		return fmt.Sprintf("%s was frozen: its status is checked before an admission, and svcrun could not prepare "+
			"the check (%s), a fault of this node, not of the module: tried again", s.name, s.prepWhy)
	case s.checking():
		return fmt.Sprintf("%s was frozen: its status is checked before an admission", s.name)
	case s.state == sReady && s.fpKnown && !s.fpHealthy, s.startWithheld():
		return fmt.Sprintf("%s reports unhealthy: %s", s.name, s.fpMessage)
	case (s.state == sStopped || s.state == sStopping) && s.prepUntil.After(e.now):
		return fmt.Sprintf("%s: svcrun could not prepare its ops (%s), a fault of this node, not of the module: "+
			"tried again at %s", s.name, s.prepWhy, s.prepUntil.Format(time.RFC3339))
	case s.state == sUnknown && s.prepFailures > 0:
		return fmt.Sprintf("%s: svcrun could not prepare its fingerprint (%s), a fault of this node, not of the module: "+
			"whether it runs is unknown until one runs", s.name, s.prepWhy)
	case s.state == sWaitReady && s.prepFailures > 0:
		return fmt.Sprintf("%s: started, but svcrun could not prepare its ready (%s), a fault of this node, not of the "+
			"module: ready is tried again", s.name, s.prepWhy)
	case (s.state == sStopped || s.state == sStopping) && s.backoffUntil.After(e.now):
		return fmt.Sprintf("%s is backing off after failure %d/%d (%s) until %s", s.name, s.failures,
			s.spec.Restart.MaxFailures, s.reason, s.backoffUntil.Format(time.RFC3339))
	case s.state == sUnknown && s.fpFailures > 0:
		return fmt.Sprintf("%s: its fingerprint failed %d time(s), so whether it runs is unknown: not started until a "+
			"fingerprint answers", s.name, s.fpFailures)
	case s.state == sStopped && s.spec.Lifecycle == manifest.Manual:
		return fmt.Sprintf("%s is not running, and svcrun never starts a manual service", s.name)
	case s.state == sStopped && s.spec.ReservesHostMemory && e.memUnknown > 0:
		return fmt.Sprintf("%s waits for memory: %s may run, and its memory is counted only once it is fingerprinted",
			s.name, e.firstMemUnknown())
	case s.state == sStopped && s.spec.ReservesHostMemory && !e.fits(s):
		return fmt.Sprintf("%s waits for memory: it reserves %v GB, %v of %v GB in use", s.name, s.memGB, round2(e.memUsed),
			e.cfg.MemoryBudgetGB)
	}
	return fmt.Sprintf("%s is %s", s.name, s.state)
}

// firstMemUnknown names the first service whose memory is not counted
// before its fingerprint.
func (e *Engine) firstMemUnknown() string {
	for _, s := range e.svcOrder {
		if s.holdsStarts() {
			return s.name
		}
	}
	return ""
}

func round2(x float64) float64 { return float64(int64(x*100+0.5)) / 100 }

func (e *Engine) release(id LeaseID) {
	l := e.leases[id]
	if l == nil {
		e.unknownLease(id)
		return
	}
	if !l.admitted {
		e.endWaiting(l)
		e.emit(Released{Lease: id})
		return
	}
	e.endLease(l)
	e.emit(Released{Lease: id})
}

// endLease releases an admitted lease: its tokens and references.
func (e *Engine) endLease(l *lease) {
	e.forgetLease(l)
	e.unreserve(l)
	for _, s := range l.services {
		s.refs--
		s.lastUsed = e.now
		if s.yieldsByLRU() {
			// Its place in the order of yielding survives a restart.
			e.persistService(s)
		}
		e.markDirty(s)
	}
	// A service just left idle may be yielded to one waiting for memory.
	e.unblockMemory()
	if l.ttl > 0 {
		e.cancelTimer(l.slot, TimerLeaseTTL, string(l.id))
	}
	e.emit(DeleteLease{Lease: l.id})
	e.admitDirty = true
}

func (e *Engine) renew(id LeaseID) {
	l := e.leases[id]
	if l == nil || !l.admitted {
		e.unknownLease(id)
		return
	}
	if l.ttl > 0 {
		l.expires = e.now.Add(l.ttl)
		e.setTimer(l.slot, TimerLeaseTTL, string(l.id), l.expires)
		e.emit(PutLease{Lease: l.record()})
	}
	e.emit(Renewed{Lease: id, Expires: l.expires})
}

func (e *Engine) leaseTTLOver(id LeaseID) {
	l := e.leases[id]
	if l == nil || !l.admitted || l.ttl == 0 || e.now.Before(l.expires) {
		return
	}
	e.warn("lease "+string(id), "expired: not renewed within %v", l.ttl)
	e.endLease(l)
	e.emit(Expired{Lease: id})
}

// restoreLease takes back an admitted lease from the store at boot. Its
// services are referenced again, so that adoption keeps them up. What it
// asked for is found as after a reload (see providers), a disabled
// module's service or probe too, as a lease admitted before a disable
// keeps it; a lease that needs what nobody offers any more (its module or
// service removed while svcrun was down) ends as a run-time removal ends
// it, rather than pinning what else it named.
func (e *Engine) restoreLease(r LeaseRecord) {
	l := &lease{id: r.ID, slot: e.slotBase(), job: r.Job, attempt: r.Attempt, req: r.Requirements, ttl: r.TTL,
		admitted: true, admittedAt: r.Admitted, expires: r.Expires}
	svcs, prbs, grants, reason := e.providers(l)
	l.services, l.probes = svcs, prbs
	e.leases[l.id] = l
	e.attempts[l.attempt]++
	e.take(l, grants)
	for _, s := range svcs {
		s.refs++
		s.lastUsed = e.now
	}
	if l.ttl > 0 && !e.now.Before(l.expires) {
		e.note("lease "+string(l.id), "expired while svcrun was down")
		e.endLease(l)
		e.emit(Expired{Lease: l.id})
		return
	}
	if reason != "" {
		e.endWithReason(l, "changed while svcrun was down: "+reason)
		return
	}
	if l.ttl > 0 {
		e.setTimer(l.slot, TimerLeaseTTL, string(l.id), l.expires)
	}
}

// notOffered says why no service or probe offers the capability or pool
// name: its platform, its module's state, or nobody declares it (with the
// names that are offered, for a typo).
func (e *Engine) notOffered(kind, kinds, name string, offered func() []string) string {
	key := kind + " " + name
	switch {
	case e.offPlatform[key] != "":
		return fmt.Sprintf("%s %q: %s", kind, name, e.offPlatform[key])
	case e.offline[key] != "":
		return e.offline[key]
	}
	return fmt.Sprintf("no module on this node offers %s %q%s", kind, name, e.known(kinds, offered()))
}

// reresolve makes every lease need exactly the services and probes that
// offer what it asked for now, after a reload changed who offers what (a
// capability or pool moved to another service or to a probe, or dropped).
// A waiting lease is checked as a new acquire would be and rejected with
// the reason if it could never be admitted; an admitted one keeps each
// provider that still offers what it asked for (its tokens stay where they
// were granted), follows what moved, and ends with the reason, as on a
// service's removal, when nobody offers something it needs any more.
func (e *Engine) reresolve() {
	for _, l := range slices.Clone(e.waiting) {
		svcs, prbs, reason := e.resolve(l.req)
		if reason != "" {
			e.dropWaiting(l, reason)
			continue
		}
		e.repoint(l, svcs, prbs, nil)
	}
	ids := make([]LeaseID, 0, len(e.leases))
	for id, l := range e.leases {
		if l.admitted {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		l := e.leases[id]
		svcs, prbs, grants, reason := e.providers(l)
		if reason != "" {
			e.endWithReason(l, reason)
			continue
		}
		e.repoint(l, svcs, prbs, grants)
	}
}

// providers finds, for an admitted lease, the service or probe that
// offers each thing it asked for: the one it has, while that still offers
// it; else the enabled one that offers it now; else, as for a lease on a
// module that is then disabled, a disabled module's. reason says what
// nobody offers.
func (e *Engine) providers(l *lease) (svcs []*service, prbs []*probe, grants []grant, reason string) {
	addSvc := func(s *service) {
		if !slices.Contains(svcs, s) {
			svcs = append(svcs, s)
		}
	}
	for _, c := range l.req.Capabilities {
		s, p := e.capOffering(l, c)
		switch {
		case s != nil:
			addSvc(s)
		case p != nil:
			prbs = append(prbs, p)
		default:
			return nil, nil, nil, e.notOffered("capability", "capabilities", c, e.capNames)
		}
	}
	for _, name := range l.req.NeedsPools {
		s := e.offering(l, name)
		if s == nil {
			return nil, nil, nil, e.notOffered("pool", "pools", name, e.poolNames)
		}
		addSvc(s)
	}
	for _, name := range slices.Sorted(maps.Keys(l.req.Pools)) {
		// Its tokens are where they were granted while that service
		// offers the pool; they follow the pool where it moved.
		s := e.offering(l, name)
		if s == nil {
			return nil, nil, nil, e.notOffered("pool", "pools", name, e.poolNames)
		}
		addSvc(s)
		grants = append(grants, grant{svc: s, pool: name, n: l.req.Pools[name]})
	}
	slices.SortFunc(svcs, func(a, b *service) int { return strings.Compare(a.name, b.name) })
	return svcs, prbs, grants, ""
}

// offering is the service that offers pool name to l: one of its
// services that still declares it, else the enabled one that offers it,
// else a disabled module's.
func (e *Engine) offering(l *lease, name string) *service {
	declares := func(s *service) bool { return !s.gone() && slices.Contains(s.spec.Pools, name) }
	if i := slices.IndexFunc(l.services, declares); i >= 0 {
		return l.services[i]
	}
	if s := e.pools[name]; s != nil {
		return s
	}
	if i := slices.IndexFunc(e.svcOrder, declares); i >= 0 {
		return e.svcOrder[i]
	}
	return nil
}

// capOffering is the service or probe that establishes capability c for
// l, found as offering finds a pool's service.
func (e *Engine) capOffering(l *lease, c string) (*service, *probe) {
	svcDeclares := func(s *service) bool { return !s.gone() && slices.Contains(s.spec.Capabilities, c) }
	prbDeclares := func(p *probe) bool { return !p.removed && p.spec.Name == c }
	if i := slices.IndexFunc(l.services, svcDeclares); i >= 0 {
		return l.services[i], nil
	}
	if i := slices.IndexFunc(l.probes, prbDeclares); i >= 0 {
		return nil, l.probes[i]
	}
	if p, ok := e.caps[c]; ok {
		return p.svc, p.prb
	}
	if i := slices.IndexFunc(e.svcOrder, svcDeclares); i >= 0 {
		return e.svcOrder[i], nil
	}
	if i := slices.IndexFunc(e.prbOrder, prbDeclares); i >= 0 {
		return nil, e.prbOrder[i]
	}
	return nil, nil
}

// repoint gives a lease the services and probes it needs now, moving its
// claim (a reference when admitted, a wait otherwise) and, when admitted,
// its tokens to grants.
func (e *Engine) repoint(l *lease, svcs []*service, prbs []*probe, grants []grant) {
	same := slices.Equal(svcs, l.services) && slices.Equal(prbs, l.probes) &&
		(!l.admitted || slices.Equal(grants, l.grants))
	if same {
		return
	}
	for _, s := range l.services {
		if slices.Contains(svcs, s) {
			continue
		}
		if l.admitted {
			s.refs--
			s.lastUsed = e.now
			reapMark(s, "a lease that used it ended")
		} else {
			s.waiting--
		}
		e.markDirty(s)
	}
	for _, s := range svcs {
		if slices.Contains(l.services, s) {
			continue
		}
		if l.admitted {
			s.refs++
			s.lastUsed = e.now
		} else {
			s.waiting++
		}
		e.markDirty(s)
	}
	var was []string
	for _, s := range l.services {
		was = append(was, s.name)
	}
	for _, p := range l.probes {
		was = append(was, "probe "+p.name)
	}
	l.services, l.probes = svcs, prbs
	if l.admitted {
		e.unreserve(l)
		e.take(l, grants)
	}
	var now []string
	for _, s := range svcs {
		now = append(now, s.name)
	}
	for _, p := range prbs {
		now = append(now, "probe "+p.name)
	}
	e.note("lease "+string(l.id), "now needs %s (was %s): what it asked for moved", orNothing(now), orNothing(was))
	e.unblockMemory()
	e.admitDirty = true
}

func orNothing(names []string) string {
	if len(names) == 0 {
		return "nothing"
	}
	return strings.Join(names, ", ")
}

// endLeasesNeeding ends the admitted leases that need a service or probe
// matched by svc or prb: nothing will serve them again. Their holders get
// Expired with why, and their next renew or release is told why too.
func (e *Engine) endLeasesNeeding(svc func(*service) bool, prb func(*probe) bool, reason string) {
	var ids []LeaseID
	for id, l := range e.leases {
		if l.admitted && (slices.ContainsFunc(l.services, svc) || slices.ContainsFunc(l.probes, prb)) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		e.endWithReason(e.leases[id], reason)
	}
}

// endWithReason ends an admitted lease nothing will serve again: its
// holder gets Expired with why, and its next renew or release is told
// why too.
func (e *Engine) endWithReason(l *lease, reason string) {
	e.note("lease "+string(l.id), "ended: %s", reason)
	e.endLease(l)
	e.ended[l.id] = reason
	e.emit(Expired{Lease: l.id, Reason: reason})
}

// unknownLease answers a renew or release of a lease the engine does not
// hold, saying why the first time if the engine ended it itself.
func (e *Engine) unknownLease(id LeaseID) {
	reason := e.ended[id]
	delete(e.ended, id)
	e.emit(LeaseUnknown{Lease: id, Reason: reason})
}

// sortedLeases lists the leases by id: the effects of a step come in the
// same order every run.
func (e *Engine) sortedLeases() []*lease {
	ids := slices.Sorted(maps.Keys(e.leases))
	out := make([]*lease, len(ids))
	for i, id := range ids {
		out[i] = e.leases[id]
	}
	return out
}
