package flight

import (
	"context"
	"reflect"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// spanFields is what a span record is made of (see appendSpanRecord): an
// ended span's fields, declared as the SDK declares those of the ended
// spans it hands to processors (its unexported snapshot type), in the
// same order, with the same names and types.
//
// Why: each getter of the SDK's ended span has a value receiver, so a
// call through the ReadOnlySpan interface copies the whole span (408
// bytes) to read one field. A record asks 13 getters, and a traced run
// ends 4 spans: read in place, a span costs the processor about 325 ns
// instead of 500 (BenchmarkSpanProcessorOnEnd), some 0.7 µs a run of
// BenchmarkFullStack. When the linked SDK's type has spanFields's layout
// exactly (sdkSpanType checks each field's name, type and offset),
// fieldsOf reads the span in place; otherwise, and for any other
// ReadOnlySpan, it asks the getters. TestSpanFieldsInPlace fails when an
// SDK upgrade changes the layout, so that the fast path is not lost
// unnoticed.
type spanFields struct {
	name                  string
	spanContext           trace.SpanContext
	parent                trace.SpanContext
	spanKind              trace.SpanKind
	startTime             time.Time
	endTime               time.Time
	attributes            []attribute.KeyValue
	events                []sdktrace.Event
	links                 []sdktrace.Link
	status                sdktrace.Status
	childSpanCount        int
	droppedAttributeCount int
	droppedEventCount     int
	droppedLinkCount      int
	resource              *resource.Resource
	instrumentationScope  instrumentation.Scope
}

// fieldsOf returns the fields of s: s's own memory when s is the SDK's
// ended span and sdkSpanType found its layout to be spanFields's, or buf
// filled through s's getters. The caller must not change them.
func fieldsOf(s sdktrace.ReadOnlySpan, buf *spanFields) *spanFields {
	if t := sdkSpanType(); t != nil && reflect.TypeOf(s) == t {
		return (*spanFields)(reflect.ValueOf(s).UnsafePointer())
	}
	*buf = spanFields{
		name:                  s.Name(),
		spanContext:           s.SpanContext(),
		parent:                s.Parent(),
		spanKind:              s.SpanKind(),
		startTime:             s.StartTime(),
		endTime:               s.EndTime(),
		attributes:            s.Attributes(),
		events:                s.Events(),
		links:                 s.Links(),
		status:                s.Status(),
		childSpanCount:        s.ChildSpanCount(),
		droppedAttributeCount: s.DroppedAttributes(),
		droppedEventCount:     s.DroppedEvents(),
		droppedLinkCount:      s.DroppedLinks(),
		resource:              s.Resource(),
		instrumentationScope:  s.InstrumentationScope(),
	}
	return buf
}

// sdkSpanType returns the dynamic type of the ended spans the linked SDK
// hands to processors when it is a pointer to a struct laid out as
// spanFields (every field's name, type and offset, and the size), nil
// otherwise. It learns the type from one span of a provider of its own,
// once.
var sdkSpanType = sync.OnceValue(func() reflect.Type {
	var got sdktrace.ReadOnlySpan
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(captureSpan{&got}))
	_, s := tp.Tracer("flight").Start(context.Background(), "probe")
	s.End()
	_ = tp.Shutdown(context.Background())
	if got == nil {
		return nil
	}
	t := reflect.TypeOf(got)
	if !sameLayout(t, reflect.TypeFor[spanFields]()) {
		return nil
	}
	return t
})

// sameLayout reports whether t is a pointer to a struct with want's
// fields: the same names and types at the same offsets, and the same
// size.
func sameLayout(t, want reflect.Type) bool {
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return false
	}
	st := t.Elem()
	if st.Size() != want.Size() || st.NumField() != want.NumField() {
		return false
	}
	for i := range want.NumField() {
		f, w := st.Field(i), want.Field(i)
		if f.Name != w.Name || f.Type != w.Type || f.Offset != w.Offset {
			return false
		}
	}
	return true
}

// captureSpan is a span processor that keeps the last span that ended.
type captureSpan struct{ last *sdktrace.ReadOnlySpan }

func (c captureSpan) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (c captureSpan) OnEnd(s sdktrace.ReadOnlySpan)                   { *c.last = s }
func (c captureSpan) Shutdown(context.Context) error                  { return nil }
func (c captureSpan) ForceFlush(context.Context) error                { return nil }
