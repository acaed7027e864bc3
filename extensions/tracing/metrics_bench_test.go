package tracing_test

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
)

// BenchmarkTracedRunWithMetrics is BenchmarkTracedRun with the metrics on:
// an SDK MeterProvider with a manual reader, so every recording goes
// through the SDK's aggregation, and no export runs during the loop. Its
// bound is BenchmarkTracedRun's: (this - BenchmarkUntracedRun) /
// BenchmarkOTelFloor <= 1.5.
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
