package flight_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/harnessx/harnessx/extensions/flight"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

// A run that a durable runtime executes again after a crash is recorded
// with a recovered event, carrying the attempt, before its run_start.
func TestRecordRecoveredRun(t *testing.T) {
	s := newAgent(t, []harnesstest.Response{harnesstest.Reply("first"), harnesstest.Reply("again")}, nil)
	ctx := harness.ContextWithRunID(context.Background(), "run-c")
	if _, err := s.agent.Run(ctx, "hello"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.agent.Run(harness.ContextRecovered(ctx, 2), "hello"); err != nil {
		t.Fatal(err)
	}
	s.close(t)
	evs, _ := journalEvents(t, filepath.Join(s.dir, "sess-1"))
	want := []flight.Kind{flight.KindRunStart, flight.KindModelRequest, flight.KindModelResponse, flight.KindRunEnd,
		flight.KindRecovered, flight.KindRunStart, flight.KindModelRequest, flight.KindModelResponse, flight.KindRunEnd}
	if got := kinds(evs); !slices.Equal(got, want) {
		t.Fatalf("kinds\n got %v\nwant %v", got, want)
	}
	if evs[0].Attempt != 0 {
		t.Errorf("first run_start: attempt %d, want none", evs[0].Attempt)
	}
	rec, start := evs[4], evs[5]
	if rec.Attempt != 2 || rec.RunID != "run-c" || rec.Agent != "tester" || rec.Time.IsZero() || rec.IsFailure() {
		t.Errorf("recovered event %+v", rec)
	}
	if start.Attempt != 2 || start.Text != "hello" {
		t.Errorf("run_start of the recovery: %+v", start)
	}
	// The recovered event has the run's span, like the run_start.
	if rec.TraceID == "" || rec.TraceID != start.TraceID || rec.SpanID != start.SpanID {
		t.Errorf("recovered event trace %q span %q, run_start %q %q", rec.TraceID, rec.SpanID, start.TraceID, start.SpanID)
	}
}
