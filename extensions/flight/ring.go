package flight

// eventRing keeps the encoded lines of the last events, in one arena of
// fixed-size slots: the garbage collector follows no pointer into it
// (with a slice a slot, it would follow thousands at every cycle). A line
// longer than a slot is kept apart, in long. It is guarded by
// Extension.mu.
//
// Its lines are the journal's (see lineForm): a line may name an earlier
// one that carries its run ID and trace ID. When such a line is evicted,
// the ring keeps a copy of it in gone, so that the lines that name it
// still resolve (see Extension.ringReaderLocked).
type eventRing struct {
	arena   []byte         // len(lens) slots of slotBytes
	lens    []int32        // the length of each slot's line
	carrier []bool         // whether each slot's line carries a run ID
	long    map[int][]byte // the lines longer than a slot, by slot
	next    int            // the slot the next line goes to
	full    bool           // every slot holds a line
	gone    []byte         // the newest evicted line that carried a run ID
}

// slotBytes is the size of a ring slot: most lines fit.
const slotBytes = 512

func newEventRing(n int) eventRing {
	return eventRing{arena: make([]byte, n*slotBytes), lens: make([]int32, n), carrier: make([]bool, n)}
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
// the ring is full; carrier says whether the line carries a run ID. It
// returns the line, valid until the slot is reused, and whether a line
// was evicted.
func (r *eventRing) add(carrier bool, encode func(dst []byte) []byte) (line []byte, evicted bool) {
	i := r.next
	off := i * slotBytes
	if r.full && r.carrier[i] {
		r.gone = append(r.gone[:0], r.line(i)...)
	}
	r.carrier[i] = carrier
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

// ringReaderLocked returns a journalReader for the ring's lines, oldest
// first (see lineReader). x.mu must be held.
func (x *Extension) ringReaderLocked() journalReader {
	return lineReader(x.agentName, x.sessionID, x.ring.gone)
}

// lineReader returns a journalReader for lines of the recording of agent
// and session, oldest first, that knows gone: the newest line evicted
// before them that carried a run ID (nil: none), which the oldest lines
// may name.
func lineReader(agent, session string, gone []byte) journalReader {
	r := journalReader{agent: agent, session: session}
	if e, err := ParseEvent(gone); err == nil {
		r.resolve(&e)
	}
	return r
}

// eachRingRun calls fn with each line of the ring, oldest first, and the
// run ID the line carries or names (see eventRing.eachRun), until fn
// returns false. The caller must not hold x.mu.
func (x *Extension) eachRingRun(fn func(line, run []byte) bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.ring.eachRun(fn)
}

// eachRun calls fn with each line, oldest first, and the run ID the line
// carries or names (nil: none), until fn returns false.
func (r *eventRing) eachRun(fn func(line, run []byte) bool) {
	var runs lineRuns
	runs.runOf(r.gone)
	r.each(func(line []byte) bool { return fn(line, runs.runOf(line)) })
}

// lineRuns follows the run IDs of lines in the order they were recorded.
type lineRuns struct {
	seq uint64 // of the last line that carried a run ID
	run []byte // its run ID
}

// runOf returns the run ID that line carries, or that the line it names
// (by ref) carries; nil when it has none or names a line not seen.
func (l *lineRuns) runOf(line []byte) []byte {
	seq, run, ref := binLineIDs(line)
	if run != nil {
		l.seq, l.run = seq, run
		return run
	}
	if ref != 0 && ref == l.seq {
		return l.run
	}
	return nil
}
