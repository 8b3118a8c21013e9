package engine

// opTable holds the ops in flight by id: an open-addressing hash table
// with linear probing. Ids are sequential and at most MaxConcurrentOps are
// in flight, so the table stays small and an id's home slot (its low
// bits) is rarely taken; a map would hash and allocate at every op.
type opTable struct {
	slots []*opRun // len a power of two, at most half full; nil: empty
	n     int
}

// len is how many ops are in the table.
func (t *opTable) len() int { return t.n }

func (t *opTable) get(id OpID) *opRun {
	if len(t.slots) == 0 {
		return nil
	}
	mask := OpID(len(t.slots) - 1)
	for i := id & mask; t.slots[i] != nil; i = (i + 1) & mask {
		if t.slots[i].id == id {
			return t.slots[i]
		}
	}
	return nil
}

// put adds r, whose id is not in the table.
func (t *opTable) put(r *opRun) {
	if 2*(t.n+1) > len(t.slots) {
		old := t.slots
		t.slots = make([]*opRun, max(16, 2*len(old)))
		t.n = 0
		for _, x := range old {
			if x != nil {
				t.put(x)
			}
		}
	}
	mask := OpID(len(t.slots) - 1)
	i := r.id & mask
	for t.slots[i] != nil {
		i = (i + 1) & mask
	}
	t.slots[i] = r
	t.n++
}

// remove drops the op of id, if present. The entries after it in its
// probe run move back, so that every lookup still finds its entry without
// tombstones.
func (t *opTable) remove(id OpID) {
	if len(t.slots) == 0 {
		return
	}
	mask := OpID(len(t.slots) - 1)
	i := id & mask
	for {
		if t.slots[i] == nil {
			return
		}
		if t.slots[i].id == id {
			break
		}
		i = (i + 1) & mask
	}
	t.slots[i] = nil
	t.n--
	// Each later entry of the run moves into the hole unless its home
	// lies cyclically in (hole, its slot]: there it is found already.
	for j := (i + 1) & mask; t.slots[j] != nil; j = (j + 1) & mask {
		home := t.slots[j].id & mask
		if (j-home)&mask >= (j-i)&mask {
			t.slots[i], t.slots[j] = t.slots[j], nil
			i = j
		}
	}
}
