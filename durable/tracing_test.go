package durable

import (
	"context"
	"crypto/sha256"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/harnessx/harnessx/exporters"
	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
)

// TestRecoveredRunTrace: a run killed during its second model request
// and recovered by another process is one trace. The recovering
// process's invoke_agent span is marked recovered, attempt 2, and links
// to the crashed attempt's span; the recorded model request and tool
// call get no second span.
func TestRecoveredRunTrace(t *testing.T) {
	dir := t.TempDir()
	if _, killed := runChild(t, dir, "run", "model", "traced", true); !killed {
		t.Fatal("the child was not killed")
	}
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithIDGenerator(exporters.RunTraceIDs()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	rt, err := Open(ctxT(t), fixtureDSN(dir), WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	base := factory(dir, "model")
	err = rt.Register("model", func(ctx context.Context) ([]harness.Option, error) {
		opts, err := base(ctx)
		return append(opts, harness.WithExtensions(tracing.New(tracing.WithTracerProvider(tp)))), err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Launch(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if res, err := rt.Wait(ctxT(t), "traced"); err != nil || res.Status != harness.StatusCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	sum := sha256.Sum256([]byte("harnessx/run/traced"))
	var agents, chats, tools int
	for _, s := range exp.GetSpans() {
		if got := s.SpanContext.TraceID(); string(got[:]) != string(sum[:16]) {
			t.Errorf("span %s in trace %s, not the run's", s.Name, got)
		}
		attrs := map[string]any{}
		for _, kv := range s.Attributes {
			attrs[string(kv.Key)] = kv.Value.AsInterface()
		}
		switch op := attrs["gen_ai.operation.name"]; op {
		case "invoke_agent":
			agents++
			if attrs[string(tracing.KeyRunRecovered)] != true || attrs[string(tracing.KeyRunAttempt)] != int64(2) {
				t.Errorf("invoke_agent attributes %v, want recovered attempt 2", attrs)
			}
			linked := false
			for _, l := range s.Links {
				for _, kv := range l.Attributes {
					if kv.Key == tracing.KeyLink && kv.Value.AsString() == tracing.LinkPreviousAttempt && l.SpanContext.TraceID() == s.SpanContext.TraceID() {
						linked = true
					}
				}
			}
			if !linked {
				t.Errorf("invoke_agent links %+v: none to the previous attempt", s.Links)
			}
		case "chat":
			chats++
		case "execute_tool":
			tools++
		}
	}
	// Model request 1 and the tool call were recorded by the crashed
	// process; only model request 2 ran here.
	if agents != 1 || chats != 1 || tools != 0 {
		t.Fatalf("spans: %d invoke_agent, %d chat, %d execute_tool; want 1, 1, 0", agents, chats, tools)
	}
}

// TestFinishedRunsLeaveNoMarkers: the tool-call markers of finished runs
// are deleted (in the background, drained at Close); a recovered run's
// execution count goes with them.
func TestFinishedRunsLeaveNoMarkers(t *testing.T) {
	eachBackend(t, func(t *testing.T, dir string) {
		if _, killed := runChild(t, dir, "run", "model", "m1", true); !killed {
			t.Fatal("the child was not killed")
		}
		rt := openFixture(t, dir, true)
		if _, err := rt.Wait(ctxT(t), "m1"); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"p1", "p2"} {
			if _, err := rt.Run(ctxT(t), "par", "go", WithRunID(id)); err != nil {
				t.Fatal(err)
			}
		}
		if err := rt.Close(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		if n := countRows(t, dir, "SELECT COUNT(*) FROM {S} WHERE run_id IN ('m1', 'p1', 'p2')"); n != 0 {
			t.Fatalf("%d rows left in the steps table for finished runs", n)
		}
	})
}
