package tracing_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

// interruptingRunner reports every tool call as interrupted by a crash, as
// a durable runtime recovering a run does for a call that is not
// replay-safe.
type interruptingRunner struct{ harness.DirectRunner }

func (interruptingRunner) Tools(ctx context.Context, steps []*harness.Step, fn func(context.Context, int) *harness.ToolResult) []*harness.ToolResult {
	return harness.DirectRunner{}.Tools(harness.InterruptedContext(ctx), steps, fn)
}

func TestInterruptedToolIsNotAnError(t *testing.T) {
	tp, sr := recorderTP(t)
	a, _ := newAgent(t, tp, []harnesstest.Response{harnesstest.CallTool("c1", "weather", `{"city":"Paris"}`), harnesstest.Reply("ok")},
		harness.WithStepRunner(interruptingRunner{}))
	if _, err := a.Run(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	all := spans(sr)
	checkNoOrphans(t, all)
	ss := byName(all, "execute_tool weather")
	if len(ss) != 1 {
		t.Fatalf("tool spans: %q", names(all))
	}
	s := ss[0]
	if got := str(s, tracing.KeyToolStatus); got != string(harness.ToolInterrupted) {
		t.Errorf("%s = %q, want interrupted", tracing.KeyToolStatus, got)
	}
	if s.Status().Code != codes.Unset {
		t.Errorf("span status %v, want unset", s.Status())
	}
	if _, ok := attr(s, semconv.ErrorTypeKey); ok {
		t.Errorf("error.type set on an interrupted call: %q", str(s, semconv.ErrorTypeKey))
	}
}
