package exporters

import (
	"context"
	"runtime"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// BenchmarkBackendQueue measures one span (one op) through a backend's
// queue to an exporter that discards it: "sdk-batch" is the SDK's batch
// span processor with the same queue and batch sizes, the floor; "must"
// and "sampled" are the backend's two classes. Spans are pre-recorded, so
// only queueing and batching are measured. Neither drops: the SDK's
// processor blocks when its queue is full, and the loop waits for the
// backend's queue to have a batch's room every batch.
func BenchmarkBackendQueue(b *testing.B) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	for range 1024 {
		_, s := tp.Tracer("bench").Start(context.Background(), "chat m")
		s.End()
	}
	_ = tp.Shutdown(context.Background())
	spans := rec.Ended()
	c := settings(nil)
	cases := []struct {
		name    string
		sampled bool
		sdk     bool
	}{
		{"sdk-batch", false, true},
		{"must", false, false},
		{"sampled", true, false},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			var (
				sp   sdktrace.SpanProcessor
				rank func(sdktrace.ReadOnlySpan)
				be   *backend
			)
			if bc.sdk {
				sp = sdktrace.NewBatchSpanProcessor(tracetest.NewNoopExporter(),
					sdktrace.WithMaxQueueSize(c.queueSize), sdktrace.WithMaxExportBatchSize(c.batchSize),
					sdktrace.WithBlocking()) // waits rather than drops, as the backend's queue never fills here
				rank = sp.OnEnd
			} else {
				be = newBackend(backendSpec{Backend{Name: "bench"}, tracetest.NewNoopExporter()}, &c)
				sp = be
				rank = func(s sdktrace.ReadOnlySpan) { be.onEndRanked(s, bc.sampled) }
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if be != nil && i%c.batchSize == 0 {
					for be.stats().Queued > int64(c.queueSize-c.batchSize) {
						runtime.Gosched()
					}
				}
				rank(spans[i%len(spans)])
			}
			if err := sp.Shutdown(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if be != nil {
				if st := be.stats(); st.Exported != int64(b.N) {
					b.Fatalf("exported %d of %d (dropped %d)", st.Exported, b.N, st.Dropped)
				}
			}
		})
	}
}
