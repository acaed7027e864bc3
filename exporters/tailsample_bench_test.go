package exporters_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/harnessx/harnessx/exporters"
)

// nopProcessor discards spans: the benchmark's downstream, so that only
// the sampler's cost is measured over the SDK's.
type nopProcessor struct{}

func (nopProcessor) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (nopProcessor) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (nopProcessor) ForceFlush(context.Context) error                { return nil }
func (nopProcessor) Shutdown(context.Context) error                  { return nil }

// benchSpansPerTrace is the size of the benchmark's traces: an
// invoke_agent root and its children.
const benchSpansPerTrace = 10

// BenchmarkTailSampling measures the cost of one span (one op) through an
// SDK provider: "floor" with the downstream processor alone, the others
// with a tail sampler in front of it (keeping 10% of ordinary traces and
// one trace in 20 errored, or every trace). Compare each to the floor of
// the same run. Traces have benchSpansPerTrace spans.
func BenchmarkTailSampling(b *testing.B) {
	cases := []struct {
		name string
		tail bool
		p    float64
	}{
		{"floor", false, 0},
		{"tail-p0.1", true, 0.1},
		{"tail-p1", true, 1},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			var sp sdktrace.SpanProcessor = nopProcessor{}
			if bc.tail {
				ts, err := exporters.NewTailSampler(sp, exporters.WithKeepProbability(bc.p))
				if err != nil {
					b.Fatal(err)
				}
				sp = ts
			}
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sp))
			defer tp.Shutdown(context.Background())
			tr := tp.Tracer("bench")
			bg := context.Background()
			var (
				ctx  context.Context
				root trace.Span
				n    int
			)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				switch i % benchSpansPerTrace {
				case 0:
					ctx, root = tr.Start(bg, "invoke_agent bench")
				case benchSpansPerTrace - 1:
					n++
					if n%20 == 0 {
						root.SetStatus(codes.Error, "failed")
					}
					root.End()
				default:
					_, s := tr.Start(ctx, "chat m")
					s.End()
				}
			}
			b.StopTimer()
			if root != nil {
				root.End()
			}
		})
	}
}

// BenchmarkTailSamplingOnEnd measures the sampler alone: OnEnd of
// pre-recorded spans (one op), traces of benchSpansPerTrace spans ending
// root last, none kept (so every trace is buffered and decided). The
// sampler remembers fewer decisions than there are traces, so that a
// replayed trace is new to it, not a late part of a dropped one.
func BenchmarkTailSamplingOnEnd(b *testing.B) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tr := tp.Tracer("bench")
	for range 512 {
		ctx, root := tr.Start(context.Background(), "invoke_agent bench")
		for range benchSpansPerTrace - 1 {
			_, s := tr.Start(ctx, "chat m")
			s.End()
		}
		root.End()
	}
	_ = tp.Shutdown(context.Background())
	spans := rec.Ended()
	ts, err := exporters.NewTailSampler(nopProcessor{}, exporters.WithKeepProbability(0), exporters.WithLatencyThreshold(0),
		exporters.WithMaxDecidedTraces(256))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		ts.OnEnd(spans[i%len(spans)])
	}
	b.StopTimer()
	if st := ts.Stats(); st.KeptSpans != 0 || st.BufferedTraces > 1 || st.DroppedTraces < int64(b.N/benchSpansPerTrace) {
		b.Fatalf("stats %+v", st)
	}
}
