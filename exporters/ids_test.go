package exporters_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/harnessx/harnessx/exporters"
	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	"github.com/harnessx/harnessx/internal/otlpjson"
	"github.com/harnessx/harnessx/internal/runtrace"
)

// ctxSpy keeps the context of each run.
type ctxSpy struct{ ctxs []context.Context }

func (s *ctxSpy) InterceptRun(ctx context.Context, _ *harness.RunInfo, next harness.RunFunc) *harness.RunResult {
	s.ctxs = append(s.ctxs, ctx)
	return next(ctx)
}

func TestRunTraceIDs(t *testing.T) {
	g := exporters.RunTraceIDs()
	spy := &ctxSpy{}
	a, err := harness.New(harness.WithProvider(harnesstest.NewScriptedProvider(harnesstest.Reply("a"), harnesstest.Reply("b"))),
		harness.WithModel("m"), harness.WithMiddleware(spy))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	ctx := harness.ContextWithRunID(context.Background(), "run-42")
	if _, err := a.Run(ctx, "go"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(harness.ContextRecovered(ctx, 3), "go"); err != nil {
		t.Fatal(err)
	}
	want := trace.TraceID(runtrace.TraceID("run-42"))
	for i, attempt := range []int{1, 3} {
		tid, sid := g.NewIDs(spy.ctxs[i])
		if tid != want || sid != trace.SpanID(runtrace.RootSpanID("run-42", attempt, 0)) {
			t.Errorf("attempt %d: NewIDs = %s %s, want %s %x", attempt, tid, sid, want, runtrace.RootSpanID("run-42", attempt, 0))
		}
	}
	// Outside a run, a run ID about to be used included: random IDs.
	seen := map[trace.TraceID]bool{}
	for range 100 {
		tid, sid := g.NewIDs(ctx)
		if !tid.IsValid() || !sid.IsValid() || tid == want || seen[tid] {
			t.Fatalf("outside a run: %s %s", tid, sid)
		}
		seen[tid] = true
	}
	// Children get random span IDs.
	if s1, s2 := g.NewSpanID(spy.ctxs[0], want), g.NewSpanID(spy.ctxs[0], want); !s1.IsValid() || s1 == s2 {
		t.Errorf("NewSpanID: %s %s", s1, s2)
	}
}

// readSpans returns the spans of the OTLP JSON lines in b.
func readSpans(t *testing.T, b *bytes.Buffer) []*spanView {
	t.Helper()
	reqs, err := otlpjson.ReadLines(b)
	if err != nil {
		t.Fatal(err)
	}
	var out []*spanView
	for _, s := range allSpans(reqs...) {
		v := &spanView{name: s.GetName(), trace: hex.EncodeToString(s.GetTraceId()), span: hex.EncodeToString(s.GetSpanId()),
			parent: hex.EncodeToString(s.GetParentSpanId())}
		for _, l := range s.GetLinks() {
			v.links = append(v.links, hex.EncodeToString(l.GetTraceId())+"/"+hex.EncodeToString(l.GetSpanId()))
		}
		v.recovered, _ = attr(s, string(tracing.KeyRunRecovered))
		out = append(out, v)
	}
	return out
}

type spanView struct {
	name, trace, span, parent string
	links                     []string
	recovered                 string
}

// A run recovered after a crash, traced through a file provider with its
// default ID generator: one trace, and the recovered run's span links to
// the crashed attempt's.
func TestRecoveredRunOneTraceThroughProvider(t *testing.T) {
	clearEnv(t)
	ctx := context.Background()
	var buf bytes.Buffer
	tp, err := exporters.NewFile(ctx, exporters.WithFileWriter(&buf))
	if err != nil {
		t.Fatal(err)
	}
	script := []harnesstest.Response{harnesstest.CallTool("c1", "get_weather", map[string]string{"city": "Lisbon"}), harnesstest.Reply("mild")}
	weather := harness.MustTool(harness.NewTool("get_weather", "", func(_ context.Context, in weatherIn) (string, error) { return in.City + ": 18°C", nil }))
	r := harnesstest.NewStepRunner()
	newAgent := func(script []harnesstest.Response) *harness.Agent {
		a, err := harness.New(harness.WithName("planner"), harness.WithProvider(harnesstest.NewScriptedProvider(script...)),
			harness.WithModel("m"), harness.WithTools(weather), harness.WithStepRunner(r),
			harness.WithExtensions(tracing.New(tracing.WithTracerProvider(tp))))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close(ctx) })
		return a
	}
	rctx := harness.ContextWithRunID(ctx, "run-lisbon")
	if _, err := newAgent(script).Run(rctx, "weather?"); err != nil {
		t.Fatal(err)
	}
	r.Forget("run-lisbon/model/2") // the crash: the last request was not recorded
	if _, err := newAgent(script[1:]).Run(harness.ContextRecovered(rctx, 2), "weather?"); err != nil {
		t.Fatal(err)
	}
	// A root span outside a run keeps a random trace ID.
	_, other := tp.Tracer("t").Start(ctx, "unrelated")
	other.End()
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	want := hex.EncodeToString(func() []byte { x := runtrace.TraceID("run-lisbon"); return x[:] }())
	var roots []*spanView
	names := map[string]int{}
	for _, s := range readSpans(t, &buf) {
		names[s.name]++
		if s.name == "unrelated" {
			if s.trace == want {
				t.Error("a span outside a run has the run's trace ID")
			}
			continue
		}
		if s.trace != want {
			t.Errorf("%s: trace %s, want %s", s.name, s.trace, want)
		}
		if s.name == "invoke_agent planner" {
			roots = append(roots, s)
		}
	}
	if names["chat m"] != 3 || names["execute_tool get_weather"] != 1 || len(roots) != 2 {
		t.Fatalf("spans %v: want 3 chat (2 + 1 after recovery), 1 tool, 2 runs", names)
	}
	first, second := roots[0], roots[1]
	if first.recovered != "" {
		first, second = second, first
	}
	if second.recovered != "true" || len(second.links) != 1 || second.links[0] != want+"/"+first.span {
		t.Errorf("recovered run: recovered=%q links %v, want a link to %s/%s", second.recovered, second.links, want, first.span)
	}
}

func TestWithIDGenerator(t *testing.T) {
	clearEnv(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		opts    []exporters.Option
		derived bool
	}{
		{"default", nil, true},
		{"nil: the SDK's random IDs", []exporters.Option{exporters.WithIDGenerator(nil)}, false},
		{"another generator", []exporters.Option{exporters.WithIDGenerator(&seqIDs{})}, false},
		{"WithTracerProviderOptions wins", []exporters.Option{exporters.WithTracerProviderOptions(sdktrace.WithIDGenerator(&seqIDs{}))}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			tp, err := exporters.NewFile(ctx, append(tc.opts, exporters.WithFileWriter(&buf))...)
			if err != nil {
				t.Fatal(err)
			}
			a, err := harness.New(harness.WithProvider(harnesstest.NewScriptedProvider(harnesstest.Reply("x"))), harness.WithModel("m"),
				harness.WithExtensions(tracing.New(tracing.WithTracerProvider(tp))))
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close(ctx)
			res, err := a.Run(ctx, "go")
			if err != nil {
				t.Fatal(err)
			}
			if err := tp.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			d := runtrace.TraceID(res.RunID)
			spans := readSpans(t, &buf)
			if len(spans) == 0 {
				t.Fatal("no spans")
			}
			for _, s := range spans {
				if got := s.trace == hex.EncodeToString(d[:]); got != tc.derived {
					t.Errorf("%s: trace %s derived from the run ID: %v, want %v", s.name, s.trace, got, tc.derived)
				}
			}
		})
	}
}
