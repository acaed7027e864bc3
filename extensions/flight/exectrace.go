package flight

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime/trace"
	"time"

	"github.com/harnessx/harnessx/harness"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// ExecutionTraceName is the bundle member holding the Go execution trace
// of the moments before the bundle was made (see [WithExecutionTrace]).
// Open it with `go tool trace`.
const ExecutionTraceName = "runtime/flight.trace"

// MaxExecutionTraceBytes caps the execution trace a bundle holds; a larger
// snapshot is left out and the manifest says why.
const MaxExecutionTraceBytes = 64 << 20

// The annotations the recorder adds to the Go execution trace.
const (
	// RunTaskType is the type of the task (runtime/trace.NewTask) of
	// each run.
	RunTaskType = "harnessx.run"
	// ToolRegionPrefix prefixes the region (runtime/trace.StartRegion)
	// of each tool call, followed by the tool's name.
	ToolRegionPrefix = "execute_tool "
	// LogRunID and LogTraceID are the categories of the run's logged
	// run ID and OpenTelemetry trace ID (hex).
	LogRunID   = "harnessx.run_id"
	LogTraceID = "otel.trace_id"
)

// WithExecutionTrace makes incident bundles carry the Go execution trace:
// when a bundle is made, fr's window (its last seconds) is written to the
// member [ExecutionTraceName] with its SHA-256 in the manifest, like the
// other members. There is one flight recorder per process, so the
// application owns fr: it creates and starts it (trace.NewFlightRecorder,
// Start) and stops it; the recorder never starts, stops or configures
// it, and shares it with any other agent given the same fr. When fr is
// not running as a bundle is made, or its snapshot fails or exceeds
// [MaxExecutionTraceBytes], the bundle holds no execution trace and
// [Manifest].ExecutionTraceNote says why. The trace is written by the
// bundle writer a moment after the trigger fires (automatic bundles are
// written in the background), which fr's window, seconds long, covers.
// The execution trace is not redacted: it holds stacks, timings and the
// recorder's annotations (run and trace IDs, tool names), not payloads.
func WithExecutionTrace(fr *trace.FlightRecorder) Option {
	return func(c *config) { c.execTrace = fr }
}

// startRunTask starts the run's task when the execution trace is on
// (runtime/trace.IsEnabled: a flight recorder or trace.Start is active),
// logs the run ID in it and returns it with its context; with tracing
// off it returns ctx and nil, and costs no allocation.
func startRunTask(ctx context.Context, info *harness.RunInfo) (context.Context, *trace.Task) {
	if !trace.IsEnabled() {
		return ctx, nil
	}
	ctx, task := trace.NewTask(ctx, RunTaskType)
	trace.Log(ctx, LogRunID, info.RunID)
	return ctx, task
}

// endTask ends a task started by startRunTask; nil does nothing.
func endTask(t *trace.Task) {
	if t != nil {
		t.End()
	}
}

// startToolRegion starts the region of a tool call when the execution
// trace is on; nil otherwise, without allocating. End it on the same
// goroutine.
func startToolRegion(ctx context.Context, tool string) *trace.Region {
	if !trace.IsEnabled() {
		return nil
	}
	return trace.StartRegion(ctx, ToolRegionPrefix+tool)
}

// endRegion ends a region started by startToolRegion; nil does nothing.
func endRegion(r *trace.Region) {
	if r != nil {
		r.End()
	}
}

// logTraceID logs the OpenTelemetry trace ID of sc in ctx's task when the
// execution trace is on and sc has one; otherwise it does nothing and
// allocates nothing.
func logTraceID(ctx context.Context, sc oteltrace.SpanContext) {
	if !trace.IsEnabled() || !sc.HasTraceID() {
		return
	}
	trace.Log(ctx, LogTraceID, sc.TraceID().String())
}

// errTooBig stops a snapshot past MaxExecutionTraceBytes.
var errTooBig = fmt.Errorf("flight: execution trace over %d bytes", MaxExecutionTraceBytes)

// cappedBuffer is a bytes.Buffer that refuses to grow past max.
type cappedBuffer struct {
	bytes.Buffer
	max int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.max {
		return 0, errTooBig
	}
	return b.Buffer.Write(p)
}

// snapshotExecutionTrace writes fr's window into memory. It returns the
// trace, or nil and the reason there is none. Only one WriteTo may run
// at a time in a process, so a snapshot that finds another one running
// (another agent's bundle, the application's own) retries a few times.
func snapshotExecutionTrace(fr *trace.FlightRecorder, max int) ([]byte, string) {
	if fr == nil {
		return nil, ""
	}
	var lastErr error
	for attempt := range 4 {
		if !fr.Enabled() {
			return nil, "the flight recorder given with WithExecutionTrace was not running (start it with FlightRecorder.Start)"
		}
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * 50 * time.Millisecond)
		}
		buf := &cappedBuffer{max: max}
		_, err := fr.WriteTo(buf)
		if err == nil {
			return buf.Bytes(), ""
		}
		if errors.Is(err, errTooBig) {
			return nil, fmt.Sprintf("the execution trace exceeded %d bytes (lower FlightRecorderConfig.MaxBytes)", max)
		}
		lastErr = err
	}
	return nil, fmt.Sprintf("the execution trace could not be written: %v", lastErr)
}

// traceMagicPrefix starts every Go execution trace: "go 1.NN trace\x00\x00\x00".
const traceMagicPrefix = "go 1."

// checkExecutionTrace checks that data looks like a Go execution trace: a
// header "go 1.N trace" padded with NULs to 16 bytes, and some events.
func checkExecutionTrace(data []byte) error {
	const headerLen = 16
	if len(data) <= headerLen || !bytes.HasPrefix(data, []byte(traceMagicPrefix)) {
		return errors.New("not a Go execution trace (no \"go 1.N trace\" header)")
	}
	hdr := data[:headerLen]
	end := bytes.IndexByte(hdr, 0)
	if end < 0 || !bytes.HasSuffix(hdr[:end], []byte(" trace")) || len(bytes.Trim(hdr[end:], "\x00")) != 0 {
		return errors.New("not a Go execution trace (malformed header)")
	}
	return nil
}

// SetExecutionTrace sets the execution trace member, or, when data is nil,
// the note saying why there is none.
func (b *bundleWriter) SetExecutionTrace(data []byte, note string) {
	b.execTrace = data
	b.m.ExecutionTraceNote = note
}
