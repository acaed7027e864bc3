package flight

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/harnessx/harnessx/internal/otlpspans"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// everyKindStub is a span with every field set and an attribute of every
// value type the SDK has.
func everyKindStub(t testing.TB) tracetest.SpanStub {
	ts, err := trace.ParseTraceState("vendor=abc,other=x1")
	if err != nil {
		t.Fatal(err)
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5}, TraceFlags: trace.FlagsSampled, TraceState: ts})
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{9}, Remote: true})
	link := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{7}, SpanID: trace.SpanID{8}, TraceFlags: trace.FlagsSampled})
	attrs := []attribute.KeyValue{
		{Key: "empty"},
		attribute.Bool("t", true), attribute.Bool("f", false),
		attribute.Int64("i", -1<<62), attribute.Int64("zero", 0),
		attribute.Float64("pi", math.Pi), attribute.Float64("nan", math.NaN()), attribute.Float64("inf", math.Inf(-1)),
		attribute.String("s", "héllo \x00 \xff"), attribute.String("", ""), attribute.String("long", strings.Repeat("x", 70_000)),
		attribute.ByteSlice("bytes", []byte{0, 1, 255}), attribute.ByteSlice("nobytes", nil),
		attribute.BoolSlice("bs", []bool{true, false, true}), attribute.Int64Slice("is", []int64{1, -2, math.MaxInt64}),
		attribute.Float64Slice("fs", []float64{0.5, -1e300}), attribute.StringSlice("ss", []string{"a", "", "ccc"}),
		attribute.StringSlice("noss", nil),
		attribute.Slice("mixed", attribute.IntValue(1), attribute.StringValue("two"), attribute.SliceValue(attribute.BoolValue(true))),
		attribute.Map("map", attribute.String("k", "v"), attribute.Map("inner", attribute.Int("n", 3))),
	}
	res := resource.NewSchemaless(attribute.String("service.name", "svc"))
	return tracetest.SpanStub{
		Name: "chat m", SpanContext: sc, Parent: parent, SpanKind: trace.SpanKindClient,
		StartTime: time.Unix(1_700_000_000, 123_456_789), EndTime: time.Unix(1_700_000_001, 999_999_999),
		Attributes: attrs,
		Events: []sdktrace.Event{
			{Name: "exception", Time: time.Unix(1_700_000_000, 5), Attributes: attrs[:9], DroppedAttributeCount: 2},
			{Name: "", Time: time.Time{}},
		},
		Links:  []sdktrace.Link{{SpanContext: link, Attributes: attrs[3:5], DroppedAttributeCount: 1}, {SpanContext: parent}},
		Status: sdktrace.Status{Code: codes.Error, Description: "it failed"}, DroppedAttributes: 3, DroppedEvents: 4, DroppedLinks: 5,
		ChildSpanCount: 6, Resource: res,
		InstrumentationScope: instrumentation.Scope{Name: "scope", Version: "v1", SchemaURL: "https://example.com/s",
			Attributes: attribute.NewSet(attribute.String("a", "b"))},
	}
}

// strings returns the values the span just encoded with enc references.
func (vs *spanValues) strings(enc spanEnc) []string {
	var out []string
	for _, i := range enc.refs[:enc.nrefs] {
		out = append(out, vs.entries[i].s)
	}
	return out
}

// asStub reads s back as a stub, for comparisons.
func asStub(s sdktrace.ReadOnlySpan) tracetest.SpanStub {
	st := tracetest.SpanStubFromReadOnlySpan(s)
	st.InstrumentationLibrary = instrumentation.Scope{}
	return st
}

func TestSpanRecordRoundTrip(t *testing.T) {
	stubs := []tracetest.SpanStub{everyKindStub(t), {Name: "bare"}}
	for _, stub := range stubs {
		in := stub.Snapshot()
		var enc spanEnc
		rec, ok := appendSpanRecord(nil, fieldsOf(in, new(spanFields)), &enc)
		if !ok {
			t.Fatalf("%s: not encodable", stub.Name)
		}
		out, err := decodeSpanRecord(string(rec), &spanScope{res: in.Resource(), scope: in.InstrumentationScope()}, enc.keys.names, enc.vals.strings(enc))
		if err != nil {
			t.Fatalf("%s: %v", stub.Name, err)
		}
		want, got := asStub(in), asStub(out)
		// NaN is not equal to itself: compare its bits.
		if !reflect.DeepEqual(fmt.Sprintf("%#v", got), fmt.Sprintf("%#v", want)) {
			t.Errorf("%s: decoded\n%#v\nwant\n%#v", stub.Name, got, want)
		}
		for i, kv := range want.Attributes {
			if kv.Value.Type() == attribute.FLOAT64 && math.Float64bits(got.Attributes[i].Value.AsFloat64()) != math.Float64bits(kv.Value.AsFloat64()) {
				t.Errorf("%s: %s = %v, want %v", stub.Name, kv.Key, got.Attributes[i].Value.AsFloat64(), kv.Value.AsFloat64())
			}
		}
	}
}

// TestSpanRecordStringSlices encodes spans through one encoder, as the
// processor does, with string-slice attributes that repeat, alternate,
// change in one element or in length, are empty, nil or long: each record
// decodes to its span's values, and a repeated value costs no
// allocation.
func TestSpanRecordStringSlices(t *testing.T) {
	long := make([]string, 40)
	for i := range long {
		long[i] = strings.Repeat("z", i)
	}
	values := [][]string{{"end_turn"}, {"end_turn"}, {"tool_use"}, {"end_turn"}, {"tool_use"}, {"a", "b"}, {"a", "c"},
		{"a", "b", "c", "d"}, {"a", "b", "c", "e"}, {}, nil, {""}, long, long, {"end_turn"}, {"x\x00y", "é"}}
	var enc spanEnc
	for i, v := range values {
		stub := tracetest.SpanStub{Name: "chat m", Attributes: []attribute.KeyValue{
			attribute.StringSlice("gen_ai.response.finish_reasons", v), attribute.StringSlice("other", values[(i+3)%len(values)])}}
		in := stub.Snapshot()
		enc.nrefs = 0
		rec, ok := appendSpanRecord(nil, fieldsOf(in, new(spanFields)), &enc)
		if !ok {
			t.Fatalf("value %d: not encodable", i)
		}
		out, err := decodeSpanRecord(string(rec), &spanScope{res: in.Resource(), scope: in.InstrumentationScope()}, enc.keys.names, enc.vals.strings(enc))
		if err != nil {
			t.Fatalf("value %d: %v", i, err)
		}
		for k, kv := range in.Attributes() {
			if got := out.Attributes()[k].Value.AsStringSlice(); !slices.Equal(got, kv.Value.AsStringSlice()) {
				t.Errorf("value %d, %s: decoded %q, want %q", i, kv.Key, got, kv.Value.AsStringSlice())
			}
		}
	}
	v := attribute.StringSliceValue([]string{"end_turn", "max_tokens"})
	buf := make([]byte, 0, 256)
	enc.appendStrings(buf, v)
	if n := testing.AllocsPerRun(100, func() { buf = enc.appendStrings(buf[:0], v) }); n != 0 {
		t.Errorf("a repeated string slice: %v allocations, want 0", n)
	}
}

func TestSpanRecordCorrupt(t *testing.T) {
	var enc spanEnc
	in := everyKindStub(t).Snapshot()
	rec, _ := appendSpanRecord(nil, fieldsOf(in, new(spanFields)), &enc)
	for n := 0; n < len(rec); n += 1 + n/64 {
		if _, err := decodeSpanRecord(string(rec[:n]), &spanScope{}, enc.keys.names, enc.vals.strings(enc)); err == nil {
			t.Fatalf("a record cut to %d of %d bytes decoded", n, len(rec))
		}
	}
	if _, err := decodeSpanRecord(string(rec)+"x", &spanScope{}, enc.keys.names, enc.vals.strings(enc)); err == nil {
		t.Fatal("a record with a trailing byte decoded")
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := []byte(string(rec[:min(len(rec), 600)]))
		for range 1 + r.IntN(4) {
			b[r.IntN(len(b))] = byte(r.Uint32())
		}
		decodeSpanRecord(string(b), &spanScope{}, enc.keys.names[:r.IntN(len(enc.keys.names))], enc.vals.strings(enc)) // must not panic
	}
}

// payloadSpan is a span named name with a payload of n bytes.
func payloadSpan(tr trace.Tracer, name string, n int) {
	_, s := tr.Start(context.Background(), name)
	s.SetAttributes(attribute.String("payload", strings.Repeat(name[:1], n)))
	s.End()
}

func TestSpanBufferKeepsTheLatest(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, capacity := range []int{1, 2, 3, 7, 64} {
		p := newSpanProcessor(capacity)
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p))
		tr := tp.Tracer("t")
		type want struct {
			name string
			n    int
		}
		var all []want
		for i := range 400 {
			n := r.IntN(300)
			switch r.IntN(20) {
			case 0:
				n = 200_000 + r.IntN(100_000) // a burst of large spans
			case 1:
				n = 0
			}
			name := fmt.Sprintf("%c%d", 'a'+rune(i%26), i)
			payloadSpan(tr, name, n)
			all = append(all, want{name, n})
			got := p.Spans(nil)
			exp := all[max(0, len(all)-capacity):]
			if len(got) != len(exp) {
				t.Fatalf("capacity %d, after %d spans: %d kept, want %d", capacity, len(all), len(got), len(exp))
			}
			for k, s := range got {
				v := s.Attributes()[0].Value.AsString()
				if s.Name() != exp[k].name || len(v) != exp[k].n || strings.Trim(v, exp[k].name[:1]) != "" {
					t.Fatalf("capacity %d, after %d spans: span %d is %q with %d bytes, want %q with %d", capacity, len(all), k, s.Name(), len(v), exp[k].name, exp[k].n)
				}
			}
			if d := p.Dropped(); d != uint64(len(all)-len(exp)) {
				t.Fatalf("capacity %d: %d dropped, want %d", capacity, d, len(all)-len(exp))
			}
		}
		// Small spans only, for long enough to wrap: the arena shrinks to
		// what they need.
		for i := range 20 * capacity {
			payloadSpan(tr, fmt.Sprintf("s%d", i), 100)
		}
		if got := len(p.arena.buf); got > max(minArena, 16*p.arena.live) {
			t.Errorf("capacity %d: the arena is %d bytes for %d bytes of records", capacity, got, p.arena.live)
		}
		_ = tp.Shutdown(context.Background())
	}
}

func TestSpanBufferSince(t *testing.T) {
	p := newSpanProcessor(4)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p))
	tr := tp.Tracer("t")
	for i := range 6 {
		payloadSpan(tr, fmt.Sprint(i), 10)
	}
	names := func(spans []sdktrace.ReadOnlySpan) string {
		var b []string
		for _, s := range spans {
			b = append(b, s.Name())
		}
		return strings.Join(b, ",")
	}
	if got, last, _, _ := p.since(4, nil); names(got) != "4,5" || last != 6 {
		t.Errorf("since(4) = %s, %d; want 4,5, 6", names(got), last)
	}
	if got, last, _, _ := p.since(0, nil); names(got) != "2,3,4,5" || last != 6 {
		t.Errorf("since(0) = %s, %d; want 2,3,4,5, 6", names(got), last)
	}
	if got, last, _, _ := p.since(6, nil); len(got) != 0 || last != 6 {
		t.Errorf("since(6) = %s, %d; want nothing, 6", names(got), last)
	}
	if n := p.pending(3); n != 3 {
		t.Errorf("pending(3) = %d, want 3", n)
	}
	second := p.Spans(nil)[1].SpanContext().TraceID()
	if got, _, _, _ := p.since(0, func(id trace.TraceID) bool { return id == second }); names(got) != "3" {
		t.Errorf("since(0, one trace) = %s, want 3", names(got))
	}
}

func TestSpanBufferDropsRepeats(t *testing.T) {
	p := newSpanProcessor(8)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p), sdktrace.WithSpanProcessor(p))
	payloadSpan(tp.Tracer("t"), "once", 3)
	if n := len(p.Spans(nil)); n != 1 {
		t.Errorf("a span given twice was kept %d times", n)
	}
}

// TestSpanBufferScopes checks that spans keep their provider's resource
// and tracer's scope, and that the buffer forgets a scope when it holds
// no span of it.
func TestSpanBufferScopes(t *testing.T) {
	p := newSpanProcessor(3)
	ra := resource.NewSchemaless(attribute.String("service.name", "a"))
	rb := resource.NewSchemaless(attribute.String("service.name", "b"))
	tpa := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p), sdktrace.WithResource(ra))
	tpb := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p), sdktrace.WithResource(rb))
	payloadSpan(tpa.Tracer("x", trace.WithInstrumentationVersion("1")), "a1", 1)
	payloadSpan(tpb.Tracer("x"), "b1", 1)
	payloadSpan(tpa.Tracer("y"), "a2", 1)
	for _, s := range p.Spans(nil) {
		want := map[string]string{"a1": "a/x/1", "b1": "b/x/", "a2": "a/y/"}[s.Name()]
		sn, _ := s.Resource().Set().Value("service.name")
		if got := sn.AsString() + "/" + s.InstrumentationScope().Name + "/" + s.InstrumentationScope().Version; got != want {
			t.Errorf("%s: resource/scope %s, want %s", s.Name(), got, want)
		}
	}
	for i := range 3 {
		payloadSpan(tpb.Tracer("x"), fmt.Sprint("b", i+2), 1)
	}
	n := 0
	for _, sc := range p.scopes {
		if sc != nil {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d scopes kept for spans of one scope", n)
	}
}

// TestSpanRecordKeys checks that keys are numbered once, whatever their
// bytes' address, and held as bytes once the numbers run out.
func TestSpanRecordKeys(t *testing.T) {
	var enc spanEnc
	dyn := func(s string) string { return string([]byte(s)) } // the same key at another address
	for _, k := range []string{"a", dyn("a"), "b", dyn("b"), "a"} {
		enc.keys.number(k)
	}
	if len(enc.keys.names) != 2 {
		t.Fatalf("%d keys numbered for two", len(enc.keys.names))
	}
	stub := tracetest.SpanStub{Name: "s"}
	for i := range maxSpanKeys + 3 {
		stub.Attributes = append(stub.Attributes, attribute.Int(fmt.Sprint("k", i), i))
	}
	in := stub.Snapshot()
	rec, _ := appendSpanRecord(nil, fieldsOf(in, new(spanFields)), &enc)
	if len(enc.keys.names) != maxSpanKeys {
		t.Errorf("%d keys numbered, want at most %d", len(enc.keys.names), maxSpanKeys)
	}
	out, err := decodeSpanRecord(string(rec), &spanScope{}, enc.keys.names, enc.vals.strings(enc))
	if err != nil || !reflect.DeepEqual(out.Attributes(), in.Attributes()) {
		t.Errorf("attributes past the numbered keys do not round-trip: %v", err)
	}
}

// TestSpanKeyCache checks spanKeys' address cache: two keys whose bytes'
// addresses share a set are both found there (with one entry a set they
// took turns), a third in the set makes the older give way and is then
// numbered from the map, and a key that starts at another key's address
// (a prefix of it) is told apart by its length.
func TestSpanKeyCache(t *testing.T) {
	var ks spanKeys
	buf := []byte(strings.Repeat("abcdefghijklmnop", 4096))
	key := func(off, n int) string { return unsafe.String(&buf[off], n) }
	// Three keys of one set, with distinct bytes.
	var same []string
	set := func(k string) uint8 { return keySet(unsafe.Pointer(unsafe.StringData(k)), len(k)+1) }
	want := set(key(0, 8))
	for off := 1; len(same) < 3 && off+8 < len(buf); off++ {
		if k := key(off, 8); set(k) == want && !slices.Contains(same, k) {
			same = append(same, k)
		}
	}
	if len(same) < 3 {
		t.Fatal("no three keys of one set")
	}
	n0, _ := ks.number(same[0])
	n1, _ := ks.number(same[1])
	for i, k := range same[:2] {
		if n, hit := ks.lookup(k); !hit || n != []uint32{n0, n1}[i] {
			t.Errorf("key %d of a set of two: lookup = %d, %v; want %d, true", i, n, hit, []uint32{n0, n1}[i])
		}
	}
	n2, _ := ks.number(same[2])
	if _, hit := ks.lookup(same[0]); hit {
		t.Error("the oldest key of a set is still cached after two newer ones")
	}
	if n, hit := ks.lookup(same[2]); !hit || n != n2 {
		t.Errorf("the newest key: lookup = %d, %v; want %d, true", n, hit, n2)
	}
	if n, _ := ks.number(same[0]); n != n0 {
		t.Errorf("a key out of the cache numbered %d again, was %d", n, n0)
	}

	// A prefix starts at the same address; one whose length gives it the
	// key's set is compared with the key.
	var long, short string
	for off := 100; short == "" && off < len(buf)-300; off++ {
		for n := 1; n < 300; n++ {
			if set(key(off, n)) == set(key(off, 300)) {
				long, short = key(off, 300), key(off, n)
				break
			}
		}
	}
	if short == "" {
		t.Fatal("no prefix in its key's set")
	}
	nl, _ := ks.number(long)
	if n, hit := ks.lookup(short); hit && n == nl {
		t.Errorf("a prefix of a cached key is found as the key (number %d)", n)
	}
	if ns, _ := ks.number(short); ns == nl || ks.names[ns] != short {
		t.Errorf("a prefix numbered %d (%q), the key %d", ns, ks.names[ns], nl)
	}
	if n, hit := ks.lookup(long); !hit || n != nl {
		t.Errorf("the key after its prefix: lookup = %d, %v; want %d, true", n, hit, nl)
	}
}

// TestSpanValueRefs checks that long values are held once however many
// spans have them, that a span keeps at most maxSpanRefs by reference
// (the others as bytes), and that values no kept span has are let go.
func TestSpanValueRefs(t *testing.T) {
	p := newSpanProcessor(3)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p))
	tools := strings.Repeat("tool definitions ", 100) // one string, as a cached encoding is
	inUse := func() (n int, bytes int) {
		for _, e := range p.enc.vals.entries {
			if e.refs > 0 {
				n++
				bytes += len(e.s)
			}
		}
		return n, bytes
	}
	for i := range 10 {
		_, s := tp.Tracer("t").Start(context.Background(), fmt.Sprint(i))
		attrs := []attribute.KeyValue{attribute.String("tools", tools), attribute.String("short", "x")}
		for k := range 5 { // one more than a span references
			attrs = append(attrs, attribute.String(fmt.Sprint("messages", k), fmt.Sprint(i, k, strings.Repeat(".", 600))))
		}
		s.SetAttributes(attrs...)
		s.End()
	}
	n, _ := inUse()
	// 3 spans kept: the tools value once, and 3 message values each (the
	// fifth long value of a span and the fourth message are bytes).
	if want := 1 + 3*3; n != want {
		t.Errorf("%d values held for 3 spans, want %d", n, want)
	}
	for k, s := range p.Spans(nil) {
		i := 7 + k
		got := map[string]string{}
		for _, kv := range s.Attributes() {
			got[string(kv.Key)] = kv.Value.AsString()
		}
		if got["tools"] != tools || got["short"] != "x" {
			t.Errorf("span %d: tools or short value changed", i)
		}
		for k := range 5 {
			if want := fmt.Sprint(i, k, strings.Repeat(".", 600)); got[fmt.Sprint("messages", k)] != want {
				t.Errorf("span %d: messages%d = %.20q…, want %.20q…", i, k, got[fmt.Sprint("messages", k)], want)
			}
		}
	}
	for i := range 3 {
		payloadSpan(tp.Tracer("t"), fmt.Sprint("s", i), 10)
	}
	if n, bytes := inUse(); n != 0 || bytes != 0 {
		t.Errorf("%d values (%d bytes) held after their spans were evicted", n, bytes)
	}
}

// TestSpanValuesCompact checks that after a burst of spans with many long
// values, the value table shrinks to what the kept spans reference, and
// the kept spans (theirs renumbered) and the shared value of a key still
// read back right.
func TestSpanValuesCompact(t *testing.T) {
	p := newSpanProcessor(2048)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p))
	tools := strings.Repeat("tool definitions ", 100)
	long := func(i int) string { return fmt.Sprint(i, strings.Repeat(".", 600)) }
	end := func(name string, attrs ...attribute.KeyValue) {
		_, s := tp.Tracer("t").Start(context.Background(), name)
		s.SetAttributes(attrs...)
		s.End()
	}
	for i := range 2048 { // the burst: four values each
		end(fmt.Sprint("burst", i), attribute.String("a", long(i)), attribute.String("b", long(-i)),
			attribute.String("c", long(i+1e6)), attribute.String("tools", tools))
	}
	if n := len(p.enc.vals.entries); n < 3*2048 {
		t.Fatalf("%d entries after the burst", n)
	}
	for i := range 2048 { // the usual spans: one value each, and the shared one
		end(fmt.Sprint("run", i), attribute.String("m", long(i)), attribute.String("tools", tools))
	}
	if n := len(p.enc.vals.entries); n > 2*2048 {
		t.Errorf("%d value entries kept for 2048 spans of one value and a shared one", n)
	}
	spans := p.Spans(nil)
	if len(spans) != 2048 {
		t.Fatalf("%d spans", len(spans))
	}
	for i, s := range spans {
		got := map[string]string{}
		for _, kv := range s.Attributes() {
			got[string(kv.Key)] = kv.Value.AsString()
		}
		if s.Name() != fmt.Sprint("run", i) || got["m"] != long(i) || got["tools"] != tools {
			t.Fatalf("span %d (%s) reads back wrong after the table shrank", i, s.Name())
		}
	}
	// The shared value is still found by its key: one entry for it.
	shared := 0
	for _, e := range p.enc.vals.entries {
		if e.refs > 0 && e.s == tools {
			shared++
		}
	}
	if shared != 1 {
		t.Errorf("the shared value is held %d times", shared)
	}
}

// TestSpanBufferConcurrent ends spans from several goroutines, long
// values and short, while others read the buffer: every span read back is
// whole (run under -race).
func TestSpanBufferConcurrent(t *testing.T) {
	p := newSpanProcessor(64)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p))
	shared := strings.Repeat("shared tool definitions ", 40)
	done := make(chan struct{})
	var writers sync.WaitGroup
	for w := range 4 {
		writers.Go(func() {
			for i := range 500 {
				_, s := tp.Tracer("t").Start(context.Background(), fmt.Sprintf("w%d-%d", w, i))
				s.SetAttributes(attribute.String("tools", shared), attribute.String("own", strings.Repeat(fmt.Sprint(w), 100*(i%10))))
				s.End()
			}
		})
	}
	var readers sync.WaitGroup
	readers.Go(func() {
		var seq uint64
		for {
			select {
			case <-done:
				return
			default:
			}
			for _, s := range p.Spans(nil) {
				var w, i int
				if _, err := fmt.Sscanf(s.Name(), "w%d-%d", &w, &i); err != nil {
					t.Errorf("a span read back is named %q", s.Name())
					return
				}
				got := map[string]string{}
				for _, kv := range s.Attributes() {
					got[string(kv.Key)] = kv.Value.AsString()
				}
				if got["tools"] != shared || got["own"] != strings.Repeat(fmt.Sprint(w), 100*(i%10)) {
					t.Errorf("span %s read back with other values", s.Name())
					return
				}
			}
			_, seq, _, _ = p.since(seq, nil)
		}
	})
	writers.Wait()
	close(done)
	readers.Wait()
	if n := len(p.Spans(nil)); n != 64 {
		t.Errorf("%d spans kept, want 64", n)
	}
}

// oddSpan is a span with an attribute value of a type the records do not
// know, as a later SDK might have.
type oddSpan struct{ sdktrace.ReadOnlySpan }

func (o oddSpan) Attributes() []attribute.KeyValue {
	v := attribute.StringValue("x")
	*(*attribute.Type)(unsafe.Pointer(&v)) = 99 // Value's first field is its type
	return []attribute.KeyValue{{Key: "odd", Value: v}}
}

func TestSpanBufferKeepsUnknownValuesAsSpans(t *testing.T) {
	p := newSpanProcessor(2)
	base := everyKindStub(t)
	for i := range 5 {
		base.Name = fmt.Sprint(i)
		base.SpanContext = base.SpanContext.WithSpanID(trace.SpanID{byte(i + 1)})
		s := base.Snapshot()
		if i%2 == 1 {
			s = oddSpan{s}
		}
		p.OnEnd(s)
	}
	got := p.Spans(nil)
	if len(got) != 2 || got[0].Name() != "3" || got[1].Name() != "4" {
		t.Fatalf("kept %d spans", len(got))
	}
	if _, ok := got[0].(oddSpan); !ok {
		t.Errorf("span 3 is %T, want the span as it was given", got[0])
	}
	if len(p.odd) != 1 {
		t.Errorf("%d spans kept as objects, want 1 (the others were evicted)", len(p.odd))
	}
}

// BenchmarkSpanProcessorOnEnd keeps SDK spans like a traced run's (21
// attributes, 15 of them strings of ~70 bytes) in a full buffer.
func BenchmarkSpanProcessorOnEnd(b *testing.B) {
	attrs := everyKindStub(b).Attributes[1:7]
	for k := range 15 {
		attrs = append(attrs[:len(attrs):len(attrs)], attribute.String(fmt.Sprint("gen_ai.key.", k), strings.Repeat("v", 10*k)))
	}
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	for range 2 * recentDepth { // never a repeat of the latest spans
		_, s := tp.Tracer("t").Start(context.Background(), "chat m", trace.WithAttributes(attrs...))
		s.End()
	}
	spans := sr.Ended()
	p := newSpanProcessor(0)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		p.OnEnd(spans[i%len(spans)])
		i++
	}
}

// TestSpanSnapshotEncoding: a span snapshot's bytes, encoded straight
// from the buffer's decoded spans, are those a bundle holds for the same
// spans (the OTLP exporter's conversion, redacted, marshalled).
func TestSpanSnapshotEncoding(t *testing.T) {
	p := newSpanProcessor(16)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "svc"), attribute.String("password", "hunter2"))))
	ctx, root := tp.Tracer("a", trace.WithInstrumentationVersion("1")).Start(context.Background(), "invoke_agent")
	_, child := tp.Tracer("b").Start(ctx, "chat m", trace.WithSpanKind(trace.SpanKindClient))
	child.SetAttributes(attribute.String("gen_ai.input.messages", `[{"role":"user","content":"my api_key=sk-ant-api03-`+strings.Repeat("x", 40)+`"}]`),
		attribute.String("long", strings.Repeat("long value ", 40)), attribute.Int("n", 3), attribute.StringSlice("ss", []string{"a", "token=abcdef0123456789"}))
	child.AddEvent("e", trace.WithAttributes(attribute.Bool("b", true)))
	child.SetStatus(codes.Error, "failed: password=hunter2")
	child.End()
	root.End()
	for _, red := range []*Redactor{nil, NewRedactor(nil)} {
		x := &Extension{red: red}
		spans, _, _, err := p.since(0, nil)
		if err != nil || len(spans) != 2 {
			t.Fatalf("%d spans, %v", len(spans), err)
		}
		got := slices.Clone(x.encodeSpans(p.copySince(0, nil)))
		req, err := otlpspans.FromSDK(context.Background(), spans)
		if err != nil {
			t.Fatal(err)
		}
		want, err := marshalSpans(req, red)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("redacting %v: snapshot\n%s\nbundle\n%s", red != nil, got, want)
		}
		if red != nil && bytes.Contains(got, []byte("hunter2")) {
			t.Error("a secret reached the snapshot")
		}
		if again := x.encodeSpans(p.copySince(0, nil)); !bytes.Equal(again, want) {
			t.Errorf("redacting %v: a second snapshot (long strings cached) differs", red != nil)
		}
	}
}

// since returns the buffered spans numbered after seq, oldest first, of
// the traces keep reports true for (every trace when keep is nil), and
// the number of the last span kept (seq when none is newer), and whether
// they are all the kept spans of those traces (none of them is numbered
// seq or before): copySince's copy, decoded. The error reports records
// that did not decode, left out.
func (p *SpanProcessor) since(seq uint64, keep func(trace.TraceID) bool) ([]sdktrace.ReadOnlySpan, uint64, bool, error) {
	c := p.copySince(seq, keep)
	spans, err := c.decode()
	return spans, c.last, c.whole, err
}
