package otlpjson

import (
	"encoding/base64"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/harnessx/harnessx/internal/redact"
)

// The SDK encoders write, straight from the OpenTelemetry SDK's ended
// spans, the bytes Marshal writes for the request the OTLP exporter makes
// of them (its tracetransform conversion) after otlpspans.Redact: no
// protobuf message is built: [AppendSDKRequest] costs a fraction of the
// conversion, the redaction of the request and Marshal (the flight
// recorder's span snapshots use it). TestSDKEncodingMatchesExporter
// compares the two paths.
//
// One difference: a string that is not valid UTF-8 is written with each
// invalid byte replaced by U+FFFD, where Marshal fails the whole request.

// sdkEncoder is an encoder whose strings pass through a redactor.
type sdkEncoder struct {
	encoder
	red   *redact.Redactor // nil: no redaction
	cache *StringCache     // nil: none
}

// text writes s, redacted as a name (Redactor.String).
func (e *sdkEncoder) text(s string) { e.field("", s) }

// field writes s, redacted as the value of the attribute key (as a name
// when key is empty).
func (e *sdkEncoder) field(key, s string) {
	if e.red == nil {
		e.valid(s)
		return
	}
	if e.cache != nil && len(s) >= cacheMin {
		e.out = e.cache.append(e.out, key, s, e.red)
		return
	}
	e.valid(e.red.Field(key, s))
}

// StringCache keeps the redacted JSON encodings of long strings, so that
// a string that spans repeat (a tool catalog, a system prompt) is
// redacted and escaped once, not at every span. It holds at most
// cacheMaxBytes of strings and encodings, and starts afresh past that.
// [StringCache.Rotate] ends a generation: an entry not used in the
// generation before is dropped then, so that a cache its owner rotates
// (the flight recorder, at each span snapshot) keeps what recent
// encodings used, not what some past burst of spans left.
// It keeps copies of the strings it is given, never the strings
// themselves: a caller's string may share a large buffer (the flight
// recorder decodes a snapshot's spans into strings of one buffer, and
// kept as a key, one short string would keep that whole buffer alive for
// as long as the cache kept the entry), or a buffer the caller writes
// again. It is safe for concurrent use.
type StringCache struct {
	mu    sync.Mutex
	m     map[cacheKey]cacheEntry // this generation's entries
	old   map[cacheKey]cacheEntry // the generation before's; an entry used again moves to m
	bytes int                     // of the strings and encodings of m and old
}

type cacheKey struct{ key, s string }

// cacheEntry is an encoding and the key it is kept under: copies of the
// strings it was made for (see StringCache).
type cacheEntry struct {
	k   cacheKey
	enc []byte
}

func (e cacheEntry) bytes() int { return len(e.k.key) + len(e.k.s) + len(e.enc) }

const (
	cacheMin      = 256     // shorter strings are encoded each time
	cacheMaxBytes = 4 << 20 // past this the cache starts afresh
)

// Rotate ends a generation: the entries that were not used since the
// Rotate before are dropped.
func (c *StringCache) Rotate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.old {
		c.bytes -= e.bytes()
	}
	c.old, c.m = c.m, nil
}

// append appends the encoding of red.Field(key, s).
func (c *StringCache) append(dst []byte, key, s string, red *redact.Redactor) []byte {
	k := cacheKey{key, s}
	c.mu.Lock()
	e, ok := c.m[k]
	if !ok {
		if e, ok = c.old[k]; ok {
			delete(c.old, k)
			if c.m == nil {
				c.m = map[cacheKey]cacheEntry{}
			}
			c.m[e.k] = e
		}
	}
	c.mu.Unlock()
	if ok {
		return append(dst, e.enc...)
	}
	n := len(dst)
	enc := sdkEncoder{encoder: encoder{out: dst}}
	enc.valid(red.Field(key, s))
	// Copies, not the caller's strings (see StringCache).
	e = cacheEntry{k: cacheKey{strings.Clone(key), strings.Clone(s)}, enc: slices.Clone(enc.out[n:])}
	c.mu.Lock()
	if c.bytes+e.bytes() > cacheMaxBytes {
		c.m, c.old, c.bytes = nil, nil, 0
	}
	if c.m == nil {
		c.m = map[cacheKey]cacheEntry{}
	}
	// Another call may have added the same key meanwhile.
	if had, ok := c.m[e.k]; ok {
		c.bytes -= had.bytes()
	}
	if had, ok := c.old[e.k]; ok {
		delete(c.old, e.k)
		c.bytes -= had.bytes()
	}
	c.m[e.k] = e
	c.bytes += e.bytes()
	c.mu.Unlock()
	return enc.out
}

// valid writes s, its invalid UTF-8 replaced by U+FFFD.
func (e *sdkEncoder) valid(s string) {
	n := len(e.out)
	out, err := appendString(e.out, s)
	if err != nil {
		out, _ = appendString(out[:n], strings.ToValidUTF8(s, "\uFFFD"))
	}
	e.out = out
}

func (e *sdkEncoder) textField(first *bool, name, s string) {
	if s != "" {
		e.key(first, name)
		e.text(s)
	}
}

// AppendSpan appends the OTLP/JSON object of the ended span s, as Marshal
// writes the span the OTLP exporter makes of it, its strings redacted
// with red (when not nil) as otlpspans.Redact redacts them. Long strings
// are looked up in, and added to, cache when it is not nil.
func AppendSpan(dst []byte, s sdktrace.ReadOnlySpan, red *redact.Redactor, cache *StringCache) []byte {
	e := sdkEncoder{encoder: encoder{out: dst}, red: red, cache: cache}
	sc := s.SpanContext()
	parent := s.Parent()
	e.out = append(e.out, '{')
	first := true
	tid, sid := sc.TraceID(), sc.SpanID()
	e.idField(&first, "traceId", tid[:])
	e.idField(&first, "spanId", sid[:])
	if ts := sc.TraceState(); ts.Len() > 0 {
		e.strField(&first, "traceState", ts.String())
	}
	if psid := parent.SpanID(); psid.IsValid() {
		e.idField(&first, "parentSpanId", psid[:])
	}
	e.uint32Field(&first, "flags", spanFlags(sc.TraceFlags(), parent))
	e.textField(&first, "name", s.Name())
	e.int32Field(&first, "kind", spanKind(s.SpanKind()))
	e.uint64Field(&first, "startTimeUnixNano", uint64(max(0, s.StartTime().UnixNano())))
	e.uint64Field(&first, "endTimeUnixNano", uint64(max(0, s.EndTime().UnixNano())))
	e.attributes(&first, "attributes", s.Attributes())
	e.uint32Field(&first, "droppedAttributesCount", clamp32(s.DroppedAttributes()))
	list(&e.encoder, &first, "events", s.Events(), func(ev sdktrace.Event) {
		e.out = append(e.out, '{')
		f := true
		e.uint64Field(&f, "timeUnixNano", uint64(max(0, ev.Time.UnixNano())))
		e.textField(&f, "name", ev.Name)
		e.attributes(&f, "attributes", ev.Attributes)
		e.uint32Field(&f, "droppedAttributesCount", clamp32(ev.DroppedAttributeCount))
		e.out = append(e.out, '}')
	})
	e.uint32Field(&first, "droppedEventsCount", clamp32(s.DroppedEvents()))
	list(&e.encoder, &first, "links", s.Links(), func(l sdktrace.Link) {
		e.out = append(e.out, '{')
		f := true
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		e.idField(&f, "traceId", ltid[:])
		e.idField(&f, "spanId", lsid[:])
		e.attributes(&f, "attributes", l.Attributes)
		e.uint32Field(&f, "droppedAttributesCount", clamp32(l.DroppedAttributeCount))
		e.uint32Field(&f, "flags", spanFlags(l.SpanContext.TraceFlags(), l.SpanContext))
		e.out = append(e.out, '}')
	})
	e.uint32Field(&first, "droppedLinksCount", clamp32(s.DroppedLinks()))
	e.key(&first, "status")
	e.out = append(e.out, '{')
	st := s.Status()
	f := true
	e.textField(&f, "message", st.Description)
	switch st.Code {
	case codes.Ok:
		e.int32Field(&f, "code", 1)
	case codes.Error:
		e.int32Field(&f, "code", 2)
	}
	e.out = append(e.out, '}', '}')
	return e.out
}

// appendResource appends the OTLP/JSON object of r, redacted with red,
// as AppendSpan writes spans; nothing for a nil r (the exporter leaves
// the resource out).
func appendResource(dst []byte, r *resource.Resource, red *redact.Redactor) []byte {
	if r == nil {
		return dst
	}
	e := sdkEncoder{encoder: encoder{out: dst}, red: red}
	e.out = append(e.out, '{')
	first := true
	e.attributes(&first, "attributes", r.Attributes())
	e.out = append(e.out, '}')
	return e.out
}

// appendScope appends the OTLP/JSON object of the instrumentation scope
// s, redacted with red; nothing for the zero scope (the exporter leaves it
// out).
func appendScope(dst []byte, s instrumentation.Scope, red *redact.Redactor) []byte {
	if s == (instrumentation.Scope{}) {
		return dst
	}
	e := sdkEncoder{encoder: encoder{out: dst}, red: red}
	e.out = append(e.out, '{')
	first := true
	e.strField(&first, "name", s.Name)
	e.strField(&first, "version", s.Version)
	e.attributes(&first, "attributes", s.Attributes.ToSlice())
	e.out = append(e.out, '}')
	return e.out
}

// AppendSDKRequest appends the OTLP/JSON export request of the ended
// spans, redacted with red (when not nil) and with long strings looked up
// in cache (when not nil): the bytes Marshal writes for the request the
// OTLP exporter makes of them after otlpspans.Redact, without building
// that request. Resources come in the order of their first span, scopes
// within them likewise, spans in order; the exporter orders several
// resources as a map does, so only a request of one resource is always
// the same bytes.
func AppendSDKRequest(dst []byte, spans []sdktrace.ReadOnlySpan, red *redact.Redactor, cache *StringCache) []byte {
	return AppendSDKSpans(dst, spanSlice(spans), red, cache)
}

// SDKSpans is a list of ended spans that [AppendSDKSpans] reads one at a
// time, so that a caller that keeps its spans in another form (the
// flight recorder's records) need not make them all SDK spans at once.
type SDKSpans interface {
	// Len is the number of spans.
	Len() int
	// Scope returns span i's resource and instrumentation scope, what
	// Resource and InstrumentationScope of Span(i) return.
	Scope(i int) (*resource.Resource, instrumentation.Scope)
	// Span returns span i; nil leaves it out. The encoder calls it once
	// for each span, in the order it writes them, and does not keep what
	// it returns past the next call.
	Span(i int) sdktrace.ReadOnlySpan
}

type spanSlice []sdktrace.ReadOnlySpan

func (s spanSlice) Len() int { return len(s) }
func (s spanSlice) Scope(i int) (*resource.Resource, instrumentation.Scope) {
	return s[i].Resource(), s[i].InstrumentationScope()
}
func (s spanSlice) Span(i int) sdktrace.ReadOnlySpan { return s[i] }

// AppendSDKSpans is [AppendSDKRequest] of the spans spans lists.
func AppendSDKSpans(dst []byte, spans SDKSpans, red *redact.Redactor, cache *StringCache) []byte {
	if spans.Len() == 0 {
		return append(dst, '{', '}')
	}
	type scopeKey struct {
		res   attribute.Distinct
		scope instrumentation.Scope
	}
	type scopeGroup struct {
		key   scopeKey
		spans []int
	}
	type resourceGroup struct {
		key    attribute.Distinct
		res    *resource.Resource // of the group's first span
		scopes []*scopeGroup
	}
	var resources []*resourceGroup
	byRes := map[attribute.Distinct]*resourceGroup{}
	byScope := map[scopeKey]*scopeGroup{}
	for i := range spans.Len() {
		res, scope := spans.Scope(i)
		sk := scopeKey{res.Equivalent(), scope}
		sg := byScope[sk]
		if sg == nil {
			rg := byRes[sk.res]
			if rg == nil {
				rg = &resourceGroup{key: sk.res, res: res}
				byRes[sk.res] = rg
				resources = append(resources, rg)
			}
			sg = &scopeGroup{key: sk}
			byScope[sk] = sg
			rg.scopes = append(rg.scopes, sg)
		}
		sg.spans = append(sg.spans, i)
	}
	e := encoder{out: dst}
	e.out = append(e.out, `{"resourceSpans":[`...)
	for k, rg := range resources {
		if k > 0 {
			e.out = append(e.out, ',')
		}
		res := rg.res
		e.out = append(e.out, '{')
		first := true
		if r := appendResource(nil, res, red); len(r) > 0 {
			e.key(&first, "resource")
			e.out = append(e.out, r...)
		}
		e.key(&first, "scopeSpans")
		e.out = append(e.out, '[')
		for j, sg := range rg.scopes {
			if j > 0 {
				e.out = append(e.out, ',')
			}
			e.out = append(e.out, '{')
			f := true
			if sc := appendScope(nil, sg.key.scope, red); len(sc) > 0 {
				e.key(&f, "scope")
				e.out = append(e.out, sc...)
			}
			e.key(&f, "spans")
			e.out = append(e.out, '[')
			n := 0
			for _, i := range sg.spans {
				s := spans.Span(i)
				if s == nil {
					continue
				}
				if n > 0 {
					e.out = append(e.out, ',')
				}
				n++
				e.out = AppendSpan(e.out, s, red, cache)
			}
			e.out = append(e.out, ']')
			e.strField(&f, "schemaUrl", sg.key.scope.SchemaURL)
			e.out = append(e.out, '}')
		}
		e.out = append(e.out, ']')
		if res != nil {
			e.strField(&first, "schemaUrl", res.SchemaURL())
		}
		e.out = append(e.out, '}')
	}
	e.out = append(e.out, ']', '}')
	return e.out
}

// attributes writes the member name with the attribute list, as the
// exporter converts it; nothing for none.
func (e *sdkEncoder) attributes(first *bool, name string, kvs []attribute.KeyValue) {
	if len(kvs) == 0 {
		return
	}
	e.key(first, name)
	e.keyValues(kvs)
}

func (e *sdkEncoder) keyValues(kvs []attribute.KeyValue) {
	e.out = append(e.out, '[')
	for i, kv := range kvs {
		if i > 0 {
			e.out = append(e.out, ',')
		}
		e.out = append(e.out, '{')
		f := true
		e.strField(&f, "key", string(kv.Key))
		e.key(&f, "value")
		e.value(string(kv.Key), kv.Value)
		e.out = append(e.out, '}')
	}
	e.out = append(e.out, ']')
}

// value writes v as the exporter's AnyValue, its strings redacted as
// values of the attribute key.
func (e *sdkEncoder) value(key string, v attribute.Value) {
	switch v.Type() {
	case attribute.STRING:
		e.out = append(e.out, `{"stringValue":`...)
		e.field(key, v.AsString())
		e.out = append(e.out, '}')
	case attribute.BOOL:
		e.out = append(e.out, `{"boolValue":`...)
		e.out = strconv.AppendBool(e.out, v.AsBool())
		e.out = append(e.out, '}')
	case attribute.INT64:
		e.int(v.AsInt64())
	case attribute.FLOAT64:
		e.float(v.AsFloat64())
	case attribute.BYTESLICE:
		e.out = append(e.out, `{"bytesValue":"`...)
		e.out = base64.StdEncoding.AppendEncode(e.out, v.AsByteSlice())
		e.out = append(e.out, '"', '}')
	case attribute.BOOLSLICE:
		array(e, v.AsBoolSlice(), func(b bool) {
			e.out = append(e.out, `{"boolValue":`...)
			e.out = strconv.AppendBool(e.out, b)
			e.out = append(e.out, '}')
		})
	case attribute.INT64SLICE:
		array(e, v.AsInt64Slice(), e.int)
	case attribute.FLOAT64SLICE:
		array(e, v.AsFloat64Slice(), e.float)
	case attribute.STRINGSLICE:
		array(e, v.AsStringSlice(), func(s string) {
			e.out = append(e.out, `{"stringValue":`...)
			e.field(key, s)
			e.out = append(e.out, '}')
		})
	case attribute.SLICE:
		array(e, v.AsSlice(), func(x attribute.Value) { e.value(key, x) })
	case attribute.MAP:
		e.out = append(e.out, `{"kvlistValue":{`...)
		if m := v.AsMap(); len(m) > 0 {
			e.out = append(e.out, `"values":`...)
			e.keyValues(m)
		}
		e.out = append(e.out, '}', '}')
	case attribute.EMPTY:
		e.out = append(e.out, '{', '}')
	default:
		e.out = append(e.out, `{"stringValue":"INVALID"}`...)
	}
}

func (e *sdkEncoder) int(n int64) {
	e.out = append(e.out, `{"intValue":"`...)
	e.out = strconv.AppendInt(e.out, n, 10)
	e.out = append(e.out, '"', '}')
}

func (e *sdkEncoder) float(n float64) {
	e.out = append(e.out, `{"doubleValue":`...)
	e.out = appendFloat(e.out, n)
	e.out = append(e.out, '}')
}

// array writes an arrayValue of items, each written by elem.
func array[T any](e *sdkEncoder, items []T, elem func(T)) {
	e.out = append(e.out, `{"arrayValue":{`...)
	if len(items) > 0 {
		e.out = append(e.out, `"values":[`...)
		for i, it := range items {
			if i > 0 {
				e.out = append(e.out, ',')
			}
			elem(it)
		}
		e.out = append(e.out, ']')
	}
	e.out = append(e.out, '}', '}')
}

// spanFlags is the exporter's span flags: the trace flags, "has is-remote"
// and, for a remote parent, "is remote".
func spanFlags(tf trace.TraceFlags, parent trace.SpanContext) uint32 {
	flags := uint32(tf) | 0x100
	if parent.IsRemote() {
		flags |= 0x200
	}
	return flags
}

// spanKind is the exporter's span kind number.
func spanKind(k trace.SpanKind) int32 {
	switch k {
	case trace.SpanKindInternal:
		return 1
	case trace.SpanKindServer:
		return 2
	case trace.SpanKindClient:
		return 3
	case trace.SpanKindProducer:
		return 4
	case trace.SpanKindConsumer:
		return 5
	}
	return 0
}

func clamp32(n int) uint32 {
	if n < 0 {
		return 0
	}
	if int64(n) > 1<<32-1 {
		return 1<<32 - 1
	}
	return uint32(n)
}
