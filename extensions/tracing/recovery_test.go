package tracing_test

import (
	"context"
	"crypto/rand"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	"github.com/harnessx/harnessx/internal/runtrace"
)

// runIDs is an ID generator like exporters.RunTraceIDs (which the
// tracing package does not import): a root span inside a run gets the
// run's derived IDs.
type runIDs struct{}

func (runIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if info, ok := harness.RunInfoFromContext(ctx); ok {
		return runtrace.TraceID(info.RunID), runtrace.RootSpanID(info.RunID, info.Attempt, info.Steps)
	}
	var tid trace.TraceID
	_, _ = rand.Read(tid[:])
	return tid, runIDs{}.NewSpanID(ctx, tid)
}

func (runIDs) NewSpanID(context.Context, trace.TraceID) trace.SpanID {
	var sid trace.SpanID
	_, _ = rand.Read(sid[:])
	return sid
}

func tpWith(t *testing.T, opts ...sdktrace.TracerProviderOption) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(append(opts, sdktrace.WithSpanProcessor(sr))...)
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, sr
}

// crashAndRecover runs a turn (model, tool, model) under run ID "run-x",
// forgets the last model step as if the process had stopped before it was
// recorded, and runs the turn again on a fresh agent with the same runner
// as attempt 2. It returns the spans of each attempt.
func crashAndRecover(t *testing.T, tp trace.TracerProvider, sr *tracetest.SpanRecorder) (first, second []sdktrace.ReadOnlySpan) {
	t.Helper()
	script := []harnesstest.Response{harnesstest.CallTool("c1", "weather", `{"city":"Paris"}`), harnesstest.Reply("sunny")}
	r := harnesstest.NewStepRunner()
	ctx := harness.ContextWithRunID(context.Background(), "run-x")
	a1, _ := newAgent(t, tp, script, harness.WithStepRunner(r))
	if _, err := a1.Run(ctx, "go"); err != nil {
		t.Fatal(err)
	}
	first = spans(sr)
	r.Forget("run-x/model/2")
	a2, _ := newAgent(t, tp, script[1:], harness.WithStepRunner(r))
	if _, err := a2.Run(harness.ContextRecovered(ctx, 2), "go"); err != nil {
		t.Fatal(err)
	}
	second = spans(sr)[len(first):]
	return first, second
}

func TestRecoveredRunIsOneTrace(t *testing.T) {
	tp, sr := tpWith(t, sdktrace.WithIDGenerator(runIDs{}))
	first, second := crashAndRecover(t, tp, sr)
	if got := names(first); len(got) != 4 {
		t.Fatalf("first attempt: %q", got)
	}
	// The recorded steps (the first model request and the tool call) are
	// replayed without spans: only the run and the unrecorded request.
	if got := names(second); len(got) != 2 || len(byName(second, "invoke_agent weatherbot")) != 1 || len(byName(second, "chat m")) != 1 {
		t.Fatalf("second attempt: %q, want invoke_agent and one chat", got)
	}
	if len(byName(second, "execute_tool weather")) != 0 {
		t.Error("a replayed tool call has a span")
	}
	root1, root2 := byName(first, "invoke_agent weatherbot")[0], byName(second, "invoke_agent weatherbot")[0]
	want := trace.TraceID(runtrace.TraceID("run-x"))
	for _, s := range append(first, second...) {
		if s.SpanContext().TraceID() != want {
			t.Errorf("%s: trace %s, want the run's %s", s.Name(), s.SpanContext().TraceID(), want)
		}
	}
	if root1.SpanContext().SpanID() == root2.SpanContext().SpanID() {
		t.Error("both attempts' root spans have one span ID")
	}
	if _, ok := attr(root1, tracing.KeyRunRecovered); ok || len(root1.Links()) != 0 {
		t.Errorf("first attempt marked recovered or linked: %v", root1.Links())
	}
	if v, ok := attr(root2, tracing.KeyRunRecovered); !ok || !v.AsBool() {
		t.Errorf("%s not set on the recovered run", tracing.KeyRunRecovered)
	}
	if v, _ := attr(root2, tracing.KeyRunAttempt); v.AsInt64() != 2 {
		t.Errorf("%s = %v, want 2", tracing.KeyRunAttempt, v.Emit())
	}
	links := root2.Links()
	if len(links) != 1 {
		t.Fatalf("links %v, want one to the crashed attempt", links)
	}
	l := links[0]
	if l.SpanContext.TraceID() != want || l.SpanContext.SpanID() != root1.SpanContext().SpanID() {
		t.Errorf("link to %s/%s, want the first attempt's root %s", l.SpanContext.TraceID(), l.SpanContext.SpanID(), root1.SpanContext().SpanID())
	}
	la := map[string]string{}
	for _, kv := range l.Attributes {
		la[string(kv.Key)] = kv.Value.Emit()
	}
	if la[string(tracing.KeyLink)] != tracing.LinkPreviousAttempt || la[string(tracing.KeyRunAttempt)] != "1" {
		t.Errorf("link attributes %v", la)
	}
}

// Without a run-derived ID generator the previous attempt's IDs are
// unknown: the span is marked, not linked.
func TestRecoveredRunWithRandomIDs(t *testing.T) {
	tp, sr := tpWith(t)
	first, second := crashAndRecover(t, tp, sr)
	root1, root2 := byName(first, "invoke_agent weatherbot")[0], byName(second, "invoke_agent weatherbot")[0]
	if root1.SpanContext().TraceID() == root2.SpanContext().TraceID() {
		t.Error("random IDs gave one trace")
	}
	if v, ok := attr(root2, tracing.KeyRunRecovered); !ok || !v.AsBool() {
		t.Errorf("%s not set", tracing.KeyRunRecovered)
	}
	if len(root2.Links()) != 0 {
		t.Errorf("links %v, want none", root2.Links())
	}
}

// The parts of a recovered run that paused link each to the same part of
// the previous attempt: Run to Run, Resume to Resume.
func TestRecoveredResumeLinksItsPart(t *testing.T) {
	tp, sr := tpWith(t, sdktrace.WithIDGenerator(runIDs{}))
	deploy := harness.MustTool(harness.NewTool("deploy", "", func(context.Context, struct{}) (string, error) { return "ok", nil }))
	deploy.Permission = harness.PermissionAsk
	script := []harnesstest.Response{harnesstest.CallTool("c1", "deploy", `{}`), harnesstest.Reply("done")}
	r := harnesstest.NewStepRunner()
	for attempt := 1; attempt <= 2; attempt++ {
		ctx := harness.ContextRecovered(harness.ContextWithRunID(context.Background(), "run-p"), attempt)
		a, _ := newAgent(t, tp, script[attempt-1:], harness.WithStepRunner(r), harness.WithTools(deploy))
		if res, err := a.Run(ctx, "go"); err != nil || res.Status != harness.StatusPaused {
			t.Fatalf("attempt %d: Run %v %v", attempt, err, res.Status)
		}
		if _, err := a.Resume(ctx, harness.Approve("c1")); err != nil {
			t.Fatal(err)
		}
		// The crash: the approved call and the last request are not
		// recorded; the first request is (attempt 2 does not ask again).
		r.Forget("run-p/tool/1/c1", "run-p/model/2")
	}
	roots := byName(spans(sr), "invoke_agent weatherbot")
	if len(roots) != 4 {
		t.Fatalf("%d invoke_agent spans", len(roots))
	}
	seen := map[trace.SpanID]bool{}
	for _, s := range roots {
		if seen[s.SpanContext().SpanID()] {
			t.Fatalf("root span ID %s repeats", s.SpanContext().SpanID())
		}
		seen[s.SpanContext().SpanID()] = true
	}
	for i, s := range roots[2:] {
		if len(s.Links()) != 1 || s.Links()[0].SpanContext.SpanID() != roots[i].SpanContext().SpanID() {
			t.Errorf("attempt 2 part %d links %v, want attempt 1 part %d (%s)", i, s.Links(), i, roots[i].SpanContext().SpanID())
		}
	}
}
