package clockwork

import "math"

// queue is the timer store shared by Virtual and Real: a binary min-heap of
// (when, seq) entries, plus per-slot arrays holding each timer's event, its
// position in the heap and its generation. The positions make Cancel
// O(log n) without a map; the slots are recycled, so a steady-state push and
// pop allocate nothing.
//
// The position array is kept apart from the events so that the writes a
// sift does on every level land in a dense []int32 (40 KB for 10,000
// timers) rather than in the larger event records.
//
// A TimerID is gen<<32 | slot. A slot's generation grows each time the slot
// is reused; a slot whose generation reaches math.MaxUint32 is retired
// instead of being reused, so an id is never handed out twice (at the cost
// of one slot per 4 billion reuses).
//
// Times are int64 nanoseconds from an origin chosen by the owner.
type queue[E any] struct {
	heap []entry
	evs  []E      // by slot: the event
	pos  []int32  // by slot: index in heap, or posFree / posFired
	gen  []uint32 // by slot: generation of the current or last timer
	free []uint32 // reusable slots
	seq  uint64   // insertion counter
}

type entry struct {
	when int64
	seq  uint64
	slot uint32
}

const (
	posFree  = -1 // slot not in use
	posFired = -2 // out of the heap, waiting in Real's ready queue
	posHeld  = -3 // never in the heap: in Virtual's queue of events due now
)

func (a entry) less(b entry) bool {
	return a.when < b.when || (a.when == b.when && a.seq < b.seq)
}

// less2 is less without short-circuit branches.
func (a entry) less2(b entry) bool {
	return b2i(a.when < b.when)|(b2i(a.when == b.when)&b2i(a.seq < b.seq)) != 0
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (q *queue[E]) len() int { return len(q.heap) }

func makeID(gen, slot uint32) TimerID { return TimerID(uint64(gen)<<32 | uint64(slot)) }

// push stores ev due at when and returns its id.
func (q *queue[E]) push(when int64, ev E) TimerID {
	s := q.alloc(ev)
	i := len(q.heap)
	if i >= math.MaxInt32 {
		panic("clockwork: too many pending timers")
	}
	q.seq++
	q.heap = append(q.heap, entry{when: when, seq: q.seq, slot: s})
	q.up(i)
	return makeID(q.gen[s], s)
}

// hold stores ev outside the heap (Virtual's events due now) and returns
// its id; the caller keeps the order.
func (q *queue[E]) hold(ev E) TimerID {
	s := q.alloc(ev)
	q.pos[s] = posHeld
	return makeID(q.gen[s], s)
}

// alloc takes a slot for ev: a recycled one with its generation bumped, or
// a new one.
func (q *queue[E]) alloc(ev E) uint32 {
	if n := len(q.free); n > 0 {
		s := q.free[n-1]
		q.free = q.free[:n-1]
		q.gen[s]++
		q.evs[s] = ev
		return s
	}
	if len(q.evs) >= math.MaxUint32 {
		panic("clockwork: too many timers")
	}
	s := uint32(len(q.evs))
	q.evs = append(q.evs, ev)
	q.pos = append(q.pos, posFree)
	q.gen = append(q.gen, 1)
	return s
}

// lookup returns the slot of a live id.
func (q *queue[E]) lookup(id TimerID) (uint32, bool) {
	s, gen := uint32(id), uint32(id>>32)
	if gen == 0 || int(s) >= len(q.gen) || q.gen[s] != gen || q.pos[s] == posFree {
		return 0, false
	}
	return s, true
}

// cancel removes a pending or fired timer. It reports whether id was live.
func (q *queue[E]) cancel(id TimerID) bool {
	s, ok := q.lookup(id)
	if !ok {
		return false
	}
	if i := q.pos[s]; i >= 0 {
		q.remove(int(i))
	}
	q.release(s)
	return true
}

// peek returns the time of the earliest entry.
func (q *queue[E]) peek() (int64, bool) {
	if len(q.heap) == 0 {
		return 0, false
	}
	return q.heap[0].when, true
}

// pop removes the earliest entry and frees its slot. The heap must not be
// empty.
func (q *queue[E]) pop() (int64, E) {
	e := q.heap[0]
	q.removeMin()
	ev := q.evs[e.slot]
	q.release(e.slot)
	return e.when, ev
}

// fire removes the earliest entry from the heap but keeps its slot (and so
// its id and event) alive until take or cancel. The heap must not be empty.
func (q *queue[E]) fire() TimerID {
	e := q.heap[0]
	q.removeMin()
	q.pos[e.slot] = posFired
	return makeID(q.gen[e.slot], e.slot)
}

// take returns the event of a fired timer and frees it; false if the timer
// was cancelled since it fired.
func (q *queue[E]) take(id TimerID) (E, bool) {
	s, ok := q.lookup(id)
	if !ok || q.pos[s] != posFired {
		var zero E
		return zero, false
	}
	ev := q.evs[s]
	q.release(s)
	return ev, true
}

func (q *queue[E]) release(s uint32) {
	var zero E
	q.evs[s] = zero // drop references for the GC
	q.pos[s] = posFree
	if q.gen[s] != math.MaxUint32 {
		q.free = append(q.free, s)
	}
}

// removeMin deletes heap[0]. It walks the hole down to a leaf along the
// smaller children (one comparison per level instead of two), puts the last
// entry there and sifts it up, usually by a level or two: the last entry of
// a heap tends to belong near the bottom.
func (q *queue[E]) removeMin() {
	h := q.heap
	n := len(h) - 1
	e := h[n]
	h = h[:n]
	q.heap = h
	if n == 0 {
		return
	}
	pos := q.pos
	i := 0
	for {
		c := 2*i + 1
		if c+1 < n {
			// Branch-free choice of the smaller child: on random times this
			// branch would be mispredicted half the time.
			c += b2i(h[c+1].less2(h[c]))
		} else if c >= n {
			break
		}
		h[i] = h[c]
		pos[h[i].slot] = int32(i)
		i = c
	}
	h[i] = e
	q.up(i)
}

// remove deletes heap[i], keeping the heap ordered.
func (q *queue[E]) remove(i int) {
	last := len(q.heap) - 1
	if i != last {
		q.heap[i] = q.heap[last]
		q.pos[q.heap[i].slot] = int32(i)
	}
	q.heap = q.heap[:last]
	if i != last && !q.down(i) {
		q.up(i)
	}
}

// up moves heap[i] towards the root, one write per level.
func (q *queue[E]) up(i int) {
	h, pos := q.heap, q.pos
	e := h[i]
	for i > 0 {
		p := (i - 1) / 2
		if !e.less(h[p]) {
			break
		}
		h[i] = h[p]
		pos[h[i].slot] = int32(i)
		i = p
	}
	h[i] = e
	pos[e.slot] = int32(i)
}

// down moves heap[i] towards the leaves; it reports whether it moved.
func (q *queue[E]) down(i0 int) bool {
	h, pos := q.heap, q.pos
	n := len(h)
	i := i0
	e := h[i]
	for {
		c := 2*i + 1
		if c >= n || c < 0 {
			break
		}
		if r := c + 1; r < n && h[r].less(h[c]) {
			c = r
		}
		if !h[c].less(e) {
			break
		}
		h[i] = h[c]
		pos[h[i].slot] = int32(i)
		i = c
	}
	h[i] = e
	pos[e.slot] = int32(i)
	return i > i0
}
