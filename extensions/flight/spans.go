package flight

import (
	"context"
	"fmt"
	"sync"

	"github.com/harnessx/harnessx/internal/otlpjson"
	"github.com/harnessx/harnessx/internal/otlpspans"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
)

// SpanProcessor is an OpenTelemetry SDK span processor that keeps the most
// recent ended spans in a bounded buffer, so that an incident bundle
// carries a run's spans without any tracing backend. [Extension.SpanProcessor]
// returns the recorder's; register it on the application's TracerProvider
// when the recorder does not (see [WithSpanRegistration]):
//
//	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec.SpanProcessor()))
//
// It is safe for concurrent use; OnEnd does not block.
type SpanProcessor struct {
	mu      sync.Mutex
	buf     []sdktrace.ReadOnlySpan // ring
	seqs    []uint64                // seqs[i] numbers buf[i]: 1, 2, … in the order spans ended
	ids     []spanKey               // ids[i] identifies buf[i], for recentLocked
	seq     uint64                  // the number of the last span kept
	next    int
	full    bool
	dropped uint64
	onEnd   func() // notifies the owning extension; may be nil
}

var _ sdktrace.SpanProcessor = (*SpanProcessor)(nil)

// newSpanProcessor returns a processor that keeps the last capacity ended
// spans (default 2048 when capacity <= 0).
func newSpanProcessor(capacity int) *SpanProcessor {
	if capacity <= 0 {
		capacity = 2048
	}
	return &SpanProcessor{buf: make([]sdktrace.ReadOnlySpan, capacity), seqs: make([]uint64, capacity), ids: make([]spanKey, capacity)}
}

// spanKey identifies a span: its trace ID and span ID.
type spanKey struct {
	trace trace.TraceID
	span  trace.SpanID
}

// OnStart does nothing.
func (p *SpanProcessor) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd keeps s, evicting the oldest span when the buffer is full. A span
// given twice in a row (the processor registered twice on one provider,
// by hand and by the recorder) is kept once.
func (p *SpanProcessor) OnEnd(s sdktrace.ReadOnlySpan) {
	sc := s.SpanContext()
	id := spanKey{sc.TraceID(), sc.SpanID()}
	p.mu.Lock()
	if p.recentLocked(id) {
		p.mu.Unlock()
		return
	}
	if p.full {
		p.dropped++
	}
	p.seq++
	p.buf[p.next], p.seqs[p.next], p.ids[p.next] = s, p.seq, id
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

// recentLocked reports whether the span id is one of the latest spans
// kept.
func (p *SpanProcessor) recentLocked(id spanKey) bool {
	n := len(p.buf)
	for k := 1; k <= recentDepth && k <= n; k++ {
		i := p.next - k
		if i < 0 {
			if !p.full {
				break
			}
			i += n
		}
		if p.buf[i] != nil && p.ids[i] == id {
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
	out, _ := p.since(0, keep)
	return out
}

// since returns the buffered spans numbered after seq, oldest first,
// that keep reports true for, and the number of the last span kept (seq
// when none is newer).
func (p *SpanProcessor) since(seq uint64, keep func(s sdktrace.ReadOnlySpan) bool) ([]sdktrace.ReadOnlySpan, uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []sdktrace.ReadOnlySpan
	add := func(ss []sdktrace.ReadOnlySpan, seqs []uint64) {
		for i, s := range ss {
			if s != nil && seqs[i] > seq && (keep == nil || keep(s)) {
				out = append(out, s)
			}
		}
	}
	if p.full {
		add(p.buf[p.next:], p.seqs[p.next:])
	}
	add(p.buf[:p.next], p.seqs[:p.next])
	return out, max(seq, p.seq)
}

// pending returns how many kept spans are numbered after seq, at most
// the buffer's size.
func (p *SpanProcessor) pending(seq uint64) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return int(min(p.seq-min(seq, p.seq), uint64(len(p.buf))))
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

// marshalSpans encodes an export request as compact OTLP/JSON, after
// redacting it with red (when not nil): protojson's mapping with trace and
// span IDs as hex and enum values as integers, as the OTLP specification
// requires, so that an OTLP/HTTP JSON receiver accepts the bytes as they
// are. Equal requests give equal bytes.
func marshalSpans(req *coltracepb.ExportTraceServiceRequest, red *Redactor) ([]byte, error) {
	if red != nil {
		otlpspans.Redact(req, &red.r)
	}
	b, err := otlpjson.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("flight: spans: %w", err)
	}
	return b, nil
}
