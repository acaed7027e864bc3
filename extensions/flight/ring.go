package flight

// eventRing keeps the encoded lines of the last events, in one arena of
// fixed-size slots: the garbage collector follows no pointer into it
// (with a slice a slot, it would follow thousands at every cycle). A line
// longer than a slot is kept apart, in long. It is guarded by
// Extension.mu.
type eventRing struct {
	arena []byte         // len(lens) slots of slotBytes
	lens  []int32        // the length of each slot's line
	long  map[int][]byte // the lines longer than a slot, by slot
	next  int            // the slot the next line goes to
	full  bool           // every slot holds a line
}

// slotBytes is the size of a ring slot: most lines fit.
const slotBytes = 512

func newEventRing(n int) eventRing {
	return eventRing{arena: make([]byte, n*slotBytes), lens: make([]int32, n)}
}

// line returns the line of slot i. It is valid until the slot is reused.
func (r *eventRing) line(i int) []byte {
	if l, ok := r.long[i]; ok {
		return l
	}
	off := i * slotBytes
	return r.arena[off : off+int(r.lens[i]) : off+int(r.lens[i])]
}

// add appends the line that encode appends to its argument (an empty
// slice with the next slot's room) as the newest, evicting the oldest when
// the ring is full; it returns the line, valid until the slot is reused,
// and whether a line was evicted.
func (r *eventRing) add(encode func(dst []byte) []byte) (line []byte, evicted bool) {
	i := r.next
	off := i * slotBytes
	line = encode(r.arena[off : off : off+slotBytes])
	if r.long != nil {
		delete(r.long, i)
		if len(r.long) == 0 {
			// A map keeps the room of its largest size: let a burst of
			// long lines' table go with the last of them.
			r.long = nil
		}
	}
	if len(line) > slotBytes || len(line) > 0 && &line[0] != &r.arena[off] {
		// Too long for the slot: append moved it.
		if r.long == nil {
			r.long = map[int][]byte{}
		}
		r.long[i] = line
		r.lens[i] = 0
	} else {
		r.lens[i] = int32(len(line))
	}
	evicted = r.full
	r.next++
	if r.next == len(r.lens) {
		r.next, r.full = 0, true
	}
	return line, evicted
}

// each calls fn with each line, oldest first, until fn returns false.
func (r *eventRing) each(fn func(line []byte) bool) {
	if r.full {
		for i := r.next; i < len(r.lens); i++ {
			if !fn(r.line(i)) {
				return
			}
		}
	}
	for i := 0; i < r.next; i++ {
		if !fn(r.line(i)) {
			return
		}
	}
}
