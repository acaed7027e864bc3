package flight

import (
	"context"
	"encoding/hex"
	"fmt"
	"sync"

	"github.com/harnessx/harnessx/internal/otlpjson"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// SpanProcessor is an OpenTelemetry SDK span processor that keeps the most
// recent ended spans in a bounded buffer, so that an incident bundle
// carries a run's spans without any tracing backend. Register it on the
// application's TracerProvider:
//
//	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec.SpanProcessor()))
//
// It is safe for concurrent use; OnEnd does not block.
type SpanProcessor struct {
	mu      sync.Mutex
	buf     []sdktrace.ReadOnlySpan // ring
	next    int
	full    bool
	dropped uint64
	onEnd   func() // notifies the owning extension; may be nil
}

var _ sdktrace.SpanProcessor = (*SpanProcessor)(nil)

// NewSpanProcessor returns a processor that keeps the last capacity ended
// spans (default 2048 when capacity <= 0).
func NewSpanProcessor(capacity int) *SpanProcessor {
	if capacity <= 0 {
		capacity = 2048
	}
	return &SpanProcessor{buf: make([]sdktrace.ReadOnlySpan, capacity)}
}

// OnStart does nothing.
func (p *SpanProcessor) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd keeps s, evicting the oldest span when the buffer is full. A span
// given twice in a row (the processor registered twice on one provider,
// by hand and by the recorder) is kept once.
func (p *SpanProcessor) OnEnd(s sdktrace.ReadOnlySpan) {
	p.mu.Lock()
	if p.recentLocked(s) {
		p.mu.Unlock()
		return
	}
	if p.full {
		p.dropped++
	}
	p.buf[p.next] = s
	p.next++
	if p.next == len(p.buf) {
		p.next, p.full = 0, true
	}
	fn := p.onEnd
	p.mu.Unlock()
	if fn != nil {
		fn()
	}
}

// recentDepth is how many of the latest spans OnEnd compares a span with
// to drop a duplicate: another span may end between the two calls of a
// processor registered twice.
const recentDepth = 8

// recentLocked reports whether s is one of the latest spans kept.
func (p *SpanProcessor) recentLocked(s sdktrace.ReadOnlySpan) bool {
	sc := s.SpanContext()
	n := len(p.buf)
	for k := 1; k <= recentDepth && k <= n; k++ {
		i := p.next - k
		if i < 0 {
			if !p.full {
				break
			}
			i += n
		}
		if q := p.buf[i]; q != nil && q.SpanContext().SpanID() == sc.SpanID() && q.SpanContext().TraceID() == sc.TraceID() {
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
// for (every span when keep is nil).
func (p *SpanProcessor) Spans(keep func(s sdktrace.ReadOnlySpan) bool) []sdktrace.ReadOnlySpan {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []sdktrace.ReadOnlySpan
	add := func(ss []sdktrace.ReadOnlySpan) {
		for _, s := range ss {
			if s != nil && (keep == nil || keep(s)) {
				out = append(out, s)
			}
		}
	}
	if p.full {
		add(p.buf[p.next:])
	}
	add(p.buf[:p.next])
	return out
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

// captureClient is an otlptrace.Client that keeps what it is given
// instead of sending it: the OTLP exporter does the conversion.
type captureClient struct {
	mu sync.Mutex
	rs []*tracepb.ResourceSpans
}

func (c *captureClient) Start(context.Context) error { return nil }
func (c *captureClient) Stop(context.Context) error  { return nil }
func (c *captureClient) UploadTraces(_ context.Context, rs []*tracepb.ResourceSpans) error {
	c.mu.Lock()
	c.rs = append(c.rs, rs...)
	c.mu.Unlock()
	return nil
}

// SpansToOTLP converts spans to an OTLP export request with the OTLP
// exporter's own conversion (otlptrace.New with a capturing client).
func SpansToOTLP(ctx context.Context, spans []sdktrace.ReadOnlySpan) (*coltracepb.ExportTraceServiceRequest, error) {
	c := &captureClient{}
	req := &coltracepb.ExportTraceServiceRequest{}
	if len(spans) == 0 {
		return req, nil
	}
	exp, err := otlptrace.New(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("flight: spans: %w", err)
	}
	err = exp.ExportSpans(ctx, spans)
	if serr := exp.Shutdown(ctx); err == nil {
		err = serr
	}
	if err != nil {
		return nil, fmt.Errorf("flight: spans: %w", err)
	}
	req.ResourceSpans = c.rs
	return req, nil
}

// MarshalSpans encodes an export request as compact OTLP/JSON, after
// redacting it with red (when not nil): protojson's mapping with trace and
// span IDs as hex and enum values as integers, as the OTLP specification
// requires, so that an OTLP/HTTP JSON receiver accepts the bytes as they
// are. Equal requests give equal bytes.
func MarshalSpans(req *coltracepb.ExportTraceServiceRequest, red *Redactor) ([]byte, error) {
	if red != nil {
		RedactSpans(req, red)
	}
	b, err := otlpjson.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("flight: spans: %w", err)
	}
	return b, nil
}

// UnmarshalSpans decodes OTLP/JSON written by [MarshalSpans]. It also
// reads the base64 IDs that earlier versions wrote.
func UnmarshalSpans(data []byte) (*coltracepb.ExportTraceServiceRequest, error) {
	req, err := otlpjson.Unmarshal(data)
	if err != nil {
		return nil, fmt.Errorf("flight: spans: %w", err)
	}
	return req, nil
}

// CountSpans returns the number of spans in req.
func CountSpans(req *coltracepb.ExportTraceServiceRequest) int {
	n := 0
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			n += len(ss.GetSpans())
		}
	}
	return n
}

// FilterSpans keeps the spans of req whose trace ID (hex) keep accepts
// and drops emptied scopes and resources.
func FilterSpans(req *coltracepb.ExportTraceServiceRequest, keep func(traceID string) bool) {
	rss := req.ResourceSpans[:0]
	for _, rs := range req.ResourceSpans {
		sss := rs.ScopeSpans[:0]
		for _, ss := range rs.ScopeSpans {
			spans := ss.Spans[:0]
			for _, s := range ss.Spans {
				if keep(hex.EncodeToString(s.TraceId)) {
					spans = append(spans, s)
				}
			}
			ss.Spans = spans
			if len(spans) > 0 {
				sss = append(sss, ss)
			}
		}
		rs.ScopeSpans = sss
		if len(sss) > 0 {
			rss = append(rss, rs)
		}
	}
	req.ResourceSpans = rss
}

// RedactSpans redacts every string of req in place: span and event names,
// status messages, and attribute values (resource, scope, span, event and
// link attributes). A string attribute under a sensitive key
// ([SensitiveName]) is replaced whole.
func RedactSpans(req *coltracepb.ExportTraceServiceRequest, red *Redactor) {
	for _, rs := range req.GetResourceSpans() {
		if rs.Resource != nil {
			redactAttrs(rs.Resource.Attributes, red)
		}
		for _, ss := range rs.GetScopeSpans() {
			if ss.Scope != nil {
				redactAttrs(ss.Scope.Attributes, red)
			}
			for _, s := range ss.GetSpans() {
				s.Name = red.String(s.Name)
				redactAttrs(s.Attributes, red)
				for _, ev := range s.Events {
					ev.Name = red.String(ev.Name)
					redactAttrs(ev.Attributes, red)
				}
				for _, l := range s.Links {
					redactAttrs(l.Attributes, red)
				}
				if s.Status != nil {
					s.Status.Message = red.String(s.Status.Message)
				}
			}
		}
	}
}

func redactAttrs(kvs []*commonpb.KeyValue, red *Redactor) {
	for _, kv := range kvs {
		redactAny(kv.Key, kv.Value, red)
	}
}

func redactAny(key string, v *commonpb.AnyValue, red *Redactor) {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		x.StringValue = red.field(key, x.StringValue)
	case *commonpb.AnyValue_ArrayValue:
		for _, e := range x.ArrayValue.GetValues() {
			redactAny(key, e, red)
		}
	case *commonpb.AnyValue_KvlistValue:
		redactAttrs(x.KvlistValue.GetValues(), red)
	}
}
