package otlpjson

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"math"
	"math/bits"
	"strconv"
	"unicode/utf8"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The direct encoder writes what protojson (UseEnumNumbers), compacted and
// with hex IDs, writes for an export request, without reflection: the
// populated fields of each message in the order of their declaration in
// the .proto files, under their JSON names; 64-bit integers as strings,
// bytes as base64 (IDs as hex), enums as numbers. It knows the messages of
// the OTLP version it was written for: directEncoding reports whether the
// linked one has exactly those fields, and Marshal uses protojson when it
// does not.

var errInvalidUTF8 = errors.New("invalid UTF-8 in string")

// directFields lists, for each message the direct encoder writes, the JSON
// names of its fields in declaration order.
var directFields = []struct {
	m      protoreflect.ProtoMessage
	fields []string
}{
	{&coltracepb.ExportTraceServiceRequest{}, []string{"resourceSpans"}},
	{&tracepb.ResourceSpans{}, []string{"resource", "scopeSpans", "schemaUrl"}},
	{&resourcepb.Resource{}, []string{"attributes", "droppedAttributesCount", "entityRefs"}},
	{&commonpb.EntityRef{}, []string{"schemaUrl", "type", "idKeys", "descriptionKeys"}},
	{&tracepb.ScopeSpans{}, []string{"scope", "spans", "schemaUrl"}},
	{&commonpb.InstrumentationScope{}, []string{"name", "version", "attributes", "droppedAttributesCount"}},
	{&tracepb.Span{}, []string{"traceId", "spanId", "traceState", "parentSpanId", "flags", "name", "kind", "startTimeUnixNano",
		"endTimeUnixNano", "attributes", "droppedAttributesCount", "events", "droppedEventsCount", "links", "droppedLinksCount", "status"}},
	{&tracepb.Span_Event{}, []string{"timeUnixNano", "name", "attributes", "droppedAttributesCount"}},
	{&tracepb.Span_Link{}, []string{"traceId", "spanId", "traceState", "attributes", "droppedAttributesCount", "flags"}},
	{&tracepb.Status{}, []string{"message", "code"}},
	{&commonpb.KeyValue{}, []string{"key", "value", "keyStrindex"}},
	{&commonpb.AnyValue{}, []string{"stringValue", "boolValue", "intValue", "doubleValue", "arrayValue", "kvlistValue", "bytesValue",
		"stringValueStrindex"}},
	{&commonpb.ArrayValue{}, []string{"values"}},
	{&commonpb.KeyValueList{}, []string{"values"}},
}

// directEncoding reports whether the linked OTLP messages have exactly
// the fields the direct encoder writes, none with explicit presence but
// the oneof of AnyValue.
var directEncoding = func() bool {
	for _, d := range directFields {
		fds := d.m.ProtoReflect().Descriptor().Fields()
		if fds.Len() != len(d.fields) {
			return false
		}
		for i, name := range d.fields {
			fd := fds.Get(i)
			od := fd.ContainingOneof()
			explicit := fd.HasPresence() && fd.Kind() != protoreflect.MessageKind && (od == nil || od.IsSynthetic())
			if fd.JSONName() != name || fd.IsMap() || explicit {
				return false
			}
		}
	}
	return true
}()

type encoder struct {
	out []byte
	err error
}

func (e *encoder) key(first *bool, name string) {
	if *first {
		*first = false
	} else {
		e.out = append(e.out, ',')
	}
	e.out = append(e.out, '"')
	e.out = append(e.out, name...)
	e.out = append(e.out, '"', ':')
}

func (e *encoder) str(s string) {
	var err error
	e.out, err = appendString(e.out, s)
	if err != nil && e.err == nil {
		e.err = err
	}
}

func (e *encoder) strField(first *bool, name, s string) {
	if s != "" {
		e.key(first, name)
		e.str(s)
	}
}

func (e *encoder) uint32Field(first *bool, name string, n uint32) {
	if n != 0 {
		e.key(first, name)
		e.out = strconv.AppendUint(e.out, uint64(n), 10)
	}
}

func (e *encoder) int32Field(first *bool, name string, n int32) {
	if n != 0 {
		e.key(first, name)
		e.out = strconv.AppendInt(e.out, int64(n), 10)
	}
}

func (e *encoder) uint64Field(first *bool, name string, n uint64) {
	if n != 0 {
		e.key(first, name)
		e.out = append(e.out, '"')
		e.out = strconv.AppendUint(e.out, n, 10)
		e.out = append(e.out, '"')
	}
}

func (e *encoder) idField(first *bool, name string, id []byte) {
	if len(id) > 0 {
		e.key(first, name)
		e.out = append(e.out, '"')
		e.out = hex.AppendEncode(e.out, id)
		e.out = append(e.out, '"')
	}
}

func (e *encoder) request(r *coltracepb.ExportTraceServiceRequest) {
	e.out = append(e.out, '{')
	first := true
	list(e, &first, "resourceSpans", r.ResourceSpans, e.resourceSpans)
	e.out = append(e.out, '}')
}

// list writes the member name with the JSON array of items, each written
// by elem; nothing when items is empty (protojson leaves empty lists out).
func list[T any](e *encoder, first *bool, name string, items []T, elem func(T)) {
	if len(items) == 0 {
		return
	}
	e.key(first, name)
	e.out = append(e.out, '[')
	for i, it := range items {
		if i > 0 {
			e.out = append(e.out, ',')
		}
		elem(it)
	}
	e.out = append(e.out, ']')
}

// object writes a JSON object whose members fields writes; with notNil
// false (a nil message) the object is empty.
func (e *encoder) object(notNil bool, fields func(first *bool)) {
	e.out = append(e.out, '{')
	if notNil {
		first := true
		fields(&first)
	}
	e.out = append(e.out, '}')
}

func (e *encoder) resourceSpans(rs *tracepb.ResourceSpans) {
	e.out = append(e.out, '{')
	if rs != nil {
		first := true
		if rs.Resource != nil {
			e.key(&first, "resource")
			e.resource(rs.Resource)
		}
		list(e, &first, "scopeSpans", rs.ScopeSpans, e.scopeSpans)
		e.strField(&first, "schemaUrl", rs.SchemaUrl)
	}
	e.out = append(e.out, '}')
}

func (e *encoder) resource(r *resourcepb.Resource) {
	e.out = append(e.out, '{')
	first := true
	e.attrs(&first, "attributes", r.Attributes)
	e.uint32Field(&first, "droppedAttributesCount", r.DroppedAttributesCount)
	list(e, &first, "entityRefs", r.EntityRefs, func(er *commonpb.EntityRef) {
		e.object(er != nil, func(f *bool) {
			e.strField(f, "schemaUrl", er.SchemaUrl)
			e.strField(f, "type", er.Type)
			list(e, f, "idKeys", er.IdKeys, e.str)
			list(e, f, "descriptionKeys", er.DescriptionKeys, e.str)
		})
	})
	e.out = append(e.out, '}')
}

func (e *encoder) scopeSpans(ss *tracepb.ScopeSpans) {
	e.out = append(e.out, '{')
	if ss != nil {
		first := true
		if s := ss.Scope; s != nil {
			e.key(&first, "scope")
			e.out = append(e.out, '{')
			f := true
			e.strField(&f, "name", s.Name)
			e.strField(&f, "version", s.Version)
			e.attrs(&f, "attributes", s.Attributes)
			e.uint32Field(&f, "droppedAttributesCount", s.DroppedAttributesCount)
			e.out = append(e.out, '}')
		}
		list(e, &first, "spans", ss.Spans, e.span)
		e.strField(&first, "schemaUrl", ss.SchemaUrl)
	}
	e.out = append(e.out, '}')
}

func (e *encoder) span(s *tracepb.Span) {
	e.out = append(e.out, '{')
	if s != nil {
		first := true
		e.idField(&first, "traceId", s.TraceId)
		e.idField(&first, "spanId", s.SpanId)
		e.strField(&first, "traceState", s.TraceState)
		e.idField(&first, "parentSpanId", s.ParentSpanId)
		e.uint32Field(&first, "flags", s.Flags)
		e.strField(&first, "name", s.Name)
		e.int32Field(&first, "kind", int32(s.Kind))
		e.uint64Field(&first, "startTimeUnixNano", s.StartTimeUnixNano)
		e.uint64Field(&first, "endTimeUnixNano", s.EndTimeUnixNano)
		e.attrs(&first, "attributes", s.Attributes)
		e.uint32Field(&first, "droppedAttributesCount", s.DroppedAttributesCount)
		list(e, &first, "events", s.Events, func(ev *tracepb.Span_Event) {
			e.object(ev != nil, func(f *bool) {
				e.uint64Field(f, "timeUnixNano", ev.TimeUnixNano)
				e.strField(f, "name", ev.Name)
				e.attrs(f, "attributes", ev.Attributes)
				e.uint32Field(f, "droppedAttributesCount", ev.DroppedAttributesCount)
			})
		})
		e.uint32Field(&first, "droppedEventsCount", s.DroppedEventsCount)
		list(e, &first, "links", s.Links, func(l *tracepb.Span_Link) {
			e.object(l != nil, func(f *bool) {
				e.idField(f, "traceId", l.TraceId)
				e.idField(f, "spanId", l.SpanId)
				e.strField(f, "traceState", l.TraceState)
				e.attrs(f, "attributes", l.Attributes)
				e.uint32Field(f, "droppedAttributesCount", l.DroppedAttributesCount)
				e.uint32Field(f, "flags", l.Flags)
			})
		})
		e.uint32Field(&first, "droppedLinksCount", s.DroppedLinksCount)
		if st := s.Status; st != nil {
			e.key(&first, "status")
			e.out = append(e.out, '{')
			f := true
			e.strField(&f, "message", st.Message)
			e.int32Field(&f, "code", int32(st.Code))
			e.out = append(e.out, '}')
		}
	}
	e.out = append(e.out, '}')
}

func (e *encoder) attrs(first *bool, name string, kvs []*commonpb.KeyValue) {
	if len(kvs) == 0 {
		return
	}
	e.key(first, name)
	e.keyValues(kvs)
}

func (e *encoder) keyValues(kvs []*commonpb.KeyValue) {
	e.out = append(e.out, '[')
	for i, kv := range kvs {
		if i > 0 {
			e.out = append(e.out, ',')
		}
		e.out = append(e.out, '{')
		if kv != nil {
			f := true
			e.strField(&f, "key", kv.Key)
			if kv.Value != nil {
				e.key(&f, "value")
				e.anyValue(kv.Value)
			}
			e.int32Field(&f, "keyStrindex", kv.KeyStrindex)
		}
		e.out = append(e.out, '}')
	}
	e.out = append(e.out, ']')
}

func (e *encoder) anyValue(v *commonpb.AnyValue) {
	e.out = append(e.out, '{')
	switch x := v.Value.(type) {
	case *commonpb.AnyValue_StringValue:
		e.out = append(e.out, `"stringValue":`...)
		e.str(x.StringValue)
	case *commonpb.AnyValue_BoolValue:
		e.out = append(e.out, `"boolValue":`...)
		e.out = strconv.AppendBool(e.out, x.BoolValue)
	case *commonpb.AnyValue_IntValue:
		e.out = append(e.out, `"intValue":"`...)
		e.out = strconv.AppendInt(e.out, x.IntValue, 10)
		e.out = append(e.out, '"')
	case *commonpb.AnyValue_DoubleValue:
		e.out = append(e.out, `"doubleValue":`...)
		e.out = appendFloat(e.out, x.DoubleValue)
	case *commonpb.AnyValue_ArrayValue:
		e.out = append(e.out, `"arrayValue":{`...)
		if x.ArrayValue != nil && len(x.ArrayValue.Values) > 0 {
			e.out = append(e.out, `"values":[`...)
			for i, av := range x.ArrayValue.Values {
				if i > 0 {
					e.out = append(e.out, ',')
				}
				if av == nil {
					e.out = append(e.out, '{', '}')
				} else {
					e.anyValue(av)
				}
			}
			e.out = append(e.out, ']')
		}
		e.out = append(e.out, '}')
	case *commonpb.AnyValue_KvlistValue:
		e.out = append(e.out, `"kvlistValue":{`...)
		if x.KvlistValue != nil && len(x.KvlistValue.Values) > 0 {
			e.out = append(e.out, `"values":`...)
			e.keyValues(x.KvlistValue.Values)
		}
		e.out = append(e.out, '}')
	case *commonpb.AnyValue_BytesValue:
		e.out = append(e.out, `"bytesValue":"`...)
		e.out = base64.StdEncoding.AppendEncode(e.out, x.BytesValue)
		e.out = append(e.out, '"')
	case *commonpb.AnyValue_StringValueStrindex:
		e.out = append(e.out, `"stringValueStrindex":`...)
		e.out = strconv.AppendInt(e.out, int64(x.StringValueStrindex), 10)
	}
	e.out = append(e.out, '}')
}

// appendString is protojson's string encoding: invalid UTF-8 is an error,
// control characters, quotes and backslashes are escaped, nothing else.
func appendString(out []byte, in string) ([]byte, error) {
	out = append(out, '"')
	i := indexNeedEscapeInString(in)
	in, out = in[i:], append(out, in[:i]...)
	for len(in) > 0 {
		switch r, n := utf8.DecodeRuneInString(in); {
		case r == utf8.RuneError && n == 1:
			return out, errInvalidUTF8
		case r < ' ' || r == '"' || r == '\\':
			out = append(out, '\\')
			switch r {
			case '"', '\\':
				out = append(out, byte(r))
			case '\b':
				out = append(out, 'b')
			case '\f':
				out = append(out, 'f')
			case '\n':
				out = append(out, 'n')
			case '\r':
				out = append(out, 'r')
			case '\t':
				out = append(out, 't')
			default:
				out = append(out, 'u')
				out = append(out, "0000"[1+(bits.Len32(uint32(r))-1)/4:]...)
				out = strconv.AppendUint(out, uint64(r), 16)
			}
			in = in[n:]
		default:
			i := indexNeedEscapeInString(in[n:])
			in, out = in[n+i:], append(out, in[:n+i]...)
		}
	}
	return append(out, '"'), nil
}

// indexNeedEscapeInString returns the index of the first byte of s that
// appendString does not copy as it is: ASCII is checked a byte at a time
// without decoding.
func indexNeedEscapeInString(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < ' ' || c == '\\' || c == '"' {
				return i
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError {
			return i
		}
		i += n
	}
	return len(s)
}

// appendFloat is protojson's encoding of a double.
func appendFloat(out []byte, n float64) []byte {
	switch {
	case math.IsNaN(n):
		return append(out, `"NaN"`...)
	case math.IsInf(n, +1):
		return append(out, `"Infinity"`...)
	case math.IsInf(n, -1):
		return append(out, `"-Infinity"`...)
	}
	fmt := byte('f')
	if abs := math.Abs(n); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		fmt = 'e'
	}
	out = strconv.AppendFloat(out, n, fmt, -1, 64)
	if fmt == 'e' {
		n := len(out)
		if n >= 4 && out[n-4] == 'e' && out[n-3] == '-' && out[n-2] == '0' {
			out[n-2] = out[n-1]
			out = out[:n-1]
		}
	}
	return out
}
