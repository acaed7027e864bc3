package exporters

import (
	"context"
	"math/rand/v2"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/internal/runtrace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// RunTraceIDs returns the ID generator the builders install by default
// (see [WithIDGenerator]): one harnessx run is one trace, even across a
// crash. A root span started inside a harness run — the tracing
// extension's invoke_agent span, whose context [harness.RunIDFromContext]
// names the run of — gets the trace ID derived from the run ID (the first
// 16 bytes of SHA-256("harnessx/run/" + run ID)), and a span ID derived
// from the run ID, the attempt and the part of the run (Run or a Resume),
// so that a run a durable runtime executes again after a crash continues
// the same trace and its new root span can link to the crashed attempt's.
// Every other span gets random IDs, a root span started outside a run
// included. A trace ID is then a function of the run ID: compute it from
// [harness.RunResult.RunID] to find a run's trace.
//
// The derived IDs are not random: run IDs chosen by an attacker choose
// trace IDs too, and a run ID used twice (two agents run under the same
// ID, not as attempts of one run) puts both runs in one trace with equal
// root span IDs.
func RunTraceIDs() sdktrace.IDGenerator { return runTraceIDs{} }

type runTraceIDs struct{}

// NewIDs returns the IDs of a root span.
func (runTraceIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if info, ok := harness.RunInfoFromContext(ctx); ok {
		return runtrace.TraceID(info.RunID), runtrace.RootSpanID(info.RunID, info.Attempt, info.Steps)
	}
	return randomTraceID(), randomSpanID()
}

// NewSpanID returns the ID of a span that has a parent.
func (runTraceIDs) NewSpanID(context.Context, trace.TraceID) trace.SpanID { return randomSpanID() }

// randomTraceID and randomSpanID use math/rand/v2's goroutine-safe
// ChaCha8 source, seeded by the runtime from the operating system, like
// the SDK's own generator (which is not exported).
func randomTraceID() trace.TraceID {
	for {
		var id trace.TraceID
		a, b := rand.Uint64(), rand.Uint64()
		for i := range 8 {
			id[i], id[8+i] = byte(a>>(8*i)), byte(b>>(8*i))
		}
		if id.IsValid() {
			return id
		}
	}
}

func randomSpanID() trace.SpanID {
	for {
		var id trace.SpanID
		a := rand.Uint64()
		for i := range 8 {
			id[i] = byte(a >> (8 * i))
		}
		if id.IsValid() {
			return id
		}
	}
}
