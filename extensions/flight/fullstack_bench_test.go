package flight_test

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/extensions/spill"
	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// fullStackScript is the workload of tracing's BenchmarkTracedRun (and
// harness.BenchmarkRun): two scripted model calls and one tool call.
var fullStackScript = []harnesstest.Response{
	harnesstest.CallTool("call_1", "weather", `{"city":"Paris"}`),
	{Text: "It is sunny in Paris.", Usage: harness.Usage{InputTokens: 10, OutputTokens: 5}},
}

type weatherIn struct {
	City string `json:"city"`
}

// spillCity is the city whose weather, in BenchmarkFullStack's set-up, is
// a result over the spill threshold.
const spillCity = "spill"

// weatherTool is every BenchmarkFullStack variant's one tool: the
// measured runs of all variants send the model the same tool definition.
// Its result for spillCity is long (2 KB, over a 1 KB spill threshold),
// for the set-up's spills; for other cities it is short.
func weatherTool() *harness.Tool {
	big := strings.Repeat("a spilled result line\n", 100)
	return harness.MustTool(harness.NewTool("weather", "Weather of a city.",
		func(_ context.Context, in weatherIn) (string, error) {
			if in.City == spillCity {
				return big, nil
			}
			return "sunny in " + in.City, nil
		}))
}

// switchProvider serves the setup script, then the benchmark's looping
// one.
type switchProvider struct {
	setup, bench *harnesstest.ScriptedProvider
	benching     atomic.Bool
}

func (p *switchProvider) Generate(ctx context.Context, req *harness.ModelRequest) (*harness.ModelResponse, error) {
	if p.benching.Load() {
		return p.bench.Generate(ctx, req)
	}
	return p.setup.Generate(ctx, req)
}

// BenchmarkFullStack is BenchmarkTracedRun's workload (extensions/tracing)
// with the whole observability stack on: the tracing extension into an
// in-memory exporter through a synchronous processor, the spill extension
// and the flight recorder (default options, recording into a temporary
// directory; its span processor registers itself on the tracing
// extension's provider, as it does for a user). The "spills-2000" variant
// first spills 2,000 results, so the session and the artifact lists are
// long: a run must cost the same. All three variants' agents have the
// same one tool (weatherTool; the set-up's results come from it, for one
// city), so that the measured runs differ from traced-only's by the stack
// alone.
//
// Each variant also reports cpu-ns/op: the CPU time of the whole process
// (every goroutine and thread, user and system: the recorder's writer and
// snapshotter included) over the measured loop alone, per run, where the
// system can tell it. It leaves out the set-up (2,000 spills take about a
// second and a half, which varies by tenths) that timing the whole
// process would count; .ci/benchratios.sh reads it. The loop's system
// time and minor page faults per run come beside it (sys-ns/op,
// minflt/op; see reportLoopCPU).
func BenchmarkFullStack(b *testing.B) {
	// The reference, in the same process: BenchmarkTracedRun's setup.
	b.Run("traced-only", func(b *testing.B) {
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		p := harnesstest.NewScriptedProvider(fullStackScript...)
		p.Loop, p.DiscardRequests = true, true
		a, err := harness.New(harness.WithProvider(p), harness.WithModel("m"), harness.WithTools(weatherTool()),
			harness.WithExtensions(tracing.New(tracing.WithTracerProvider(tp))))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = a.Close(context.Background()) })
		ctx := context.Background()
		b.ReportAllocs()
		defer reportLoopCPU(b)()
		for b.Loop() {
			res, err := a.Run(ctx, "weather?")
			if err != nil || res.Text == "" {
				b.Fatal(err, res)
			}
			a.Reset()
			exp.Reset()
		}
	})
	for _, spills := range []int{0, 2000} {
		b.Run(fmt.Sprintf("spills-%d", spills), func(b *testing.B) {
			rec := flight.New(flight.WithDir(b.TempDir()))
			exp := tracetest.NewInMemoryExporter()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
			b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })

			// Setup: 20 steps of 100 calls of the weather tool for the city
			// whose result (2 KB) is over the spill threshold (1 KB).
			var setup []harnesstest.Response
			for step := 0; step < spills/100; step++ {
				var calls []harness.ToolCall
				for i := 0; i < 100; i++ {
					calls = append(calls, harnesstest.Call(fmt.Sprintf("s%d_%d", step, i), "weather", map[string]string{"city": spillCity}))
				}
				setup = append(setup, harnesstest.Response{ToolCalls: calls})
			}
			setup = append(setup, harnesstest.Reply("set up"))
			bench := harnesstest.NewScriptedProvider(fullStackScript...)
			bench.Loop, bench.DiscardRequests = true, true
			setupProv := harnesstest.NewScriptedProvider(setup...)
			setupProv.DiscardRequests = true
			prov := &switchProvider{setup: setupProv, bench: bench}

			sp := spill.New(spill.WithThreshold(1000))
			a, err := harness.New(harness.WithProvider(prov), harness.WithModel("m"),
				harness.WithLogger(slog.New(slog.DiscardHandler)),
				harness.WithTools(weatherTool()),
				harness.WithExtensions(tracing.New(tracing.WithTracerProvider(tp)), sp, rec))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = a.Close(context.Background()) })
			b.Cleanup(func() {
				// After the loop (cleanups run last first): the recorder
				// registered its span processor by itself.
				if len(rec.SpanProcessor().Spans(nil)) == 0 {
					b.Error("no span reached the flight recorder")
				}
			})
			ctx := context.Background()
			if spills > 0 {
				if _, err := a.Run(ctx, "spill"); err != nil {
					b.Fatal(err)
				}
				a.Reset()
				exp.Reset()
				arts, _ := sp.Artifacts(ctx)
				if len(arts) != spills {
					b.Fatalf("%d spilled results, want %d", len(arts), spills)
				}
			}
			// The set-up script is the fixture's, not the stack's: let it
			// go, as a provider keeps no past responses.
			prov.setup = nil
			prov.benching.Store(true)
			// The set-up's own aftermath is not a run's cost: its events
			// written, its garbage collected.
			if err := rec.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			runtime.GC()
			b.ReportAllocs()
			b.ResetTimer()
			defer reportLoopCPU(b)()
			for b.Loop() {
				res, err := a.Run(ctx, "weather?")
				if err != nil || res.Text == "" {
					b.Fatal(err, res)
				}
				a.Reset()
				exp.Reset()
			}
		})
	}
}

// usage is what a process has used (see processUsage).
type usage struct {
	cpu, sys int64 // CPU time (user + system) and system time, ns
	minflt   int64 // minor page faults
}

// reportLoopCPU starts measuring the process's CPU time; the function it
// returns reports it per op as cpu-ns/op. Call it right before b.Loop and
// the returned function right after (b.Loop stops the timer when done).
// Beside it, it reports the loop's system time (sys-ns/op) and minor page
// faults (minflt/op) per op: most of the full stack's system time is the
// kernel handing back heap pages that the runtime's scavenger returned
// (see docs/benchmarking.md, "Page faults and the scavenger").
//
// It also calls loopStarts and loopEnds, which mark the loop for
// callgrind: .ci/benchratios.sh counts instructions between them
// (--dump-before at both), not the set-up's.
func reportLoopCPU(b *testing.B) func() {
	start, ok := processUsage()
	loopStarts()
	return func() {
		loopEnds()
		end, _ := processUsage()
		if ok && b.N > 0 {
			n := float64(b.N)
			b.ReportMetric(float64(end.cpu-start.cpu)/n, "cpu-ns/op")
			b.ReportMetric(float64(end.sys-start.sys)/n, "sys-ns/op")
			b.ReportMetric(float64(end.minflt-start.minflt)/n, "minflt/op")
		}
	}
}

// loopStarts and loopEnds do nothing; callgrind stops on their names.
//
//go:noinline
func loopStarts() {}

//go:noinline
func loopEnds() {}
