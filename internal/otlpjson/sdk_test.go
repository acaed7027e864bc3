package otlpjson_test

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/harnessx/harnessx/internal/otlpjson"
	"github.com/harnessx/harnessx/internal/otlpspans"
	"github.com/harnessx/harnessx/internal/redact"
)

// sdkSpans ends, on one provider, spans with every kind of attribute
// value, events, links, statuses, trace state, a remote parent, limits
// that drop attributes, events and links, and two instrumentation scopes.
func sdkSpans(t *testing.T) []sdktrace.ReadOnlySpan {
	t.Helper()
	res := resource.NewWithAttributes("https://schema/res",
		attribute.String("service.name", "svc"),
		attribute.String("note", "key sk-ant-api03-"+string(bytes.Repeat([]byte("a"), 40))),
		attribute.String("password", "hunter2"))
	sr := tracetest.NewSpanRecorder()
	limits := sdktrace.NewSpanLimits()
	limits.AttributeCountLimit, limits.EventCountLimit, limits.LinkCountLimit = 40, 3, 2
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr), sdktrace.WithResource(res), sdktrace.WithRawSpanLimits(limits))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	a := tp.Tracer("scope-a", trace.WithInstrumentationVersion("1.2"), trace.WithSchemaURL("https://schema/a"),
		trace.WithInstrumentationAttributes(attribute.String("lib", "x"), attribute.String("token", "ghp_"+string(bytes.Repeat([]byte("b"), 36)))))
	b := tp.Tracer("scope-b")

	ts, err := trace.ParseTraceState("vendor=v1,other=o2")
	if err != nil {
		t.Fatal(err)
	}
	remote := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, SpanID: trace.SpanID{1, 1, 1, 1, 1, 1, 1, 1},
		TraceFlags: trace.FlagsSampled, TraceState: ts, Remote: true,
	})
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), remote)
	start := time.Unix(1_700_000_000, 123)
	root, rs := a.Start(ctx, "invoke_agent \"quoted\" \\ \u2028 é 😀 \x01", trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(start),
		trace.WithLinks(
			trace.Link{SpanContext: remote, Attributes: []attribute.KeyValue{attribute.String("why", "retry"), attribute.String("api_key", "abc")}},
			trace.Link{SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{9}, SpanID: trace.SpanID{9}})},
			trace.Link{SpanContext: remote}, // over the limit: dropped
		))
	rs.SetAttributes(
		attribute.Bool("b", true), attribute.Bool("f", false),
		attribute.Int("i", -42), attribute.Int64("max", math.MaxInt64),
		attribute.Float64("pi", 3.14159), attribute.Float64("tiny", 1e-7), attribute.Float64("huge", 1e21), attribute.Float64("neg0", math.Copysign(0, -1)),
		attribute.Float64("nan", math.NaN()), attribute.Float64("inf", math.Inf(1)), attribute.Float64("ninf", math.Inf(-1)), attribute.Float64("whole", 2),
		attribute.String("s", "plain"), attribute.String("esc", "tab\tnl\nquote\"bs\\ctl\x1f del\x7f <>&"), attribute.String("empty", ""),
		attribute.String("secret", "Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123456789"),
		attribute.String("credentials", "whole value"),
		attribute.String("long", strings.Repeat("a long \"value\" with a key sk-ant-api03-"+strings.Repeat("z", 40)+" ", 8)),
		attribute.String("api_key", strings.Repeat("long sensitive ", 30)),
		attribute.BoolSlice("bs", []bool{true, false}), attribute.IntSlice("is", []int{1, -2, 3}), attribute.IntSlice("noints", nil),
		attribute.Float64Slice("fs", []float64{0.5, math.Inf(1)}), attribute.StringSlice("ss", []string{"a", "glpat-" + string(bytes.Repeat([]byte("c"), 20)), ""}),
		attribute.StringSlice("passphrase", []string{"one", "two"}),
		attribute.ByteSlice("bytes", []byte{0, 1, 2, 255}),
		attribute.Slice("mixed", attribute.StringValue("x"), attribute.IntValue(3), attribute.SliceValue(attribute.BoolValue(true)), attribute.MapValue(attribute.String("k", "v"))),
		attribute.Map("map", attribute.String("auth", "secret-ish"), attribute.Float64("f", 1.5), attribute.Map("inner", attribute.String("s", "npm_"+string(bytes.Repeat([]byte("d"), 36))))),
		attribute.Map("emptymap"),
		attribute.KeyValue{Key: "emptyvalue"},
	)
	for i := range 5 { // the last two are over the event limit
		rs.AddEvent("event \"e\"", trace.WithTimestamp(start.Add(time.Duration(i)*time.Millisecond)),
			trace.WithAttributes(attribute.Int("n", i), attribute.String("token", "xoxb-123-456-abcdefghij")))
	}
	rs.AddEvent("no attributes", trace.WithTimestamp(time.Unix(0, 0)))

	_, c1 := a.Start(root, "chat m", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("long", strings.Repeat("a long \"value\" with a key sk-ant-api03-"+strings.Repeat("z", 40)+" ", 8))))
	c1.SetStatus(codes.Error, "failed: password=hunter2")
	c1.End()
	_, c2 := b.Start(root, "execute_tool", trace.WithSpanKind(trace.SpanKindProducer))
	c2.SetStatus(codes.Ok, "ignored")
	c2.End()
	_, c3 := b.Start(root, "consume", trace.WithSpanKind(trace.SpanKindConsumer))
	c3.SetStatus(codes.Error, "")
	c3.End()
	many := make([]attribute.KeyValue, 50) // over the attribute limit
	for i := range many {
		many[i] = attribute.Int("k"+string(rune('A'+i)), i)
	}
	_, c4 := a.Start(root, "many", trace.WithAttributes(many...))
	c4.End()
	rs.End(trace.WithTimestamp(start.Add(time.Second)))

	// A span of its own trace, not sampled by a parent: no parent ID.
	_, lone := b.Start(context.Background(), "lone")
	lone.End()
	return sr.Ended()
}

func encodeSDK(spans []sdktrace.ReadOnlySpan, red *redact.Redactor, cache *otlpjson.StringCache) []byte {
	return otlpjson.AppendSDKRequest(nil, spans, red, cache)
}

// TestSDKEncodingMatchesExporter: the SDK encoders write the bytes of the
// OTLP exporter's conversion, redacted by otlpspans.Redact and encoded by
// Marshal, with and without a redactor.
func TestSDKEncodingMatchesExporter(t *testing.T) {
	spans := sdkSpans(t)
	for _, red := range []*redact.Redactor{nil, redact.New(nil)} {
		req, err := otlpspans.FromSDK(context.Background(), spans)
		if err != nil {
			t.Fatal(err)
		}
		if red != nil {
			otlpspans.Redact(req, red)
		}
		want, err := otlpjson.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		cache := &otlpjson.StringCache{}
		for i, got := range [][]byte{encodeSDK(spans, red, nil), encodeSDK(spans, red, cache), encodeSDK(spans, red, cache)} {
			if bytes.Equal(got, want) {
				continue
			}
			j := 0
			for j < len(got) && j < len(want) && got[j] == want[j] {
				j++
			}
			t.Fatalf("redacting %v, encoding %d: the bytes differ at %d:\n got …%s\nwant …%s", red != nil, i, j, clip(got, j), clip(want, j))
		}
		if red != nil && bytes.Contains(want, []byte("hunter2")) {
			t.Error("a secret reached the encoding")
		}
	}
	if got := otlpjson.AppendSDKRequest(nil, nil, nil, nil); string(got) != "{}" {
		t.Errorf("no spans: %s", got)
	}
}

func clip(b []byte, i int) []byte {
	b = b[max(0, i-40):]
	return b[:min(len(b), 160)]
}

// TestSDKEncodingInvalidUTF8: a string that is not UTF-8 comes out with
// U+FFFD for its invalid bytes, and the span is still valid JSON.
func TestSDKEncodingInvalidUTF8(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	_, s := tp.Tracer("t").Start(context.Background(), "bad \xff name")
	s.SetAttributes(attribute.String("v", "a\xc3b"))
	s.End()
	got := otlpjson.AppendSpan(nil, sr.Ended()[0], nil, nil)
	if !bytes.Contains(got, []byte(`"name":"bad \ufffd name"`)) && !bytes.Contains(got, []byte("\"name\":\"bad \xef\xbf\xbd name\"")) {
		t.Errorf("name not repaired: %s", got)
	}
	if !bytes.Contains(got, []byte("a\xef\xbf\xbdb")) {
		t.Errorf("value not repaired: %s", got)
	}
}

// lazySpans lists spans for AppendSDKSpans, counting the calls of Span and
// leaving out (nil) the span at index skip.
type lazySpans struct {
	spans []sdktrace.ReadOnlySpan
	skip  int
	calls []int
}

func (l *lazySpans) Len() int { return len(l.spans) }
func (l *lazySpans) Scope(i int) (*resource.Resource, instrumentation.Scope) {
	return l.spans[i].Resource(), l.spans[i].InstrumentationScope()
}
func (l *lazySpans) Span(i int) sdktrace.ReadOnlySpan {
	l.calls = append(l.calls, i)
	if i == l.skip {
		return nil
	}
	return l.spans[i]
}

// TestSDKSpans: AppendSDKSpans asks for each span once, and writes what
// AppendSDKRequest writes for the spans it was given; a nil span is left
// out.
func TestSDKSpans(t *testing.T) {
	spans := sdkSpans(t)
	if len(spans) < 3 {
		t.Fatalf("%d spans", len(spans))
	}
	all := &lazySpans{spans: spans, skip: -1}
	if got, want := otlpjson.AppendSDKSpans(nil, all, nil, nil), encodeSDK(spans, nil, nil); !bytes.Equal(got, want) {
		t.Errorf("all spans:\n got %s\nwant %s", got, want)
	}
	seen := map[int]bool{}
	for _, i := range all.calls {
		if seen[i] {
			t.Errorf("span %d asked for twice", i)
		}
		seen[i] = true
	}
	if len(seen) != len(spans) {
		t.Errorf("asked for %d spans of %d", len(seen), len(spans))
	}
	// Leave out the last span: not the first of its scope (sdkSpans has
	// two scopes, each with several spans), so the groups and their order
	// stay the same.
	last := len(spans) - 1
	one := &lazySpans{spans: spans, skip: last}
	got := otlpjson.AppendSDKSpans(nil, one, nil, nil)
	if want := encodeSDK(spans[:last], nil, nil); !bytes.Equal(got, want) {
		t.Errorf("the last span left out:\n got %s\nwant %s", got, want)
	}
}
