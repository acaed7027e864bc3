package tracing_test

import (
	"context"
	"slices"
	"sort"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

// benchScript is the workload of harness.BenchmarkRun: two scripted model
// calls and one tool call.
var benchScript = []harnesstest.Response{
	harnesstest.CallTool("call_1", "weather", `{"city":"Paris"}`),
	{Text: "It is sunny in Paris.", Usage: harness.Usage{InputTokens: 10, OutputTokens: 5}},
}

// benchAgent is the agent of the benchmarks (and of the tests that trace
// their workload): benchScript looping, the weather tool.
func benchAgent(b testing.TB, opts ...harness.Option) *harness.Agent {
	p := harnesstest.NewScriptedProvider(benchScript...)
	p.Loop, p.DiscardRequests = true, true
	a, err := harness.New(append([]harness.Option{harness.WithProvider(p), harness.WithModel("m"),
		harness.WithTools(weatherTool())}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = a.Close(context.Background()) })
	return a
}

func runLoop(b *testing.B, a *harness.Agent, after func()) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := a.Run(ctx, "weather?")
		if err != nil || res.Text == "" {
			b.Fatal(err, res)
		}
		a.Reset()
		after()
	}
}

// BenchmarkUntracedRun is harness.BenchmarkRun, measured here so that it
// can be compared with BenchmarkTracedRun in one process.
func BenchmarkUntracedRun(b *testing.B) {
	runLoop(b, benchAgent(b), func() {})
}

// BenchmarkTracedRun is the BenchmarkRun workload with the tracing
// extension on, exporting into an in-memory exporter through a synchronous
// span processor.
func BenchmarkTracedRun(b *testing.B) { benchTraced(b) }

// BenchmarkTracedRunNoMirror is BenchmarkTracedRun without LangSmith's
// mirror attributes (tracing.WithLangSmithMirror(false)); its floor is
// BenchmarkOTelFloorNoMirror.
func BenchmarkTracedRunNoMirror(b *testing.B) { benchTraced(b, tracing.WithLangSmithMirror(false)) }

func benchTraced(b *testing.B, opts ...tracing.Option) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	a := benchAgent(b, harness.WithExtensions(tracing.New(append([]tracing.Option{tracing.WithTracerProvider(tp)}, opts...)...)))
	runLoop(b, a, exp.Reset)
}

// BenchmarkOTelFloor creates, with the OTel SDK directly, the four spans
// that one traced run produces, with the same names, kinds, parents,
// attributes and events, into the same kind of exporter. The attribute
// values are computed once, outside the loop: the floor is the SDK's cost.
func BenchmarkOTelFloor(b *testing.B) { benchFloor(b) }

// BenchmarkOTelFloorNoMirror is BenchmarkOTelFloor for the spans of
// BenchmarkTracedRunNoMirror.
func BenchmarkOTelFloorNoMirror(b *testing.B) { benchFloor(b, tracing.WithLangSmithMirror(false)) }

func benchFloor(b *testing.B, opts ...tracing.Option) {
	sr := tracetest.NewSpanRecorder()
	rtp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	a := benchAgent(b, harness.WithExtensions(tracing.New(append([]tracing.Option{tracing.WithTracerProvider(rtp)}, opts...)...)))
	if _, err := a.Run(context.Background(), "weather?"); err != nil {
		b.Fatal(err)
	}
	emit, reset := spanFloor(b, sr.Ended())
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		emit(ctx, nil)
		reset()
	}
}

// spanFloor returns a function that creates, with the OTel SDK directly,
// the spans recorded (one run's), with their names, kinds, parents,
// attributes and events, into an in-memory exporter through a synchronous
// processor, and one that empties the exporter. emit calls inRoot, when
// not nil, with the root span's context before it ends the root span.
func spanFloor(b *testing.B, recorded []sdktrace.ReadOnlySpan) (emit func(ctx context.Context, inRoot func(context.Context)), reset func()) {
	recorded = slices.Clone(recorded)
	sort.Slice(recorded, func(i, j int) bool { return recorded[i].StartTime().Before(recorded[j].StartTime()) })
	if len(recorded) != 4 {
		b.Fatalf("%d spans recorded, want 4", len(recorded))
	}
	type spanSpec struct {
		name   string
		opts   []trace.SpanStartOption
		events []sdktrace.Event
	}
	specs := make([]spanSpec, len(recorded))
	for i, s := range recorded {
		if i == 0 && s.Parent().IsValid() || i > 0 && s.Parent().SpanID() != recorded[0].SpanContext().SpanID() {
			b.Fatalf("span %d (%s): not the run's root or one of its children", i, s.Name())
		}
		specs[i] = spanSpec{
			name:   s.Name(),
			opts:   []trace.SpanStartOption{trace.WithSpanKind(s.SpanKind()), trace.WithAttributes(s.Attributes()...)},
			events: s.Events(),
		}
	}
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tracer := tp.Tracer(tracing.ScopeName)
	return func(ctx context.Context, inRoot func(context.Context)) {
		rootCtx, root := tracer.Start(ctx, specs[0].name, specs[0].opts...)
		for _, sp := range specs[1:] {
			_, s := tracer.Start(rootCtx, sp.name, sp.opts...)
			for _, ev := range sp.events {
				s.AddEvent(ev.Name, trace.WithTimestamp(ev.Time), trace.WithAttributes(ev.Attributes...))
			}
			s.End()
		}
		if inRoot != nil {
			inRoot(rootCtx)
		}
		root.End()
	}, exp.Reset
}

// passThrough implements the three interceptors and does nothing.
type passThrough struct{}

func (passThrough) InterceptRun(ctx context.Context, _ *harness.RunInfo, next harness.RunFunc) *harness.RunResult {
	return next(ctx)
}

func (passThrough) InterceptModel(ctx context.Context, req *harness.ModelRequest, next harness.ModelFunc) (*harness.ModelResponse, error) {
	return next(ctx, req)
}

func (passThrough) InterceptTool(ctx context.Context, call *harness.ToolCall, next harness.ToolFunc) *harness.ToolResult {
	return next(ctx, call)
}

// BenchmarkPassThroughRun is the BenchmarkRun workload with interceptors
// that do nothing: the engine's own cost of running interceptors, which
// BenchmarkTracedRun includes.
func BenchmarkPassThroughRun(b *testing.B) {
	runLoop(b, benchAgent(b, harness.WithMiddleware(passThrough{})), func() {})
}

// BenchmarkTracedRunWithImage is BenchmarkTracedRun with a 4 KiB image in
// the user message (harness.Agent.RunMessage), recorded by reference: the
// cost of a media part, which text-only runs do not pay.
func BenchmarkTracedRunWithImage(b *testing.B) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	a := benchAgent(b, harness.WithExtensions(tracing.New(tracing.WithTracerProvider(tp))))
	img := make([]byte, 4<<10)
	for i := range img {
		img[i] = byte(i * 7)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		// A new part each run, as a new user message would be: its
		// SHA-256 is computed once per part.
		msg := harness.UserParts(harness.Text("what is this?"), harness.ImagePart(img, "image/png"))
		res, err := a.RunMessage(ctx, msg)
		if err != nil || res.Text == "" {
			b.Fatal(err, res)
		}
		a.Reset()
		exp.Reset()
	}
}
