// Package desloop is the floor svcsim bench is measured against: a bare
// heap-based discrete-event loop in Go, the least a simulator of timed
// events can do per event. Its events are plain values in a typed binary
// min-heap ordered by (time, insertion); the loop pops the earliest, and
// its handler schedules the event's next occurrence, as a periodic timer
// or a job's next arrival would. No interfaces, no allocation, no engine.
// RunBoxed is the same loop over the textbook queue (container/heap,
// interface events, one allocated per occurrence), for comparison.
package desloop

import (
	"container/heap"
	"time"
)

type event struct {
	at  int64 // virtual nanoseconds
	seq uint64
	id  int32
}

func (a event) before(b event) bool { return a.at < b.at || a.at == b.at && a.seq < b.seq }

// minHeap is a binary min-heap of events.
type minHeap []event

func (h *minHeap) push(e event) {
	*h = append(*h, e)
	q := *h
	for i := len(q) - 1; i > 0; {
		p := (i - 1) / 2
		if !q[i].before(q[p]) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
}

func (h *minHeap) pop() event {
	q := *h
	top := q[0]
	n := len(q) - 1
	q[0] = q[n]
	q = q[:n]
	for i := 0; ; {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && q[r].before(q[l]) {
			m = r
		}
		if !q[m].before(q[i]) {
			break
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
	*h = q
	return top
}

// Run keeps pending events scheduled and handles events of them: each
// handled event is rescheduled after a pseudo-random delay of mean
// meanGap (from seed). It returns how many events it handled (events),
// how long that took, and a checksum of the handled ids, so that the
// work cannot be optimised away.
func Run(pending, events int, meanGap time.Duration, seed uint64) (time.Duration, uint64) {
	x := seed | 1
	next := func() int64 {
		// xorshift64*: uniform in [0, 2*meanGap).
		x ^= x >> 12
		x ^= x << 25
		x ^= x >> 27
		return int64((x * 2685821657736338717) % uint64(2*meanGap))
	}
	h := make(minHeap, 0, pending)
	var seq uint64
	for i := 0; i < pending; i++ {
		seq++
		h.push(event{at: next(), seq: seq, id: int32(i)})
	}
	var sum uint64
	begin := time.Now()
	for i := 0; i < events; i++ {
		e := h.pop()
		sum += uint64(e.id)
		seq++
		h.push(event{at: e.at + next(), seq: seq, id: e.id})
	}
	return time.Since(begin), sum
}

// Event is an event of RunBoxed: an interface value, as a general
// simulator's events are, one allocated per occurrence.
type Event interface{ At() int64 }

type tick struct {
	at  int64
	seq uint64
	id  int32
}

func (t *tick) At() int64 { return t.at }

// boxedHeap is a container/heap of Events, the textbook Go event queue.
type boxedHeap []Event

func (h boxedHeap) Len() int { return len(h) }
func (h boxedHeap) Less(i, j int) bool {
	a, b := h[i].(*tick), h[j].(*tick)
	return a.at < b.at || a.at == b.at && a.seq < b.seq
}
func (h boxedHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *boxedHeap) Push(x any)   { *h = append(*h, x.(Event)) }
func (h *boxedHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// RunBoxed is Run with the textbook queue: container/heap over interface
// events, a new event allocated for each occurrence.
func RunBoxed(pending, events int, meanGap time.Duration, seed uint64) (time.Duration, uint64) {
	x := seed | 1
	next := func() int64 {
		x ^= x >> 12
		x ^= x << 25
		x ^= x >> 27
		return int64((x * 2685821657736338717) % uint64(2*meanGap))
	}
	h := make(boxedHeap, 0, pending)
	var seq uint64
	for i := 0; i < pending; i++ {
		seq++
		heap.Push(&h, &tick{at: next(), seq: seq, id: int32(i)})
	}
	var sum uint64
	begin := time.Now()
	for i := 0; i < events; i++ {
		e := heap.Pop(&h).(*tick)
		sum += uint64(e.id)
		seq++
		heap.Push(&h, &tick{at: e.at + next(), seq: seq, id: e.id})
	}
	return time.Since(begin), sum
}
