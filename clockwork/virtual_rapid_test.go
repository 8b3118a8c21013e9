package clockwork

import (
	"context"
	"errors"
	"sort"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// model is the obvious implementation: a slice kept sorted by (when, seq).
type model struct {
	now   time.Duration
	seq   int
	items []modelItem
}

type modelItem struct {
	when time.Duration
	seq  int
	id   TimerID
	ev   int
}

func (m *model) at(when time.Duration, id TimerID, ev int) {
	m.seq++
	m.items = append(m.items, modelItem{when: max(when, m.now), seq: m.seq, id: id, ev: ev})
	sort.SliceStable(m.items, func(i, j int) bool {
		a, b := m.items[i], m.items[j]
		return a.when < b.when || (a.when == b.when && a.seq < b.seq)
	})
}

func (m *model) cancel(id TimerID) bool {
	for i, it := range m.items {
		if it.id == id && id != 0 {
			m.items = append(m.items[:i], m.items[i+1:]...)
			return true
		}
	}
	return false
}

func TestVirtualMatchesModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := NewVirtual[int](t0)
		m := &model{}
		var ids []TimerID // every id ever issued
		ev := 0
		unit := time.Second
		t.Repeat(map[string]func(*rapid.T){
			"At": func(t *rapid.T) {
				d := time.Duration(rapid.IntRange(-3, 8).Draw(t, "delta")) * unit
				ev++
				when := t0.Add(m.now + d)
				id := v.At(when, ev)
				if id == 0 {
					t.Fatal("At returned the zero id")
				}
				for _, old := range ids {
					if old == id {
						t.Fatalf("id %x reused", id)
					}
				}
				ids = append(ids, id)
				m.at(m.now+d, id, ev)
			},
			"Post": func(t *rapid.T) {
				ev++
				v.Post(ev)
				m.at(m.now, 0, ev)
			},
			"Cancel": func(t *rapid.T) {
				var id TimerID
				if len(ids) > 0 && rapid.IntRange(0, 9).Draw(t, "known") > 0 {
					id = rapid.SampledFrom(ids).Draw(t, "id")
				} else {
					id = TimerID(rapid.Uint64().Draw(t, "raw"))
				}
				want := m.cancel(id)
				if got := v.Cancel(id); got != want {
					t.Fatalf("Cancel(%x) = %v, want %v", id, got, want)
				}
			},
			"Next": func(t *rapid.T) {
				got, ok := v.Next(context.Background())
				if len(m.items) == 0 {
					if ok {
						t.Fatalf("Next = %d on empty", got)
					}
					return
				}
				want := m.items[0]
				m.items = m.items[1:]
				m.now = want.when
				if !ok || got != want.ev {
					t.Fatalf("Next = %d %v, want %d", got, ok, want.ev)
				}
			},
			"AdvanceTo": func(t *rapid.T) {
				d := time.Duration(rapid.IntRange(-2, 6).Draw(t, "delta")) * unit
				target := m.now + d
				err := v.AdvanceTo(t0.Add(target))
				switch {
				case d < 0:
					if !errors.Is(err, ErrBackwards) {
						t.Fatalf("AdvanceTo back: %v", err)
					}
				case len(m.items) > 0 && m.items[0].when < target:
					if !errors.Is(err, ErrWouldSkip) {
						t.Fatalf("AdvanceTo over a pending event: %v", err)
					}
				default:
					if err != nil {
						t.Fatalf("AdvanceTo: %v", err)
					}
					m.now = target
				}
			},
			"": func(t *rapid.T) {
				if v.Len() != len(m.items) {
					t.Fatalf("Len = %d, want %d", v.Len(), len(m.items))
				}
				if !v.Now().Equal(t0.Add(m.now)) {
					t.Fatalf("Now = %v, want %v", v.Now(), t0.Add(m.now))
				}
				p, ok := v.Peek()
				if ok != (len(m.items) > 0) || ok && !p.Equal(t0.Add(m.items[0].when)) {
					t.Fatalf("Peek = %v %v", p, ok)
				}
				checkHeap(t, &v.q)
			},
		})
	})
}

// checkHeap verifies the heap order and the slot back-pointers.
func checkHeap[E any](t *rapid.T, q *queue[E]) {
	for i, e := range q.heap {
		if i > 0 && e.less(q.heap[(i-1)/2]) {
			t.Fatalf("heap order broken at %d", i)
		}
		if int(q.pos[e.slot]) != i {
			t.Fatalf("slot %d points to %d, is at %d", e.slot, q.pos[e.slot], i)
		}
	}
}
