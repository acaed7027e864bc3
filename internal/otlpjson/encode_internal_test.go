package otlpjson

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// TestDirectEncoding fails when the linked OTLP messages gained or lost
// fields: Marshal then falls back to protojson (slower, same bytes) until
// the direct encoder learns them.
func TestDirectEncoding(t *testing.T) {
	if !directEncoding {
		t.Fatal("the OTLP messages changed: update the direct encoder's fields (encode.go)")
	}
}

func anyStr(s string) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
}

// richRequest sets every field the direct encoder writes, with zero and
// non-zero values, nil elements and nested values.
func richRequest(r *rand.Rand, str func() string) *coltracepb.ExportTraceServiceRequest {
	attrs := func() []*commonpb.KeyValue {
		vals := []*commonpb.AnyValue{
			anyStr(str()), anyStr(""),
			{Value: &commonpb.AnyValue_BoolValue{BoolValue: r.IntN(2) == 0}},
			{Value: &commonpb.AnyValue_BoolValue{}},
			{Value: &commonpb.AnyValue_IntValue{IntValue: r.Int64() - math.MaxInt64/2}},
			{Value: &commonpb.AnyValue_IntValue{}},
			{Value: &commonpb.AnyValue_DoubleValue{}},
			{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte(str())}},
			{Value: &commonpb.AnyValue_BytesValue{}},
			{Value: &commonpb.AnyValue_StringValueStrindex{StringValueStrindex: int32(r.IntN(5))}},
			{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: []*commonpb.AnyValue{anyStr(str()), nil, {}}}}},
			{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{}}},
			{Value: &commonpb.AnyValue_ArrayValue{}},
			{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: []*commonpb.KeyValue{{Key: str(), Value: anyStr(str())}, nil}}}},
			{Value: &commonpb.AnyValue_KvlistValue{}},
			{},
		}
		for _, f := range []float64{0, 1, -1.5, 1e-7, 1e-6, 1e20, 1e21, 123456789.125, 5e-324, math.MaxFloat64, math.NaN(), math.Inf(1), math.Inf(-1), r.NormFloat64() * 1e9, r.Float64() * 1e-9} {
			vals = append(vals, &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: f}})
		}
		var kvs []*commonpb.KeyValue
		for i, v := range vals {
			kvs = append(kvs, &commonpb.KeyValue{Key: str(), Value: v, KeyStrindex: int32(i % 3)})
		}
		return append(kvs, nil, &commonpb.KeyValue{}, &commonpb.KeyValue{Key: "k"})
	}
	id := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return b
	}
	span := func() *tracepb.Span {
		return &tracepb.Span{TraceId: id(16), SpanId: id(8), TraceState: "a=b", ParentSpanId: id(8), Flags: uint32(r.IntN(1024)),
			Name: str(), Kind: tracepb.Span_SpanKind(r.IntN(6)), StartTimeUnixNano: r.Uint64(), EndTimeUnixNano: r.Uint64(),
			Attributes: attrs(), DroppedAttributesCount: uint32(r.IntN(3)),
			Events:             []*tracepb.Span_Event{{TimeUnixNano: r.Uint64(), Name: str(), Attributes: attrs(), DroppedAttributesCount: 2}, nil, {}},
			DroppedEventsCount: uint32(r.IntN(3)),
			Links:              []*tracepb.Span_Link{{TraceId: id(16), SpanId: id(8), TraceState: str(), Attributes: attrs(), DroppedAttributesCount: 1, Flags: 0x301}, nil, {}},
			DroppedLinksCount:  uint32(r.IntN(3)), Status: &tracepb.Status{Message: str(), Code: tracepb.Status_StatusCode(r.IntN(3))}}
	}
	return &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{
		{Resource: &resourcepb.Resource{Attributes: attrs(), DroppedAttributesCount: 3,
			EntityRefs: []*commonpb.EntityRef{{SchemaUrl: str(), Type: "service", IdKeys: []string{"a", str()}, DescriptionKeys: []string{str()}}, nil, {}}},
			ScopeSpans: []*tracepb.ScopeSpans{
				{Scope: &commonpb.InstrumentationScope{Name: str(), Version: "1", Attributes: attrs(), DroppedAttributesCount: 1},
					Spans: []*tracepb.Span{span(), nil, {}, span(), {Status: &tracepb.Status{}}}, SchemaUrl: str()},
				nil, {}, {Scope: &commonpb.InstrumentationScope{}},
			}, SchemaUrl: "https://x"},
		nil, {}, {Resource: &resourcepb.Resource{}},
	}}
}

// TestMarshalDirectAsProtojson checks that the direct encoder writes the
// bytes protojson's path writes, for every field and for strings with
// escapes, control characters, non-ASCII text and invalid UTF-8 (an error
// both ways).
func TestMarshalDirectAsProtojson(t *testing.T) {
	pieces := []string{"a", " ", "\"", "\\", "\n", "\t", "\x00", "\x1f", "\x7f", "é", "\u2028", "<&>", "\ufffd", "日本", "traceId", `"spanId":"AAAA"`, "😀", "/"}
	for seed := uint64(0); seed < 50; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		bad := seed%5 == 4
		str := func() string {
			var b strings.Builder
			for n := r.IntN(6); n > 0; n-- {
				b.WriteString(pieces[r.IntN(len(pieces))])
			}
			if bad && r.IntN(50) == 0 {
				b.WriteString("\xff")
			}
			return b.String()
		}
		req := richRequest(r, str)
		want, werr := marshalProtojson(req)
		got, gerr := Marshal(req)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("seed %d: protojson error %v, direct error %v", seed, werr, gerr)
		}
		if werr == nil && !bytes.Equal(got, want) {
			i := 0
			for i < len(got) && i < len(want) && got[i] == want[i] {
				i++
			}
			t.Fatalf("seed %d: differ at %d\ndirect    %s\nprotojson %s", seed, i, got[max(0, i-80):min(len(got), i+80)], want[max(0, i-80):min(len(want), i+80)])
		}
	}
	for _, req := range []*coltracepb.ExportTraceServiceRequest{{}, {ResourceSpans: []*tracepb.ResourceSpans{}}} {
		want, _ := marshalProtojson(req)
		if got, _ := Marshal(req); !bytes.Equal(got, want) {
			t.Fatalf("direct %s, protojson %s", got, want)
		}
	}
}
