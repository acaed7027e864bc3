package flight

import (
	"encoding/binary"
	"errors"
	"math"
	"time"
	"unsafe"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// A span record is an ended span encoded into bytes, so that the span
// buffer holds its spans in one pointer-free arena instead of as SDK
// objects: thousands of kept spans then cost the garbage collector a few
// objects to mark on every cycle, not tens of thousands. The resource and
// instrumentation scope, shared by many spans, stay objects referenced by
// an index (see spanScope), and so do long string values (see
// spanValues).
//
// Layout (integers little-endian; n is a uvarint; str is n then bytes):
//
//	span:    ctx(self) ctx(parent) kind:1 time(start) time(end)
//	         status:1 str(description) str(name) n(children)
//	         attrs n(dropped attrs)
//	         n(events) {str(name) time attrs n(dropped attrs)}* n(dropped events)
//	         n(links) {ctx attrs n(dropped attrs)}* n(dropped links)
//	ctx:     trace:16 span:8 flags:1 remote:1 str(trace state)
//	time:    unix seconds:8 nanoseconds:4, or seconds = MinInt64 for the zero time
//	attrs:   n {key value}*
//	key:     n: the key's number + 1 (see spanKeys), or 0 then str
//	value:   type:1 then by type: bool:1, int64:8, float64 bits:8,
//	         string: str, bytes: str, []bool: n {1}*, []int64: n {8}*,
//	         []float64: n {8}*, []string: n {str}*, slice: n {value}*,
//	         map: attrs; empty: nothing; typeValueRef: the index (1 byte)
//	         of the string among the span's references (see spanValues)
//
// appendSpanRecord reports false for a span with an attribute value of a
// type it does not know (a later SDK's): the buffer keeps such a span as
// it is. s is the span's fields (see fieldsOf).

func appendSpanRecord(b []byte, s *spanFields, enc *spanEnc) ([]byte, bool) {
	enc.nrefs = 0
	ok := true
	b = appendSpanContext(b, &s.spanContext)
	b = appendSpanContext(b, &s.parent)
	b = append(b, byte(s.spanKind))
	b = appendTime(b, s.startTime)
	b = appendTime(b, s.endTime)
	b = append(b, byte(s.status.Code))
	b = appendRecStr(b, s.status.Description)
	b = appendRecStr(b, s.name)
	b = binary.AppendUvarint(b, uint64(s.childSpanCount))
	b, ok = appendAttrs(b, s.attributes, ok, enc)
	b = binary.AppendUvarint(b, uint64(s.droppedAttributeCount))
	evs := s.events
	b = binary.AppendUvarint(b, uint64(len(evs)))
	for i := range evs {
		e := &evs[i]
		b = appendRecStr(b, e.Name)
		b = appendTime(b, e.Time)
		b, ok = appendAttrs(b, e.Attributes, ok, enc)
		b = binary.AppendUvarint(b, uint64(e.DroppedAttributeCount))
	}
	b = binary.AppendUvarint(b, uint64(s.droppedEventCount))
	links := s.links
	b = binary.AppendUvarint(b, uint64(len(links)))
	for i := range links {
		l := &links[i]
		b = appendSpanContext(b, &l.SpanContext)
		b, ok = appendAttrs(b, l.Attributes, ok, enc)
		b = binary.AppendUvarint(b, uint64(l.DroppedAttributeCount))
	}
	b = binary.AppendUvarint(b, uint64(s.droppedLinkCount))
	return b, ok
}

// appendSpanContext takes sc by pointer, which saves a copy of its 64
// bytes (its getters, with value receivers, still copy it).
func appendSpanContext(b []byte, sc *trace.SpanContext) []byte {
	t, s := sc.TraceID(), sc.SpanID()
	b = append(b, t[:]...)
	b = append(b, s[:]...)
	remote := byte(0)
	if sc.IsRemote() {
		remote = 1
	}
	b = append(b, byte(sc.TraceFlags()), remote)
	if ts := sc.TraceState(); ts.Len() > 0 {
		return appendRecStr(b, ts.String())
	}
	return append(b, 0)
}

func appendTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint64(b, 1<<63), 0)
	}
	return binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint64(b, uint64(t.Unix())), uint32(t.Nanosecond()))
}

func appendRecStr(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendAttrs(b []byte, kvs []attribute.KeyValue, ok bool, enc *spanEnc) ([]byte, bool) {
	b = binary.AppendUvarint(b, uint64(len(kvs)))
	for i := range kvs {
		kv := &kvs[i]
		num, numbered := enc.keys.lookup(string(kv.Key))
		if !numbered {
			num, numbered = enc.keys.number(string(kv.Key))
		}
		if numbered {
			b = binary.AppendUvarint(b, uint64(num)+1)
		} else {
			b = appendRecStr(append(b, 0), string(kv.Key))
		}
		// The common types here, the others in appendValue.
		switch t := kv.Value.Type(); t {
		case attribute.STRING:
			v := kv.Value.AsString()
			if len(v) >= minValueRef && numbered && enc.nrefs < maxSpanRefs {
				enc.refs[enc.nrefs] = enc.vals.ref(num, v)
				b = append(b, byte(typeValueRef), byte(enc.nrefs))
				enc.nrefs++
			} else {
				b = appendRecStr(append(b, byte(t)), v)
			}
		case attribute.INT64:
			b = binary.LittleEndian.AppendUint64(append(b, byte(t)), uint64(kv.Value.AsInt64()))
		default:
			b, ok = appendValue(b, kv.Value, ok, enc)
		}
	}
	return b, ok
}

func appendValue(b []byte, v attribute.Value, ok bool, enc *spanEnc) ([]byte, bool) {
	t := v.Type()
	b = append(b, byte(t))
	switch t {
	case attribute.EMPTY:
	case attribute.BOOL:
		c := byte(0)
		if v.AsBool() {
			c = 1
		}
		b = append(b, c)
	case attribute.INT64:
		b = binary.LittleEndian.AppendUint64(b, uint64(v.AsInt64()))
	case attribute.FLOAT64:
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v.AsFloat64()))
	case attribute.STRING:
		b = appendRecStr(b, v.AsString())
	case attribute.BYTESLICE:
		bs := v.AsByteSlice()
		b = append(binary.AppendUvarint(b, uint64(len(bs))), bs...)
	case attribute.BOOLSLICE:
		vs := v.AsBoolSlice()
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, x := range vs {
			c := byte(0)
			if x {
				c = 1
			}
			b = append(b, c)
		}
	case attribute.INT64SLICE:
		vs := v.AsInt64Slice()
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, x := range vs {
			b = binary.LittleEndian.AppendUint64(b, uint64(x))
		}
	case attribute.FLOAT64SLICE:
		vs := v.AsFloat64Slice()
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, x := range vs {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
		}
	case attribute.STRINGSLICE:
		b = enc.appendStrings(b, v)
	case attribute.SLICE:
		vs := v.AsSlice()
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, x := range vs {
			b, ok = appendValue(b, x, ok, enc)
		}
	case attribute.MAP:
		b, ok = appendAttrs(b, v.AsMap(), ok, enc)
	default:
		ok = false
	}
	return b, ok
}

// errSpanRecord reports a record that does not decode: a bug, since the
// buffer only decodes what it encoded.
var errSpanRecord = errors.New("flight: corrupt span record")

// spanReader decodes one record. Its strings share one copy of the
// record's bytes (str), so that a decoded span costs a few allocations,
// not one per string.
type spanReader struct {
	keys []string // the key numbers' names
	refs []string // the span's referenced values
	str  string   // the record
	off  int
	err  error
}

func (r *spanReader) fail() {
	if r.err == nil {
		r.err = errSpanRecord
	}
	r.off = len(r.str)
}

func (r *spanReader) bytes(n int) string {
	if n < 0 || n > len(r.str)-r.off {
		r.fail()
		return ""
	}
	s := r.str[r.off : r.off+n]
	r.off += n
	return s
}

func (r *spanReader) byte() byte {
	s := r.bytes(1)
	if s == "" {
		return 0
	}
	return s[0]
}

func (r *spanReader) uvarint() uint64 {
	var x uint64
	var shift uint
	for i := 0; i < binary.MaxVarintLen64; i++ {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		if c < 0x80 {
			return x | uint64(c)<<shift
		}
		x |= uint64(c&0x7f) << shift
		shift += 7
	}
	r.fail()
	return 0
}

// count reads a length that must fit in what is left of the record, each
// item taking at least min bytes.
func (r *spanReader) count(min int) int {
	n := r.uvarint()
	if n > uint64(len(r.str)-r.off)/uint64(min) {
		r.fail()
		return 0
	}
	return int(n)
}

func (r *spanReader) u64() uint64 {
	s := r.bytes(8)
	if len(s) < 8 {
		return 0
	}
	return binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(s), 8))
}

func (r *spanReader) text() string { return r.bytes(r.count(1)) }

func (r *spanReader) time() time.Time {
	sec := r.u64()
	s := r.bytes(4)
	if len(s) < 4 || sec == 1<<63 {
		return time.Time{}
	}
	return time.Unix(int64(sec), int64(binary.LittleEndian.Uint32(unsafe.Slice(unsafe.StringData(s), 4))))
}

func (r *spanReader) spanContext() trace.SpanContext {
	var cfg trace.SpanContextConfig
	copy(cfg.TraceID[:], r.bytes(16))
	copy(cfg.SpanID[:], r.bytes(8))
	cfg.TraceFlags = trace.TraceFlags(r.byte())
	cfg.Remote = r.byte() == 1
	if ts := r.text(); ts != "" {
		st, err := trace.ParseTraceState(ts)
		if err != nil {
			r.fail()
		}
		cfg.TraceState = st
	}
	return trace.NewSpanContext(cfg)
}

func (r *spanReader) attrs() []attribute.KeyValue {
	n := r.count(2)
	if n == 0 {
		return nil
	}
	kvs := make([]attribute.KeyValue, n)
	for i := range kvs {
		if n := r.uvarint(); n == 0 {
			kvs[i].Key = attribute.Key(r.text())
		} else if n <= uint64(len(r.keys)) {
			kvs[i].Key = attribute.Key(r.keys[n-1])
		} else {
			r.fail()
		}
		kvs[i].Value = r.value()
	}
	return kvs
}

func (r *spanReader) value() attribute.Value {
	switch attribute.Type(r.byte()) {
	case typeValueRef:
		if k := int(r.byte()); k < len(r.refs) {
			return attribute.StringValue(r.refs[k])
		}
	case attribute.EMPTY:
		return attribute.Value{}
	case attribute.BOOL:
		return attribute.BoolValue(r.byte() == 1)
	case attribute.INT64:
		return attribute.Int64Value(int64(r.u64()))
	case attribute.FLOAT64:
		return attribute.Float64Value(math.Float64frombits(r.u64()))
	case attribute.STRING:
		return attribute.StringValue(r.text())
	case attribute.BYTESLICE:
		return attribute.ByteSliceValue([]byte(r.text()))
	case attribute.BOOLSLICE:
		vs := make([]bool, r.count(1))
		for i := range vs {
			vs[i] = r.byte() == 1
		}
		return attribute.BoolSliceValue(vs)
	case attribute.INT64SLICE:
		vs := make([]int64, r.count(8))
		for i := range vs {
			vs[i] = int64(r.u64())
		}
		return attribute.Int64SliceValue(vs)
	case attribute.FLOAT64SLICE:
		vs := make([]float64, r.count(8))
		for i := range vs {
			vs[i] = math.Float64frombits(r.u64())
		}
		return attribute.Float64SliceValue(vs)
	case attribute.STRINGSLICE:
		vs := make([]string, r.count(1))
		for i := range vs {
			vs[i] = r.text()
		}
		return attribute.StringSliceValue(vs)
	case attribute.SLICE:
		vs := make([]attribute.Value, r.count(1))
		for i := range vs {
			vs[i] = r.value()
		}
		return attribute.SliceValue(vs...)
	case attribute.MAP:
		return attribute.MapValue(r.attrs()...)
	}
	r.fail()
	return attribute.Value{}
}

// decodedSpan is a span decoded from a record: the fields of a
// ReadOnlySpan, read back.
type decodedSpan struct {
	sdktrace.ReadOnlySpan // only for the interface's unexported method; never called

	name          string
	sc, parent    trace.SpanContext
	kind          trace.SpanKind
	start, end    time.Time
	status        sdktrace.Status
	children      int
	attrs         []attribute.KeyValue
	droppedAttrs  int
	events        []sdktrace.Event
	droppedEvents int
	links         []sdktrace.Link
	droppedLinks  int
	scope         *spanScope
}

// decodeSpanRecord decodes rec, a record appendSpanRecord wrote, into a
// span of the given resource and scope.
func decodeSpanRecord(rec string, scope *spanScope, keys, refs []string) (*decodedSpan, error) {
	r := &spanReader{str: rec, keys: keys, refs: refs}
	d := &decodedSpan{scope: scope}
	d.sc = r.spanContext()
	d.parent = r.spanContext()
	d.kind = trace.SpanKind(r.byte())
	d.start = r.time()
	d.end = r.time()
	d.status.Code = codes.Code(r.byte())
	d.status.Description = r.text()
	d.name = r.text()
	d.children = int(r.uvarint())
	d.attrs = r.attrs()
	d.droppedAttrs = int(r.uvarint())
	if n := r.count(14); n > 0 {
		d.events = make([]sdktrace.Event, n)
		for i := range d.events {
			e := &d.events[i]
			e.Name = r.text()
			e.Time = r.time()
			e.Attributes = r.attrs()
			e.DroppedAttributeCount = int(r.uvarint())
		}
	}
	d.droppedEvents = int(r.uvarint())
	if n := r.count(28); n > 0 {
		d.links = make([]sdktrace.Link, n)
		for i := range d.links {
			l := &d.links[i]
			l.SpanContext = r.spanContext()
			l.Attributes = r.attrs()
			l.DroppedAttributeCount = int(r.uvarint())
		}
	}
	d.droppedLinks = int(r.uvarint())
	if r.err == nil && r.off != len(r.str) {
		r.fail()
	}
	return d, r.err
}

func (d *decodedSpan) Name() string                     { return d.name }
func (d *decodedSpan) SpanContext() trace.SpanContext   { return d.sc }
func (d *decodedSpan) Parent() trace.SpanContext        { return d.parent }
func (d *decodedSpan) SpanKind() trace.SpanKind         { return d.kind }
func (d *decodedSpan) StartTime() time.Time             { return d.start }
func (d *decodedSpan) EndTime() time.Time               { return d.end }
func (d *decodedSpan) Attributes() []attribute.KeyValue { return d.attrs }
func (d *decodedSpan) Links() []sdktrace.Link           { return d.links }
func (d *decodedSpan) Events() []sdktrace.Event         { return d.events }
func (d *decodedSpan) Status() sdktrace.Status          { return d.status }
func (d *decodedSpan) InstrumentationScope() instrumentation.Scope {
	return d.scope.scope
}

//nolint:staticcheck // part of the interface
func (d *decodedSpan) InstrumentationLibrary() instrumentation.Library {
	return d.scope.scope
}
func (d *decodedSpan) Resource() *resource.Resource { return d.scope.res }
func (d *decodedSpan) DroppedAttributes() int       { return d.droppedAttrs }
func (d *decodedSpan) DroppedLinks() int            { return d.droppedLinks }
func (d *decodedSpan) DroppedEvents() int           { return d.droppedEvents }
func (d *decodedSpan) ChildSpanCount() int          { return d.children }

// spanScope is what spans share and their records reference: the
// resource and instrumentation scope of the provider and tracer that made
// them, with the number of kept records that reference it.
type spanScope struct {
	res   *resource.Resource
	scope instrumentation.Scope
	refs  int
}

// same reports whether s is the resource and scope of span.
func (s *spanScope) same(span *spanFields) bool {
	if s.res != span.resource {
		return false
	}
	sc := &span.instrumentationScope
	if s.scope.Name != sc.Name || s.scope.Version != sc.Version || s.scope.SchemaURL != sc.SchemaURL {
		return false
	}
	if s.scope.Attributes.Len() == 0 && sc.Attributes.Len() == 0 {
		return true
	}
	return s.scope.Attributes.Equals(&sc.Attributes)
}

// spanKeys numbers attribute keys, so that a record holds a key's number
// instead of its bytes: nearly all keys are constants, and they are about
// half the bytes of a traced span's attributes. Numbers are never reused;
// past maxSpanKeys keys, records hold new keys' bytes.
type spanKeys struct {
	names []string // by number
	index map[string]uint32
	// fast caches numbers by the address of the key's bytes, so that a
	// constant key is found without hashing or comparing its bytes: a set
	// of two entries for each hash of the address. With one entry a hash,
	// keys that share it take turns and miss at every span (a traced
	// agent's spans have some sixty keys: in BenchmarkFullStack four
	// pairs of them shared an entry of 256, ten map look-ups a run). An
	// entry holds the address of the bytes it was found for, so that
	// they cannot be freed and their address reused by another key.
	fast [keySets][2]fastKey
}

type fastKey struct {
	p   unsafe.Pointer // the key's bytes
	n1  uint32         // its length + 1; 0: an empty entry, which no key matches
	num uint32
}

// keySets is the number of sets of spanKeys' address cache.
const keySets = 256

// keySet returns the set of the key whose bytes are at p, of length
// n1-1.
func keySet(p unsafe.Pointer, n1 int) uint8 {
	return uint8((uint64(uintptr(p)) + uint64(n1)) * 0x9e3779b97f4a7c15 >> 56)
}

const maxSpanKeys = 4096

// number returns k's number, numbering it if it is new; false when the
// numbers are used up.
func (ks *spanKeys) number(k string) (uint32, bool) {
	if n, hit := ks.lookup(k); hit {
		return n, true
	}
	n, ok := ks.index[k]
	if !ok {
		if len(ks.names) >= maxSpanKeys {
			return 0, false
		}
		if ks.index == nil {
			ks.index = make(map[string]uint32)
		}
		n = uint32(len(ks.names))
		name := string([]byte(k)) // its own copy: k's bytes may belong to a larger value
		ks.names = append(ks.names, name)
		ks.index[name] = n
	}
	if uint64(len(k)) < math.MaxUint32 {
		// The newest first: the older entry of the set gives way.
		p := unsafe.Pointer(unsafe.StringData(k))
		set := &ks.fast[keySet(p, len(k)+1)]
		set[1], set[0] = set[0], fastKey{p: p, n1: uint32(len(k)) + 1, num: n}
	}
	return n, true
}

// lookup returns k's number from the address cache, false when it is not
// there. It is small enough to be inlined into appendAttrs, which asks
// for every attribute's key and calls number only on a miss (number,
// with its map, is not inlined).
func (ks *spanKeys) lookup(k string) (uint32, bool) {
	p, n1 := unsafe.Pointer(unsafe.StringData(k)), len(k)+1
	set := &ks.fast[keySet(p, n1)]
	for i := range set {
		if e := &set[i]; e.p == p && int(e.n1) == n1 {
			return e.num, true
		}
	}
	return 0, false
}

// spanEnc is what encoding span records takes beside the span: the key
// numbers, the referenced values, and the references of the span being
// encoded.
type spanEnc struct {
	keys  spanKeys
	vals  spanValues
	refs  [maxSpanRefs]int32 // indexes in vals.entries
	nrefs int
	// strSlices holds the encodings of the last two string-slice values
	// (see appendStrings); strNext is the one a new value replaces.
	strSlices [2]encodedValue
	strNext   int
}

// encodedValue is an attribute value and its encoding in a record.
type encodedValue struct {
	v   attribute.Value
	enc []byte // nil: none
}

// maxEncodedValue bounds the encodings spanEnc keeps.
const maxEncodedValue = 256

// appendStrings appends the encoding of v, a string-slice value. Reading
// the strings out of an attribute.Value copies them (AsStringSlice
// allocates, through reflection for more than three), and a traced
// agent's spans repeat a few such values (a chat span's finish reasons):
// the encodings of the last two are kept, and a value equal to one of
// them (attribute values are comparable: OpenTelemetry keeps them so for
// attribute sets) is appended from it.
func (enc *spanEnc) appendStrings(b []byte, v attribute.Value) []byte {
	for i := range enc.strSlices {
		if c := &enc.strSlices[i]; c.enc != nil && c.v == v {
			return append(b, c.enc...)
		}
	}
	n := len(b)
	vs := v.AsStringSlice()
	b = binary.AppendUvarint(b, uint64(len(vs)))
	for _, x := range vs {
		b = appendRecStr(b, x)
	}
	if len(b)-n <= maxEncodedValue {
		c := &enc.strSlices[enc.strNext]
		enc.strNext ^= 1
		c.v, c.enc = v, append(c.enc[:0], b[n:]...)
	}
	return b
}

// A span record holds a string value of at least minValueRef bytes by
// reference, up to maxSpanRefs of them a span: see spanValues.
const (
	minValueRef  = 512
	maxSpanRefs  = 4
	typeValueRef = attribute.Type(0x80) // not an SDK type
)

// spanValues holds the long string values of kept spans as the strings
// they are, each referenced by the records of the spans that have it,
// instead of copying their bytes into the arena. The long values of a
// traced agent's spans are tool definitions and system instructions, the
// same string on every chat span of a session (the tracing extension
// encodes them once), and message histories: a reference costs neither a
// copy nor arena room, and the same value is held once. The garbage
// collector sees one object a value, not a span's whole attributes.
type spanValues struct {
	entries []valueEntry
	free    []int32  // indexes of unused entries
	byKey   []uint32 // by key number: 1 + the index of the key's latest value
}

type valueEntry struct {
	s    string
	refs int32 // records referencing it; 0: unused
}

// ref returns the index of the entry holding v, the value of key number
// key, counting a reference: the key's latest value when it is the same
// (as a cached encoding is, at once), else a new entry.
func (vs *spanValues) ref(key uint32, v string) int32 {
	if int(key) < len(vs.byKey) {
		if i := vs.byKey[key]; i > 0 {
			if e := &vs.entries[i-1]; e.refs > 0 && e.s == v {
				e.refs++
				return int32(i - 1)
			}
		}
	} else {
		vs.byKey = append(vs.byKey, make([]uint32, int(key)+1-len(vs.byKey))...)
	}
	var i int32
	if n := len(vs.free); n > 0 {
		i, vs.free = vs.free[n-1], vs.free[:n-1]
	} else {
		i = int32(len(vs.entries))
		vs.entries = append(vs.entries, valueEntry{})
	}
	vs.entries[i] = valueEntry{s: v, refs: 1}
	vs.byKey[key] = uint32(i) + 1
	return i
}

// release drops a reference to entry i.
func (vs *spanValues) release(i int32) {
	e := &vs.entries[i]
	if e.refs--; e.refs == 0 {
		e.s = ""
		vs.free = append(vs.free, i)
	}
}
