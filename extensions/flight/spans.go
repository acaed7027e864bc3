package flight

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"github.com/harnessx/harnessx/internal/otlpjson"
	"github.com/harnessx/harnessx/internal/otlpspans"

	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
)

// SpanProcessor is an OpenTelemetry SDK span processor that keeps the most
// recent ended spans in a bounded buffer, so that an incident bundle
// carries a run's spans without any tracing backend. [Extension.SpanProcessor]
// returns the recorder's; register it on the application's TracerProvider
// when the recorder does not (see [WithSpanRegistration]):
//
//	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec.SpanProcessor()))
//
// It is safe for concurrent use; OnEnd does not block.
//
// The spans are kept as records in one byte arena (see appendSpanRecord),
// not as the SDK's objects, so that a full buffer costs the garbage
// collector nearly nothing; [SpanProcessor.Spans] decodes them.
type SpanProcessor struct {
	mu      sync.Mutex
	slots   []spanSlot // ring, in the order spans ended
	next    int        // the slot the next span goes to
	full    bool
	seq     uint64 // the number of the last span kept
	dropped uint64
	arena   spanArena
	scopes  []*spanScope                     // referenced by slots; nil entries are free
	odd     map[uint64]sdktrace.ReadOnlySpan // by seq: spans the records cannot encode, kept as they are
	enc     spanEnc                          // the records' key numbers and referenced values
	scratch []byte                           // OnEnd's encoding buffer
	fields  spanFields                       // OnEnd's span, read through its getters (see fieldsOf)
	onEnd   func()                           // notifies the owning extension; may be nil
}

// spanSlot is one kept span: its record in the arena, numbered 1, 2, …
// in the order spans ended.
type spanSlot struct {
	seq   uint64 // 0: empty
	id    spanKey
	off   int // of the record in the arena
	n     int // the record's length
	scope int // index in scopes
	nrefs int
	refs  [maxSpanRefs]int32 // the values the record references (see spanValues)
}

var _ sdktrace.SpanProcessor = (*SpanProcessor)(nil)

// newSpanProcessor returns a processor that keeps the last capacity ended
// spans (default 2048 when capacity <= 0).
func newSpanProcessor(capacity int) *SpanProcessor {
	if capacity <= 0 {
		capacity = 2048
	}
	return &SpanProcessor{slots: make([]spanSlot, capacity)}
}

// spanKey identifies a span: its trace ID and span ID.
type spanKey struct {
	trace trace.TraceID
	span  trace.SpanID
}

// OnStart does nothing.
func (p *SpanProcessor) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd keeps s, evicting the oldest span when the buffer is full. A span
// given twice in a row (the processor registered twice on one provider,
// by hand and by the recorder) is kept once.
func (p *SpanProcessor) OnEnd(s sdktrace.ReadOnlySpan) {
	p.mu.Lock()
	f := fieldsOf(s, &p.fields)
	id := spanKey{f.spanContext.TraceID(), f.spanContext.SpanID()}
	if p.recentLocked(id) {
		if f == &p.fields {
			p.fields = spanFields{}
		}
		p.mu.Unlock()
		return
	}
	slot := &p.slots[p.next]
	if slot.seq != 0 {
		p.dropped++
		p.evictLocked(slot)
	}
	rec, ok := appendSpanRecord(p.scratch[:0], f, &p.enc)
	p.scratch = rec
	p.seq++
	*slot = spanSlot{seq: p.seq, id: id, scope: p.scopeLocked(f)}
	if ok {
		slot.nrefs, slot.refs = p.enc.nrefs, p.enc.refs
		p.putLocked(slot, rec)
	} else {
		for _, i := range p.enc.refs[:p.enc.nrefs] {
			p.enc.vals.release(i)
		}
		if p.odd == nil {
			p.odd = make(map[uint64]sdktrace.ReadOnlySpan)
		}
		p.odd[p.seq] = s
		slot.off = p.arena.head
	}
	p.next++
	if p.next == len(p.slots) {
		p.next, p.full = 0, true
	}
	if len(p.scratch) > 64<<10 {
		p.scratch = nil // do not keep a huge span's buffer
	}
	if f == &p.fields {
		p.fields = spanFields{} // keep nothing of the span
	}
	fn := p.onEnd
	p.mu.Unlock()
	if fn != nil {
		fn()
	}
}

// putLocked copies rec, the record of the span of slot (the newest), into
// the arena.
func (p *SpanProcessor) putLocked(slot *spanSlot, rec []byte) {
	o := p.next + 1
	if o == len(p.slots) {
		o = 0
	}
	if p.slots[o].seq == 0 {
		o = 0 // the buffer is not full yet: slot 0 is the oldest
	}
	oldest := &p.slots[o]
	slot.off = p.arena.put(rec, oldest.off, oldest == slot, p.allFrom(o))
	slot.n = len(rec)
}

// evictLocked forgets the span in slot, the oldest.
func (p *SpanProcessor) evictLocked(slot *spanSlot) {
	if slot.n == 0 {
		delete(p.odd, slot.seq)
	}
	p.arena.live -= slot.n
	for _, i := range slot.refs[:slot.nrefs] {
		p.enc.vals.release(i)
	}
	sc := p.scopes[slot.scope]
	sc.refs--
	if sc.refs == 0 {
		p.scopes[slot.scope] = nil
	}
	slot.seq = 0
	if vs := &p.enc.vals; len(vs.free) > minValuesCompact && 2*len(vs.free) > len(vs.entries) {
		p.compactValuesLocked()
	}
}

// minValuesCompact is how many unused value entries there must be, and
// more than half of them all, before compactValuesLocked runs.
const minValuesCompact = 1024

// compactValuesLocked renumbers the referenced values into a table of
// their size, so that a burst of spans with long values (a large
// request's) leaves no room behind for every collection to scan: the
// table holds strings, and never shrank.
func (p *SpanProcessor) compactValuesLocked() {
	vs := &p.enc.vals
	remap := make([]int32, len(vs.entries))
	live := make([]valueEntry, 0, len(vs.entries)-len(vs.free))
	for i, e := range vs.entries {
		remap[i] = -1
		if e.refs > 0 {
			remap[i] = int32(len(live))
			live = append(live, e)
		}
	}
	for i := range p.slots {
		s := &p.slots[i]
		if s.seq == 0 {
			continue
		}
		for j := range s.refs[:s.nrefs] {
			s.refs[j] = remap[s.refs[j]]
		}
	}
	for k, v := range vs.byKey {
		if v > 0 {
			vs.byKey[k] = uint32(remap[v-1] + 1) // 0 when the value is gone
		}
	}
	vs.entries, vs.free = live, nil
}

// scopeLocked returns the index of s's resource and scope in p.scopes,
// adding them when new, and counts the reference.
func (p *SpanProcessor) scopeLocked(s *spanFields) int {
	free := -1
	for i, sc := range p.scopes {
		if sc == nil {
			if free < 0 {
				free = i
			}
			continue
		}
		if sc.same(s) {
			sc.refs++
			return i
		}
	}
	sc := &spanScope{res: s.resource, scope: s.instrumentationScope, refs: 1}
	if free >= 0 {
		p.scopes[free] = sc
		return free
	}
	p.scopes = append(p.scopes, sc)
	return len(p.scopes) - 1
}

// recentDepth is how many of the latest spans OnEnd compares a span with
// to drop a duplicate: another span may end between the two calls of a
// processor registered twice.
const recentDepth = 8

// recentLocked reports whether the span id is one of the latest spans
// kept.
func (p *SpanProcessor) recentLocked(id spanKey) bool {
	n := len(p.slots)
	for k := 1; k <= recentDepth && k <= n; k++ {
		i := p.next - k
		if i < 0 {
			if !p.full {
				break
			}
			i += n
		}
		if p.slots[i].seq != 0 && p.slots[i].id == id {
			return true
		}
	}
	return false
}

// Shutdown does nothing: the buffer stays readable.
func (p *SpanProcessor) Shutdown(context.Context) error { return nil }

// ForceFlush does nothing: spans are kept as they end.
func (p *SpanProcessor) ForceFlush(context.Context) error { return nil }

// Spans returns the buffered spans, oldest first, that keep reports true
// for (every span when keep is nil). They are decoded copies: a call
// costs in proportion to the buffer.
func (p *SpanProcessor) Spans(keep func(s sdktrace.ReadOnlySpan) bool) []sdktrace.ReadOnlySpan {
	spans, _ := p.copySince(0, nil).decode()
	if keep == nil {
		return spans
	}
	return slices.DeleteFunc(spans, func(s sdktrace.ReadOnlySpan) bool { return !keep(s) })
}

// spanCopy is a copy of kept spans taken under the processor's lock, to
// decode outside it: their records in one buffer, and the spans the
// records could not encode.
type spanCopy struct {
	keys  []string // see spanKeys
	refs  []string // the copied spans' referenced values, from copiedSpan.ref
	recs  []byte
	spans []copiedSpan
	last  uint64
	whole bool  // no kept span of the traces asked for was left out as old
	err   error // the first record Span could not decode
}

type copiedSpan struct {
	off, n int
	ref    int // the index in spanCopy.refs of its first referenced value
	nrefs  int
	scope  *spanScope
	odd    sdktrace.ReadOnlySpan
}

// copySince copies the kept spans numbered after seq, oldest first, of
// the traces keep reports true for (all when nil). The copy's last is the
// number of the last span kept (seq when none is newer), and its whole
// says whether they are all the kept spans of those traces (none of them
// is numbered seq or before).
func (p *SpanProcessor) copySince(seq uint64, keep func(trace.TraceID) bool) *spanCopy {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := &spanCopy{last: max(seq, p.seq), keys: p.enc.keys.names, whole: true}
	size := 0
	start := p.next
	if !p.full {
		start = 0
	}
	for s := range p.allFrom(start) {
		if keep == nil || keep(s.id.trace) {
			if s.seq > seq {
				size += s.n
			} else {
				c.whole = false
			}
		}
	}
	c.recs = make([]byte, 0, size)
	for s := range p.allFrom(start) {
		if s.seq <= seq || (keep != nil && !keep(s.id.trace)) {
			continue
		}
		cs := copiedSpan{off: len(c.recs), n: s.n, scope: p.scopes[s.scope], ref: len(c.refs), nrefs: s.nrefs}
		for _, i := range s.refs[:s.nrefs] {
			c.refs = append(c.refs, p.enc.vals.entries[i].s)
		}
		if s.n == 0 {
			cs.odd = p.odd[s.seq]
		}
		c.recs = append(c.recs, p.arena.buf[s.off:s.off+s.n]...)
		c.spans = append(c.spans, cs)
	}
	return c
}

// allFrom returns an iterator over the kept slots from index i, in ring
// order.
func (p *SpanProcessor) allFrom(i int) func(yield func(*spanSlot) bool) {
	return func(yield func(*spanSlot) bool) {
		n := len(p.slots)
		for k := 0; k < n; k++ {
			s := &p.slots[(i+k)%n]
			if s.seq != 0 && !yield(s) {
				return
			}
		}
	}
}

// decode decodes the copied spans. A record that does not decode (a bug)
// is left out and reported.
func (c *spanCopy) decode() ([]sdktrace.ReadOnlySpan, error) {
	if c == nil || len(c.spans) == 0 {
		return nil, nil
	}
	out := make([]sdktrace.ReadOnlySpan, 0, len(c.spans))
	for i := range c.spans {
		if s := c.Span(i); s != nil {
			out = append(out, s)
		}
	}
	return out, c.err
}

// The span snapshots encode a copy's spans one at a time
// (otlpjson.AppendSDKSpans): Span decodes a record when the encoder asks
// for it, so that no more than one decoded span is alive at once. Decoded
// all at once, a snapshot's 2,048 spans were some 4 MB of objects with
// pointers, alive for the few milliseconds of the encoding: a GC cycle
// that marked then scanned them (4 MB of heap scan work against ~0.6 MB in
// other cycles of BenchmarkFullStack), and the pacer sets the next cycles
// by that work (see docs/benchmarking.md, 2026-12-04, 22:00).

// Len returns the number of copied spans.
func (c *spanCopy) Len() int { return len(c.spans) }

// Scope returns span i's resource and instrumentation scope.
func (c *spanCopy) Scope(i int) (*resource.Resource, instrumentation.Scope) {
	cs := &c.spans[i]
	if cs.odd != nil {
		return cs.odd.Resource(), cs.odd.InstrumentationScope()
	}
	return cs.scope.res, cs.scope.scope
}

// Span decodes span i; nil when its record does not decode (a bug),
// which err then reports.
func (c *spanCopy) Span(i int) sdktrace.ReadOnlySpan {
	cs := &c.spans[i]
	if cs.odd != nil {
		return cs.odd
	}
	// The decoded strings share c.recs, which is the copy's alone and not
	// written again: a string of its bytes costs no second copy. Whatever
	// keeps one past the spans' use must copy it, or it keeps all of
	// c.recs alive (otlpjson.StringCache, which the span snapshots use,
	// copies its keys).
	all := unsafe.String(unsafe.SliceData(c.recs), len(c.recs))
	d, err := decodeSpanRecord(all[cs.off:cs.off+cs.n], cs.scope, c.keys, c.refs[cs.ref:cs.ref+cs.nrefs])
	if err != nil {
		if c.err == nil {
			c.err = err
		}
		return nil
	}
	return d
}

var _ otlpjson.SDKSpans = (*spanCopy)(nil)

// pending returns how many kept spans are numbered after seq, at most
// the buffer's size.
func (p *SpanProcessor) pending(seq uint64) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return int(min(p.seq-min(seq, p.seq), uint64(len(p.slots))))
}

// Dropped returns how many spans were evicted from the full buffer.
func (p *SpanProcessor) Dropped() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped
}

func (p *SpanProcessor) setNotify(fn func()) {
	p.mu.Lock()
	p.onEnd = fn
	p.mu.Unlock()
}

// marshalSpans encodes an export request as compact OTLP/JSON, after
// redacting it with red (when not nil): protojson's mapping with trace and
// span IDs as hex and enum values as integers, as the OTLP specification
// requires, so that an OTLP/HTTP JSON receiver accepts the bytes as they
// are. Equal requests give equal bytes.
func marshalSpans(req *coltracepb.ExportTraceServiceRequest, red *Redactor) ([]byte, error) {
	if red != nil {
		otlpspans.Redact(req, &red.r)
	}
	b, err := otlpjson.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("flight: spans: %w", err)
	}
	return b, nil
}

// spanArena holds the records of the kept spans in one byte slice used as
// a ring: each record goes after the newest one, or at the start when it
// does not fit before the end; a record is never split. When the records
// kept take all the room, the arena grows (and it shrinks when they take
// an eighth of it), copying them in order: its size follows what the
// buffer holds.
type spanArena struct {
	buf  []byte
	head int // where the next record goes
	live int // the bytes of the kept records
}

// minArena is the size of a new arena.
const minArena = 64 << 10

// put copies rec into the arena and returns its offset. tail is the
// offset of the oldest kept record (or, for a span kept as an object,
// where the arena's head was when it ended), empty is true when no other
// record is kept, and kept yields the kept slots oldest first, for put to
// move them when the arena is reallocated.
func (a *spanArena) put(rec []byte, tail int, empty bool, kept func(func(*spanSlot) bool)) int {
	n := len(rec)
	if empty {
		a.head, a.live = 0, 0
	}
	off := -1
	switch {
	case len(a.buf) > minArena && len(a.buf) > 8*(a.live+n):
		// The records take little of a large arena: shrink it.
	case empty || tail < a.head: // the records lie in [tail, head)
		if a.head+n <= len(a.buf) {
			off = a.head
		} else if n <= tail {
			off = 0
		}
	default: // they lie in [tail, end) and [0, head): the room is [head, tail)
		if a.head+n <= tail {
			off = a.head
		}
	}
	if off < 0 {
		off = a.move(n, kept)
	}
	copy(a.buf[off:], rec)
	a.head = off + n
	a.live += n
	return off
}

// move copies the kept records, oldest first, to the start of a new
// arena with room for them and n more bytes, and returns where the next
// record goes.
func (a *spanArena) move(n int, kept func(func(*spanSlot) bool)) int {
	buf := make([]byte, max(minArena, 2*(a.live+n)))
	pos := 0
	for s := range kept {
		if s.n > 0 {
			copy(buf[pos:], a.buf[s.off:s.off+s.n])
		}
		s.off = pos // for a span kept as an object: where the next record goes
		pos += s.n
	}
	a.buf = buf
	return pos
}
