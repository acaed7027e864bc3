package flight

import (
	"bytes"
	"context"
	rtrace "runtime/trace"
	"testing"

	"github.com/harnessx/harnessx/harness"
	"go.opentelemetry.io/otel/trace"
)

// annotate runs every annotation the recorder makes for a run with one
// tool call.
func annotate(ctx context.Context, info *harness.RunInfo, sc trace.SpanContext) {
	ctx, task := startRunTask(ctx, info)
	logTraceID(ctx, sc)
	r := startToolRegion(ctx, "get_weather")
	endRegion(r)
	endTask(task)
}

// TestAnnotationsFreeWhenTracingOff: with no execution trace active the
// annotations allocate nothing; with one active they do work (so the
// measurement is of something).
func TestAnnotationsFreeWhenTracingOff(t *testing.T) {
	if rtrace.IsEnabled() {
		t.Skip("an execution trace is already active (go test -trace?)")
	}
	ctx := context.Background()
	info := &harness.RunInfo{RunID: "run-1", Agent: "a"}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4}})
	if n := testing.AllocsPerRun(1000, func() { annotate(ctx, info, sc) }); n != 0 {
		t.Fatalf("annotations with tracing off: %v allocations a run, want 0", n)
	}

	fr := rtrace.NewFlightRecorder(rtrace.FlightRecorderConfig{})
	if err := fr.Start(); err != nil {
		t.Skipf("cannot start a flight recorder: %v", err)
	}
	defer fr.Stop()
	if n := testing.AllocsPerRun(100, func() { annotate(ctx, info, sc) }); n == 0 {
		t.Fatal("annotations with tracing on allocate nothing: are they made at all?")
	}
}

func TestCheckExecutionTrace(t *testing.T) {
	fr := rtrace.NewFlightRecorder(rtrace.FlightRecorderConfig{})
	if err := fr.Start(); err != nil {
		t.Skipf("cannot start a flight recorder: %v", err)
	}
	var real bytes.Buffer
	_, err := fr.WriteTo(&real)
	fr.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if err := checkExecutionTrace(real.Bytes()); err != nil {
		t.Fatalf("a real trace: %v (header %q)", err, real.Bytes()[:16])
	}
	for name, data := range map[string][]byte{
		"empty":          nil,
		"header only":    real.Bytes()[:16],
		"json":           []byte(`{"resourceSpans":[]}` + "                "),
		"wrong word":     append([]byte("go 1.26 trice\x00\x00\x00"), 1, 2, 3),
		"no padding":     append([]byte("go 1.26 trace   "), 1, 2, 3),
		"junk in header": append([]byte("go 1.26 trace\x00x\x00"), 1, 2, 3),
	} {
		if err := checkExecutionTrace(data); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestSnapshotExecutionTrace(t *testing.T) {
	if data, note := snapshotExecutionTrace(nil, MaxExecutionTraceBytes); data != nil || note != "" {
		t.Fatalf("no recorder: %d bytes, note %q", len(data), note)
	}
	fr := rtrace.NewFlightRecorder(rtrace.FlightRecorderConfig{})
	if data, note := snapshotExecutionTrace(fr, MaxExecutionTraceBytes); data != nil || !bytes.Contains([]byte(note), []byte("not running")) {
		t.Fatalf("stopped recorder: %d bytes, note %q", len(data), note)
	}
	if err := fr.Start(); err != nil {
		t.Skipf("cannot start a flight recorder: %v", err)
	}
	defer fr.Stop()
	if data, note := snapshotExecutionTrace(fr, 64); data != nil || !bytes.Contains([]byte(note), []byte("exceeded 64 bytes")) {
		t.Fatalf("over the cap: %d bytes, note %q", len(data), note)
	}
	data, note := snapshotExecutionTrace(fr, MaxExecutionTraceBytes)
	if note != "" || checkExecutionTrace(data) != nil {
		t.Fatalf("running recorder: %d bytes, note %q", len(data), note)
	}
}
