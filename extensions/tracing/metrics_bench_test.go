package tracing_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
)

// BenchmarkTracedRunWithMetrics is BenchmarkTracedRun with the metrics on:
// an SDK MeterProvider with a manual reader, so every recording goes
// through the SDK's aggregation, and no export runs during the loop. Its
// floor is BenchmarkOTelFloorWithMetrics, and its bound BenchmarkTracedRun's:
// (this - BenchmarkUntracedRun) / BenchmarkOTelFloorWithMetrics <= 1.5.
func BenchmarkTracedRunWithMetrics(b *testing.B) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	a := benchAgent(b, harness.WithExtensions(tracing.New(tracing.WithTracerProvider(tp), tracing.WithMeterProvider(mp))))
	runLoop(b, a, exp.Reset)
}

// BenchmarkOTelFloorWithMetrics is BenchmarkOTelFloor plus, with the OTel
// metric SDK directly, the recordings that one run with metrics makes:
// the same instruments (names, kinds, units, bucket boundaries), the same
// attribute sets and as many recordings of each, into a MeterProvider
// with a manual reader. The sets are built once, outside the loop. The
// recordings carry a sampled span's context, as the extension's do, so
// that the SDK's exemplars cost the same.
func BenchmarkOTelFloorWithMetrics(b *testing.B) {
	sr := tracetest.NewSpanRecorder()
	rtp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	rd := sdkmetric.NewManualReader()
	rmp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(rd))
	a := benchAgent(b, harness.WithExtensions(tracing.New(tracing.WithTracerProvider(rtp), tracing.WithMeterProvider(rmp))))
	if _, err := a.Run(context.Background(), "weather?"); err != nil {
		b.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	if err := rd.Collect(context.Background(), &rm); err != nil {
		b.Fatal(err)
	}
	emit, reset := spanFloor(b, sr.Ended())
	record := metricFloor(b, &rm)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		emit(ctx, record)
		reset()
	}
}

// metricFloor returns a function that makes, with the metric SDK
// directly, the recordings collected in rm: for every data point, Count
// recordings of its mean under its attribute set.
func metricFloor(b *testing.B, rm *metricdata.ResourceMetrics) func(context.Context) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	var recs []func(context.Context)
	n := 0
	for _, sm := range rm.ScopeMetrics {
		m := mp.Meter(sm.Scope.Name, metric.WithSchemaURL(sm.Scope.SchemaURL))
		for _, md := range sm.Metrics {
			switch d := md.Data.(type) {
			case metricdata.Histogram[int64]:
				recs, n = histogramFloor(b, recs, n, d.DataPoints, func(bounds []float64) (func(context.Context, int64, ...metric.RecordOption), error) {
					h, err := m.Int64Histogram(md.Name, metric.WithUnit(md.Unit), metric.WithExplicitBucketBoundaries(bounds...))
					if err != nil {
						return nil, err
					}
					return h.Record, nil
				})
			case metricdata.Histogram[float64]:
				recs, n = histogramFloor(b, recs, n, d.DataPoints, func(bounds []float64) (func(context.Context, float64, ...metric.RecordOption), error) {
					h, err := m.Float64Histogram(md.Name, metric.WithUnit(md.Unit), metric.WithExplicitBucketBoundaries(bounds...))
					if err != nil {
						return nil, err
					}
					return h.Record, nil
				})
			default:
				b.Fatalf("metric %s: %T, not one of the histograms a run without prices records", md.Name, md.Data)
			}
		}
	}
	if n < 8 { // 2 model requests × (duration + 2 token types) + the tool + the run
		b.Fatalf("%d recordings collected, want at least 8", n)
	}
	return func(ctx context.Context) {
		for _, r := range recs {
			r(ctx)
		}
	}
}

// histogramFloor appends to recs, for every data point, Count recordings
// of its mean with its attribute set (in options made once, as the
// extension makes them) on a histogram with its bounds, and adds them to n.
func histogramFloor[N int64 | float64](b *testing.B, recs []func(context.Context), n int, dps []metricdata.HistogramDataPoint[N],
	histogram func(bounds []float64) (func(context.Context, N, ...metric.RecordOption), error)) ([]func(context.Context), int) {
	for _, dp := range dps {
		record, err := histogram(dp.Bounds)
		if err != nil {
			b.Fatal(err)
		}
		count, mean := int(dp.Count), dp.Sum/N(dp.Count)
		opts := []metric.RecordOption{metric.WithAttributeSet(dp.Attributes)}
		recs = append(recs, func(ctx context.Context) {
			for range count {
				record(ctx, mean, opts...)
			}
		})
		n += count
	}
	return recs, n
}
