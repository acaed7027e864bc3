package flight

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/harnessx/harnessx/internal/otlpjson"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// sdkSpan ends, on an SDK provider, a span with every field set (dropped
// attributes, events and links included, by the provider's limits) and
// returns the ReadOnlySpan the SDK handed to processors.
func sdkSpan(t *testing.T) sdktrace.ReadOnlySpan {
	t.Helper()
	var got sdktrace.ReadOnlySpan
	res := resource.NewSchemaless(attribute.String("service.name", "svc"))
	tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithSpanProcessor(captureSpan{&got}),
		sdktrace.WithRawSpanLimits(sdktrace.SpanLimits{AttributeCountLimit: 4, EventCountLimit: 2, LinkCountLimit: 1,
			AttributeValueLengthLimit: -1, AttributePerEventCountLimit: 2, AttributePerLinkCountLimit: 1}))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	tr := tp.Tracer("scope", trace.WithInstrumentationVersion("v1"), trace.WithSchemaURL("https://example.com/s"),
		trace.WithInstrumentationAttributes(attribute.String("a", "b")))
	ts, err := trace.ParseTraceState("vendor=abc")
	if err != nil {
		t.Fatal(err)
	}
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{9},
		TraceFlags: trace.FlagsSampled, TraceState: ts, Remote: true})
	link := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{7}, SpanID: trace.SpanID{8}})
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), parent)
	start := time.Unix(1_700_000_000, 123_456_789)
	ctx, s := tr.Start(ctx, "chat m", trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(start),
		trace.WithLinks(trace.Link{SpanContext: link, Attributes: []attribute.KeyValue{attribute.Int("x", 1), attribute.Int("y", 2)}},
			trace.Link{SpanContext: parent}))
	for _, name := range []string{"c1", "c2"} {
		_, c := tr.Start(ctx, name)
		c.End()
	}
	s.SetAttributes(attribute.String("s", "héllo"), attribute.Int64("i", -5), attribute.Bool("b", true),
		attribute.StringSlice("ss", []string{"a", "b"}), attribute.Float64("f", 0.5), attribute.String("over", "limit"))
	s.AddEvent("e1", trace.WithTimestamp(start.Add(time.Millisecond)),
		trace.WithAttributes(attribute.String("k", "v"), attribute.Int("n", 1), attribute.Int("m", 2)))
	s.AddEvent("e2")
	s.AddEvent("e3")
	s.SetStatus(codes.Error, "it failed")
	s.End(trace.WithTimestamp(start.Add(time.Second)))
	if got == nil || got.Name() != "chat m" {
		t.Fatalf("captured %v", got)
	}
	return got
}

// getters hides a ReadOnlySpan's dynamic type, so that fieldsOf reads it
// through its getters.
type getters struct{ sdktrace.ReadOnlySpan }

// TestSpanFieldsInPlace checks that the linked SDK's ended spans are read
// in place (when an SDK upgrade changes their layout, this test fails:
// update spanFields to the new one), and that what is read in place is
// what the getters return, field by field, and makes the same record.
func TestSpanFieldsInPlace(t *testing.T) {
	s := sdkSpan(t)
	if typ := sdkSpanType(); typ == nil || typ != reflect.TypeOf(s) {
		t.Fatalf("sdkSpanType() = %v; the SDK's ended spans are %v: spanFields no longer matches their layout", typ, reflect.TypeOf(s))
	}
	var buf, viaGetters spanFields
	in := fieldsOf(s, &buf)
	if in == &buf {
		t.Fatal("fieldsOf copied the SDK's span through its getters")
	}
	if got := fieldsOf(getters{s}, &viaGetters); got != &viaGetters {
		t.Fatal("fieldsOf read a span of another type in place")
	}
	// Every field is set, so that a field read from the wrong place shows.
	v := reflect.ValueOf(viaGetters)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Errorf("the test span's %s is zero", v.Type().Field(i).Name)
		}
	}
	if !reflect.DeepEqual(*in, viaGetters) {
		t.Errorf("in place:\n%+v\ngetters:\n%+v", *in, viaGetters)
	}
	var enc1, enc2 spanEnc
	rec1, ok1 := appendSpanRecord(nil, in, &enc1)
	rec2, ok2 := appendSpanRecord(nil, &viaGetters, &enc2)
	if !ok1 || !ok2 || !bytes.Equal(rec1, rec2) {
		t.Errorf("records differ (ok %v %v):\n%q\n%q", ok1, ok2, rec1, rec2)
	}
}

// TestSameLayout checks that the layout check refuses a struct that
// differs from the one it wants in one respect only: a field's name, a
// field's type, the number of fields, or not being behind a pointer.
func TestSameLayout(t *testing.T) {
	type want struct {
		name string
		sc   trace.SpanContext
		n    int
	}
	type renamed struct {
		name string
		sc   trace.SpanContext
		m    int
	}
	type retyped struct {
		name string
		sc   trace.SpanContext
		n    int64
	}
	type longer struct {
		name string
		sc   trace.SpanContext
		n    int
		more bool
	}
	for _, c := range []struct {
		t    reflect.Type
		want bool
	}{
		{reflect.TypeFor[*want](), true},
		{reflect.TypeFor[want](), false}, // not a pointer
		{reflect.TypeFor[*int](), false},
		{reflect.TypeFor[*renamed](), false},
		{reflect.TypeFor[*retyped](), false},
		{reflect.TypeFor[*longer](), false},
	} {
		if got := sameLayout(c.t, reflect.TypeFor[want]()); got != c.want {
			t.Errorf("sameLayout(%v) = %v, want %v", c.t, got, c.want)
		}
	}
	if !sameLayout(reflect.TypeFor[*spanFields](), reflect.TypeFor[spanFields]()) {
		t.Error("spanFields is not laid out as itself")
	}
}

// TestSpanCopyDecodesOneAtATime: a span snapshot decodes a copy's records
// as the encoder asks for them; a record that does not decode is left out
// of the snapshot and reported, and the others are written.
func TestSpanCopyDecodesOneAtATime(t *testing.T) {
	p := newSpanProcessor(8)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	for _, name := range []string{"one", "two", "three"} {
		_, s := tp.Tracer("t").Start(context.Background(), name)
		s.End()
	}
	c := p.copySince(0, nil)
	if c.Len() != 3 {
		t.Fatalf("copied %d spans", c.Len())
	}
	for i, name := range []string{"one", "two", "three"} {
		if s := c.Span(i); s == nil || s.Name() != name {
			t.Fatalf("span %d: %v", i, s)
		}
		if res, scope := c.Scope(i); res != c.Span(i).Resource() || scope.Name != "t" {
			t.Errorf("span %d: scope %v %v", i, res, scope)
		}
	}
	c.spans[1].n = 20 // cut the record of "two": it no longer decodes
	got := string(otlpjson.AppendSDKSpans(nil, c, nil, nil))
	if c.err == nil {
		t.Error("a record that does not decode was not reported")
	}
	if !strings.Contains(got, `"name":"one"`) || !strings.Contains(got, `"name":"three"`) || strings.Contains(got, `"name":"two"`) {
		t.Errorf("snapshot %s", got)
	}
}
