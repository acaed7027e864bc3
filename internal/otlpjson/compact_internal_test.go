package otlpjson

import (
	"bytes"
	"encoding/json"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// TestMarshalCompactsAsJSONCompact checks that Marshal, which compacts in
// the pass that rewrites the IDs, writes what json.Compact followed by
// that pass writes, for strings holding spaces, escapes and quotes.
func TestMarshalCompactsAsJSONCompact(t *testing.T) {
	str := func(s string) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
	}
	req := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{
			TraceId: bytes.Repeat([]byte{7}, 16), SpanId: bytes.Repeat([]byte{3}, 8),
			Name: "a b\t c\n \"d\" : , { } [ ]  \\ \u2028 é",
			Attributes: []*commonpb.KeyValue{
				{Key: "k with space", Value: str(`{"x": 1, "y": [1, 2]}`)},
				{Key: "n", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: -12}}},
				{Key: "f", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: 1.5}}},
				{Key: "arr", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{
					Values: []*commonpb.AnyValue{str(" "), str("")}}}}},
			},
			Events: []*tracepb.Span_Event{{Name: "ev ent", TimeUnixNano: 5}},
			Status: &tracepb.Status{Message: " m ", Code: tracepb.Status_STATUS_CODE_ERROR},
		}}}},
	}}}
	raw, err := protojson.MarshalOptions{UseEnumNumbers: true, Multiline: true}.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		t.Fatal(err)
	}
	want, err := hexIDs(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	got, err := hexIDs(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("one pass\n%s\njson.Compact\n%s", got, want)
	}
	m, err := Marshal(req)
	if err != nil || !bytes.Equal(m, want) {
		t.Fatalf("Marshal\n%s\nwant\n%s (%v)", m, want, err)
	}
}
