package exporters_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/harnessx/harnessx/exporters"
	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
	"github.com/harnessx/harnessx/internal/otlpjson"
)

// tailRig is a tail sampler over a span recorder, fed by an SDK provider
// with random IDs.
type tailRig struct {
	ts  *exporters.TailSampler
	rec *tracetest.SpanRecorder
	tp  *sdktrace.TracerProvider
	tr  trace.Tracer
}

func newTailRig(t testing.TB, opts ...exporters.TailOption) *tailRig {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	ts, err := exporters.NewTailSampler(rec, opts...)
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(ts))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return &tailRig{ts: ts, rec: rec, tp: tp, tr: tp.Tracer("tailsample_test")}
}

// runSpec shapes one synthetic run.
type runSpec struct {
	errSpan  string        // name of the span to mark Error, if any
	duration time.Duration // root duration
	noEnd    bool          // leave the root open
}

// synthRun makes a run's span tree with explicit timestamps:
//
//	invoke_agent planner
//	├── chat m
//	├── execute_tool research
//	│   └── invoke_agent researcher
//	│       └── chat child
//	└── chat m (final)
//
// and returns its trace ID and root span. The nested invoke_agent span
// ends before the planner's last chat, as a subagent's run does.
func (r *tailRig) synthRun(spec runSpec) (trace.TraceID, trace.Span) {
	t0 := time.Now()
	if spec.duration == 0 {
		spec.duration = 10 * time.Millisecond
	}
	at := func(f float64) time.Time { return t0.Add(time.Duration(f * float64(spec.duration))) }
	ctx, root := r.tr.Start(context.Background(), "invoke_agent planner", trace.WithTimestamp(t0))
	child := func(ctx context.Context, name string, start, end float64, inner func(context.Context)) {
		ctx, s := r.tr.Start(ctx, name, trace.WithTimestamp(at(start)))
		if inner != nil {
			inner(ctx)
		}
		if name == spec.errSpan {
			s.SetStatus(codes.Error, "boom")
		}
		s.End(trace.WithTimestamp(at(end)))
	}
	child(ctx, "chat m", 0.1, 0.2, nil)
	child(ctx, "execute_tool research", 0.3, 0.6, func(ctx context.Context) {
		child(ctx, "invoke_agent researcher", 0.35, 0.55, func(ctx context.Context) {
			child(ctx, "chat child", 0.4, 0.5, nil)
		})
	})
	child(ctx, "chat m final", 0.7, 0.9, nil)
	if spec.errSpan == "invoke_agent planner" {
		root.SetStatus(codes.Error, "run failed")
	}
	if !spec.noEnd {
		root.End(trace.WithTimestamp(at(1)))
	}
	return root.SpanContext().TraceID(), root
}

const synthSpans = 6

// keptByTrace counts the recorded spans of each trace.
func (r *tailRig) keptByTrace() map[trace.TraceID]int {
	m := map[trace.TraceID]int{}
	for _, s := range r.rec.Ended() {
		m[s.SpanContext().TraceID()]++
	}
	return m
}

func TestTailSamplingDecides(t *testing.T) {
	tests := []struct {
		name      string
		spec      runSpec
		opts      []exporters.TailOption
		wantKept  bool
		wantStats func(exporters.TailSamplingStats) bool
	}{
		{"error in a nested chat keeps the trace", runSpec{errSpan: "chat child"}, nil, true,
			func(s exporters.TailSamplingStats) bool { return s.KeptError == 1 }},
		{"error in the last span before the root keeps it", runSpec{errSpan: "chat m final"}, nil, true,
			func(s exporters.TailSamplingStats) bool { return s.KeptError == 1 }},
		{"error on the root keeps it", runSpec{errSpan: "invoke_agent planner"}, nil, true,
			func(s exporters.TailSamplingStats) bool { return s.KeptError == 1 }},
		{"error on the subagent's run keeps it", runSpec{errSpan: "invoke_agent researcher"}, nil, true,
			func(s exporters.TailSamplingStats) bool { return s.KeptError == 1 }},
		{"slow root keeps it", runSpec{duration: 2 * time.Second},
			[]exporters.TailOption{exporters.WithLatencyThreshold(time.Second)}, true,
			func(s exporters.TailSamplingStats) bool { return s.KeptSlow == 1 }},
		{"root just at the threshold keeps it", runSpec{duration: time.Second},
			[]exporters.TailOption{exporters.WithLatencyThreshold(time.Second)}, true,
			func(s exporters.TailSamplingStats) bool { return s.KeptSlow == 1 }},
		{"fast ordinary run is dropped", runSpec{duration: 999 * time.Millisecond},
			[]exporters.TailOption{exporters.WithLatencyThreshold(time.Second)}, false,
			func(s exporters.TailSamplingStats) bool { return s.DroppedTraces == 1 && s.DroppedSpans == synthSpans }},
		{"latency rule off", runSpec{duration: time.Hour},
			[]exporters.TailOption{exporters.WithLatencyThreshold(0)}, false,
			func(s exporters.TailSamplingStats) bool { return s.DroppedTraces == 1 }},
		{"probability 1 keeps everything", runSpec{},
			[]exporters.TailOption{exporters.WithKeepProbability(1)}, true,
			func(s exporters.TailSamplingStats) bool { return s.KeptSampled == 1 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := append([]exporters.TailOption{exporters.WithKeepProbability(0)}, tc.opts...)
			r := newTailRig(t, opts...)
			id, _ := r.synthRun(tc.spec)
			kept := r.keptByTrace()[id]
			if tc.wantKept && kept != synthSpans {
				t.Fatalf("kept %d spans, want all %d", kept, synthSpans)
			}
			if !tc.wantKept && kept != 0 {
				t.Fatalf("kept %d spans, want none", kept)
			}
			st := r.ts.Stats()
			if !tc.wantStats(st) {
				t.Fatalf("stats %+v", st)
			}
			if st.BufferedSpans != 0 || st.BufferedTraces != 0 {
				t.Fatalf("still buffered after the root ended: %+v", st)
			}
		})
	}
}

// TestTailSamplingWaitsForOutermostRun checks that the subagent's
// invoke_agent span, which ends first, does not decide the trace.
func TestTailSamplingWaitsForOutermostRun(t *testing.T) {
	r := newTailRig(t, exporters.WithKeepProbability(0))
	_, root := r.synthRun(runSpec{noEnd: true})
	if n := len(r.rec.Ended()); n != 0 {
		t.Fatalf("%d spans passed on before the root ended", n)
	}
	if st := r.ts.Stats(); st.BufferedSpans != synthSpans-1 || st.BufferedTraces != 1 {
		t.Fatalf("buffered %+v, want %d spans of one trace", st, synthSpans-1)
	}
	root.SetStatus(codes.Error, "late failure")
	root.End()
	if n := len(r.rec.Ended()); n != synthSpans {
		t.Fatalf("%d spans kept, want %d", n, synthSpans)
	}
}

// TestTailSamplingRemoteParent: a span whose parent came from another
// process is its trace's local root: an ordinary child waits for it.
func TestTailSamplingRemoteParent(t *testing.T) {
	r := newTailRig(t, exporters.WithKeepProbability(0), exporters.WithLatencyThreshold(0))
	remote := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4}, TraceFlags: trace.FlagsSampled, Remote: true,
	})
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), remote)
	ctx, server := r.tr.Start(ctx, "handle request")
	_, inner := r.tr.Start(ctx, "work")
	inner.End()
	if st := r.ts.Stats(); st.BufferedTraces != 1 || st.BufferedSpans != 1 || len(r.rec.Ended()) != 0 {
		t.Fatalf("a child decided its trace: %+v", st)
	}
	server.SetStatus(codes.Error, "x")
	server.End()
	if n := len(r.rec.Ended()); n != 2 {
		t.Fatalf("%d spans kept, want 2", n)
	}
}

// TestTailSamplingErrorKeepsAtOnce: an error keeps its trace the moment
// its span ends, with the spans held before it, and the trace's later
// spans follow, the root's included.
func TestTailSamplingErrorKeepsAtOnce(t *testing.T) {
	r := newTailRig(t, exporters.WithKeepProbability(0), exporters.WithLatencyThreshold(0))
	ctx, root := r.tr.Start(context.Background(), "invoke_agent a")
	_, first := r.tr.Start(ctx, "chat")
	first.End()
	_, tool := r.tr.Start(ctx, "execute_tool t")
	_, sibling := r.tr.Start(ctx, "execute_tool u")
	tool.SetStatus(codes.Error, "tool failed")
	tool.End()
	if n := len(r.rec.Ended()); n != 2 {
		t.Fatalf("%d spans passed on at the error, want the held chat and the tool", n)
	}
	sibling.End()
	root.End()
	if n := len(r.rec.Ended()); n != 4 {
		t.Fatalf("%d spans kept, want 4", n)
	}
	st := r.ts.Stats()
	if st.KeptError != 1 || st.KeptTraces != 1 || st.KeptSpans != 4 || st.PartialTraces != 0 || st.BufferedTraces != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestTailSamplingLateSpans: spans ending after their trace's decision
// follow it; an error among them keeps what is left (a partial keep); a
// span started after a drop begins a new part with its own decision.
func TestTailSamplingLateSpans(t *testing.T) {
	r := newTailRig(t, exporters.WithKeepProbability(0), exporters.WithLatencyThreshold(0))
	names := func() map[string]int {
		m := map[string]int{}
		for _, s := range r.rec.Ended() {
			m[s.Name()]++
		}
		return m
	}

	// One trace: an errored run keeps its enclosing span and the other
	// run under it, the ordinary run b included.
	ctx, outer := r.tr.Start(context.Background(), "http request")
	_, b := r.tr.Start(ctx, "invoke_agent b")
	b.End()
	_, c := r.tr.Start(ctx, "invoke_agent c")
	c.SetStatus(codes.Error, "failed")
	c.End()
	outer.End()
	if got := names(); got["invoke_agent b"] != 1 || got["invoke_agent c"] != 1 || got["http request"] != 1 {
		t.Fatalf("kept %v, want the whole errored trace", got)
	}

	// A dropped trace: a late child is dropped, a late error is kept.
	ctx, root := r.tr.Start(context.Background(), "invoke_agent d")
	_, late := r.tr.Start(ctx, "late")
	_, lateErr := r.tr.Start(ctx, "late error")
	root.End()
	late.End()
	if got := names(); got["invoke_agent d"]+got["late"] != 0 {
		t.Fatalf("kept %v of an ordinary trace", got)
	}
	lateErr.SetStatus(codes.Error, "x")
	lateErr.End()
	if got := names(); got["late error"] != 1 || got["invoke_agent d"] != 0 {
		t.Fatalf("kept %v, want the late error alone", got)
	}
	st := r.ts.Stats()
	if st.PartialTraces != 1 || st.DroppedTraces != 1 || st.DroppedSpans != 2 {
		t.Fatalf("stats %+v", st)
	}

	// A span started for a dropped trace (here a second request from the
	// same remote caller; a resumed run's root is another) begins a new
	// part: an error in it keeps it, partial.
	_, e1 := r.tr.Start(context.Background(), "invoke_agent e")
	id := e1.SpanContext().TraceID()
	e1.End()
	again := trace.ContextWithRemoteSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: id, SpanID: trace.SpanID{9}, TraceFlags: trace.FlagsSampled, Remote: true,
	}))
	_, e2 := r.tr.Start(again, "invoke_agent e resumed")
	e2.SetStatus(codes.Error, "x")
	e2.End()
	if got := names(); got["invoke_agent e resumed"] != 1 || got["invoke_agent e"] != 0 {
		t.Fatalf("kept %v, want the resumed part alone", got)
	}
	if st := r.ts.Stats(); st.PartialTraces != 2 || st.KeptError != 3 {
		t.Fatalf("stats %+v", st)
	}
	accounted(t, r.ts.Stats(), 8)
}

// TestTailSamplingForeignParent: a span whose parent another provider
// started is the local root of its trace here: the trace is decided when
// it ends, and the next run under the same foreign span is a new part.
func TestTailSamplingForeignParent(t *testing.T) {
	r := newTailRig(t, exporters.WithKeepProbability(0), exporters.WithLatencyThreshold(0))
	app := sdktrace.NewTracerProvider()
	defer app.Shutdown(context.Background())
	ctx, request := app.Tracer("app").Start(context.Background(), "http request")
	defer request.End()

	rctx, run1 := r.tr.Start(ctx, "invoke_agent 1")
	_, chat := r.tr.Start(rctx, "chat")
	chat.End()
	run1.End()
	if st := r.ts.Stats(); st.DroppedTraces != 1 || st.BufferedTraces != 0 {
		t.Fatalf("the first run was not decided at its end: %+v", st)
	}
	rctx, run2 := r.tr.Start(ctx, "invoke_agent 2")
	_, chat2 := r.tr.Start(rctx, "chat 2")
	chat2.SetStatus(codes.Error, "x")
	chat2.End()
	run2.End()
	got := map[string]bool{}
	for _, s := range r.rec.Ended() {
		got[s.Name()] = true
	}
	if len(got) != 2 || !got["invoke_agent 2"] || !got["chat 2"] {
		t.Fatalf("kept %v, want the second run whole", got)
	}
	if st := r.ts.Stats(); st.KeptError != 1 || st.PartialTraces != 1 || st.BufferedTraces != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestTailSamplingProbabilistic checks the kept share of ordinary traces
// over 2000 random trace IDs, and that the decision depends on the trace
// ID alone.
func TestTailSamplingProbabilistic(t *testing.T) {
	const n = 2000
	for _, p := range []float64{0.1, 0.25, 0.5} {
		t.Run(fmt.Sprint(p), func(t *testing.T) {
			r := newTailRig(t, exporters.WithKeepProbability(p), exporters.WithLatencyThreshold(0))
			other, err := exporters.NewTailSampler(tracetest.NewSpanRecorder(), exporters.WithKeepProbability(p))
			if err != nil {
				t.Fatal(err)
			}
			ids := make([]trace.TraceID, n)
			for i := range ids {
				ids[i], _ = r.synthRun(runSpec{})
			}
			kept := r.keptByTrace()
			for _, id := range ids {
				k := kept[id]
				if k != 0 && k != synthSpans {
					t.Fatalf("trace %s partly kept: %d spans", id, k)
				}
				if (k != 0) != other.Sampled(id) {
					t.Fatalf("trace %s: kept=%v here, Sampled=%v by another sampler", id, k != 0, other.Sampled(id))
				}
			}
			// Binomial(n, p): allow 5 standard deviations.
			mean, sd := n*p, math.Sqrt(n*p*(1-p))
			if got := float64(len(kept)); math.Abs(got-mean) > 5*sd {
				t.Fatalf("kept %v of %d traces, want %v ± %.0f", got, n, mean, 5*sd)
			}
			st := r.ts.Stats()
			if st.KeptSampled != int64(len(kept)) || st.DroppedTraces != int64(n-len(kept)) {
				t.Fatalf("stats %+v for %d kept", st, len(kept))
			}
		})
	}
}

// TestTailSamplingConsistentAcrossProbabilities: a trace kept at p is kept
// at every larger p.
func TestTailSamplingConsistentAcrossProbabilities(t *testing.T) {
	low, err := exporters.NewTailSampler(tracetest.NewSpanRecorder(), exporters.WithKeepProbability(0.1))
	if err != nil {
		t.Fatal(err)
	}
	high, err := exporters.NewTailSampler(tracetest.NewSpanRecorder(), exporters.WithKeepProbability(0.3))
	if err != nil {
		t.Fatal(err)
	}
	gen := sdktrace.NewTracerProvider()
	defer gen.Shutdown(context.Background())
	var nLow, nHigh int
	for range 5000 {
		_, s := gen.Tracer("ids").Start(context.Background(), "x")
		id := s.SpanContext().TraceID()
		if low.Sampled(id) {
			nLow++
			if !high.Sampled(id) {
				t.Fatalf("%s kept at 0.1 but not at 0.3", id)
			}
		}
		if high.Sampled(id) {
			nHigh++
		}
	}
	if nLow == 0 || nHigh <= nLow {
		t.Fatalf("kept %d at 0.1 and %d at 0.3", nLow, nHigh)
	}
}

// accounted checks that every ended span is in exactly one bucket.
func accounted(t *testing.T, st exporters.TailSamplingStats, ended int64) {
	t.Helper()
	if sum := st.KeptSpans + st.DroppedSpans + st.OverflowSpans + st.EvictedSpans + st.AfterShutdownSpans + st.BufferedSpans; sum != ended {
		t.Fatalf("stats account for %d spans, %d ended: %+v", sum, ended, st)
	}
}

// TestTailSamplingBoundsUnderFlood opens many traces whose roots never
// end, each with many spans, and checks the bounds and the counts.
func TestTailSamplingBoundsUnderFlood(t *testing.T) {
	const (
		maxTraces, maxPer, maxSpans = 10, 5, 30
		traces, perTrace            = 200, 12
	)
	r := newTailRig(t, exporters.WithKeepProbability(0), exporters.WithLatencyThreshold(0),
		exporters.WithMaxTraces(maxTraces), exporters.WithMaxSpansPerTrace(maxPer), exporters.WithMaxSpans(maxSpans))
	var ended int64
	errored := map[trace.TraceID]bool{}
	for i := range traces {
		ctx, root := r.tr.Start(context.Background(), "invoke_agent flood")
		for k := range perTrace {
			_, s := r.tr.Start(ctx, "chat")
			if i%20 == 0 && k == perTrace-1 {
				// Past the per-trace bound: the error keeps the trace
				// at once, with the spans held, though the ones that
				// overflowed are lost.
				s.SetStatus(codes.Error, "x")
				errored[root.SpanContext().TraceID()] = true
			}
			s.End()
			ended++
			st := r.ts.Stats()
			if st.BufferedTraces > maxTraces || st.BufferedSpans > maxSpans {
				t.Fatalf("bounds exceeded: %+v", st)
			}
		}
	}
	st := r.ts.Stats()
	accounted(t, st, ended)
	if st.OverflowSpans == 0 || st.EvictedTraces == 0 {
		t.Fatalf("no overflow or eviction counted: %+v", st)
	}
	// Each ordinary trace held maxPer spans, evicted since or still held.
	if got, want := st.EvictedSpans+st.BufferedSpans, int64((traces-len(errored))*maxPer); got != want {
		t.Fatalf("%d spans evicted or held, want %d: %+v", got, want, st)
	}
	if st.KeptError != int64(len(errored)) || st.PartialTraces != int64(len(errored)) {
		t.Fatalf("want %d errored traces kept, partial: %+v", len(errored), st)
	}
	kept := r.keptByTrace()
	for id := range errored {
		if n := kept[id]; n != maxPer+1 {
			t.Errorf("errored trace %s: %d spans kept, want %d", id, n, maxPer+1)
		}
	}
	for id := range kept {
		if !errored[id] {
			t.Errorf("ordinary trace %s kept", id)
		}
	}
}

// TestTailSamplingTotalSpanBound: with the per-trace bound above the
// total, one huge trace is cut to the total bound and evicted as needed.
func TestTailSamplingTotalSpanBound(t *testing.T) {
	r := newTailRig(t, exporters.WithKeepProbability(0), exporters.WithMaxSpans(8), exporters.WithMaxSpansPerTrace(100))
	ctx, root := r.tr.Start(context.Background(), "invoke_agent big")
	for range 50 {
		_, s := r.tr.Start(ctx, "tool")
		s.End()
		if st := r.ts.Stats(); st.BufferedSpans > 8 {
			t.Fatalf("buffered %d spans, bound 8", st.BufferedSpans)
		}
	}
	root.End()
	st := r.ts.Stats()
	accounted(t, st, 51)
	if st.OverflowSpans != 50-8 {
		t.Fatalf("overflow %d, want %d (the per-trace bound is clamped to the total): %+v", st.OverflowSpans, 50-8, st)
	}
}

// TestTailSamplingFlushAndShutdown: an errored open trace went on at its
// error; ForceFlush passes on an open trace whose decision is known (here
// one open longer than the latency threshold) and leaves the others held;
// Shutdown decides them on what they have; later spans are counted.
func TestTailSamplingFlushAndShutdown(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	ts, err := exporters.NewTailSampler(rec, exporters.WithKeepProbability(0), exporters.WithLatencyThreshold(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(ts))
	tr := tp.Tracer("t")
	open := func(fail bool, since time.Duration) trace.TraceID {
		ctx, root := tr.Start(context.Background(), "invoke_agent open", trace.WithTimestamp(time.Now().Add(-since)))
		_, s := tr.Start(ctx, "chat")
		if fail {
			s.SetStatus(codes.Error, "x")
		}
		s.End()
		return root.SpanContext().TraceID()
	}
	failing, ordinary, stuck := open(true, 0), open(false, 0), open(false, 2*time.Hour)
	ctx := context.Background()
	if err := tp.ForceFlush(ctx); err != nil {
		t.Fatal(err)
	}
	traceIDs := func() map[trace.TraceID]int {
		m := map[trace.TraceID]int{}
		for _, s := range rec.Ended() {
			m[s.SpanContext().TraceID()]++
		}
		return m
	}
	if got := traceIDs(); len(got) != 2 || got[failing] != 1 || got[stuck] != 1 {
		t.Fatalf("after ForceFlush %v; want the failing (%s) and the stuck (%s) trace's spans", got, failing, stuck)
	}
	if st := ts.Stats(); st.BufferedTraces != 1 || st.BufferedSpans != 1 || st.KeptError != 1 || st.KeptSlow != 1 {
		t.Fatalf("after ForceFlush: %+v", st)
	}
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if got := traceIDs(); len(got) != 2 || got[ordinary] != 0 {
		t.Fatalf("after Shutdown %v; the ordinary trace %s was kept", got, ordinary)
	}
	st := ts.Stats()
	if st.UnfinishedTraces != 3 || st.KeptError != 1 || st.KeptSlow != 1 || st.DroppedTraces != 1 || st.BufferedSpans != 0 || st.BufferedTraces != 0 {
		t.Fatalf("after Shutdown: %+v", st)
	}
	if err := ts.Shutdown(ctx); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
	// A span ending after Shutdown is counted, not passed on.
	other := sdktrace.NewTracerProvider()
	_, s := other.Tracer("t").Start(ctx, "late")
	s.End()
	for _, ro := range []sdktrace.ReadOnlySpan{s.(sdktrace.ReadOnlySpan)} {
		ts.OnEnd(ro)
	}
	_ = other.Shutdown(ctx)
	if st := ts.Stats(); st.AfterShutdownSpans != 1 || len(rec.Ended()) != 2 {
		t.Fatalf("late span: %+v, %d recorded", st, len(rec.Ended()))
	}
}

// TestTailSamplingEarlyDecisionLatency: an incomplete trace that started
// longer ago than the threshold is kept at Shutdown as slow.
func TestTailSamplingEarlyDecisionLatency(t *testing.T) {
	r := newTailRig(t, exporters.WithKeepProbability(0), exporters.WithLatencyThreshold(time.Minute))
	ctx, _ := r.tr.Start(context.Background(), "invoke_agent stuck", trace.WithTimestamp(time.Now().Add(-2*time.Minute)))
	_, s := r.tr.Start(ctx, "chat")
	s.End()
	if err := r.ts.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := r.ts.Stats(); st.KeptSlow != 1 || len(r.rec.Ended()) != 1 {
		t.Fatalf("stuck run: %+v, %d recorded", st, len(r.rec.Ended()))
	}
}

// TestTailSamplingConcurrent runs traces from many goroutines (run with
// -race) and checks that exactly the errored ones are kept, whole.
func TestTailSamplingConcurrent(t *testing.T) {
	const workers, perWorker = 8, 150
	r := newTailRig(t, exporters.WithKeepProbability(0), exporters.WithLatencyThreshold(0))
	var mu sync.Mutex
	want := map[trace.TraceID]bool{}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				spec := runSpec{}
				if (w*perWorker+i)%10 == 0 {
					spec.errSpan = "chat child"
				}
				id, _ := r.synthRun(spec)
				if spec.errSpan != "" {
					mu.Lock()
					want[id] = true
					mu.Unlock()
				}
				_ = r.ts.Stats()
			}
		})
	}
	wg.Wait()
	kept := r.keptByTrace()
	if len(kept) != len(want) {
		t.Fatalf("kept %d traces, want %d", len(kept), len(want))
	}
	for id, n := range kept {
		if !want[id] || n != synthSpans {
			t.Fatalf("trace %s: %d spans kept, errored=%v", id, n, want[id])
		}
	}
	accounted(t, r.ts.Stats(), workers*perWorker*synthSpans)
}

func TestTailSamplingInvalid(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tests := []struct {
		name string
		next sdktrace.SpanProcessor
		opt  exporters.TailOption
		want string
	}{
		{"probability above 1", rec, exporters.WithKeepProbability(1.5), "keep probability 1.5"},
		{"negative probability", rec, exporters.WithKeepProbability(-0.1), "keep probability -0.1"},
		{"NaN probability", rec, exporters.WithKeepProbability(math.NaN()), "keep probability NaN"},
		{"negative latency", rec, exporters.WithLatencyThreshold(-time.Second), "latency threshold -1s"},
		{"zero traces", rec, exporters.WithMaxTraces(0), "max traces 0"},
		{"zero per trace", rec, exporters.WithMaxSpansPerTrace(0), "max spans per trace 0"},
		{"negative spans", rec, exporters.WithMaxSpans(-1), "max spans -1"},
		{"zero decided", rec, exporters.WithMaxDecidedTraces(0), "max decided traces 0"},
		{"no downstream", nil, nil, "no downstream"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := exporters.NewTailSampler(tc.next, tc.opt)
			if !errors.Is(err, exporters.ErrInvalidTailSampling) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want ErrInvalidTailSampling mentioning %q", err, tc.want)
			}
		})
	}
}

// failingAgent returns an agent traced through tp whose model call fails,
// so its run fails and its invoke_agent span has status Error.
func failingAgent(t testing.TB, tp trace.TracerProvider) *harness.Agent {
	t.Helper()
	agent, err := harness.New(
		harness.WithName("failing"),
		harness.WithProvider(harnesstest.NewScriptedProvider(harnesstest.Response{Err: errors.New("model down")})),
		harness.WithModel("m"),
		harness.WithExtensions(tracing.New(tracing.WithTracerProvider(tp))),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = agent.Close(context.Background()) })
	return agent
}

// TestProviderTailSampling runs real traced agents through a provider
// built with WithTailSampling (and one from the environment) and checks
// what reaches the file backend.
func TestProviderTailSampling(t *testing.T) {
	for _, viaEnv := range []bool{false, true} {
		t.Run(fmt.Sprintf("env=%v", viaEnv), func(t *testing.T) {
			ctx := context.Background()
			var out bytes.Buffer
			opts := []exporters.Option{exporters.WithFileWriter(&out)}
			if viaEnv {
				t.Setenv(exporters.EnvTailSampling, "0")
				t.Setenv(exporters.EnvTailSamplingLatency, "1h")
			} else {
				opts = append(opts, exporters.WithTailSampling(exporters.WithKeepProbability(0), exporters.WithLatencyThreshold(time.Hour)))
			}
			tp, err := exporters.FromEnv(ctx, opts...)
			if err != nil {
				t.Fatal(err)
			}
			ok := newTracedAgent(t, tp)
			for range 3 {
				run(t, ok)
			}
			res, _ := failingAgent(t, tp).Run(ctx, "hi")
			if res == nil || res.Status != harness.StatusFailed {
				t.Fatalf("the failing run: %+v", res)
			}
			if err := tp.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			reqs, err := otlpjson.ReadLines(bytes.NewReader(out.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			spans := allSpans(reqs...)
			if len(spans) == 0 {
				t.Fatal("the failed run's spans were not exported")
			}
			traceIDs := map[string]bool{}
			for _, s := range spans {
				traceIDs[string(s.GetTraceId())] = true
				if strings.Contains(s.GetName(), "planner") || strings.Contains(s.GetName(), "researcher") {
					t.Errorf("span %q of an ordinary run was exported", s.GetName())
				}
			}
			if len(traceIDs) != 1 {
				t.Errorf("%d traces exported, want the failed run's only", len(traceIDs))
			}
			st := tp.Stats()
			if st.TailSampling.KeptError != 1 || st.TailSampling.DroppedTraces != 3 ||
				st.TailSampling.DroppedSpans != 3*spansPerRun || st.Exported != int64(len(spans)) || st.Lost() != 0 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

func TestProviderTailSamplingInvalid(t *testing.T) {
	ctx := context.Background()
	t.Run("option", func(t *testing.T) {
		_, err := exporters.NewFile(ctx, exporters.WithFileWriter(&bytes.Buffer{}),
			exporters.WithTailSampling(exporters.WithKeepProbability(2)))
		if !errors.Is(err, exporters.ErrInvalidTailSampling) {
			t.Fatalf("err %v", err)
		}
	})
	for _, env := range [][2]string{
		{exporters.EnvTailSampling, "often"},
		{exporters.EnvTailSampling, "1.5"},
		{exporters.EnvTailSamplingLatency, "soon"},
	} {
		t.Run(env[0]+"="+env[1], func(t *testing.T) {
			t.Setenv(exporters.EnvTailSampling, "0.5")
			t.Setenv(env[0], env[1])
			_, err := exporters.FromEnv(ctx, exporters.WithFileWriter(&bytes.Buffer{}))
			if !errors.Is(err, exporters.ErrInvalidTailSampling) || !strings.Contains(err.Error(), env[1]) {
				t.Fatalf("err %v", err)
			}
		})
	}
	t.Run("off", func(t *testing.T) {
		t.Setenv(exporters.EnvTailSampling, "off")
		var out bytes.Buffer
		tp, err := exporters.FromEnv(ctx, exporters.WithFileWriter(&out))
		if err != nil {
			t.Fatal(err)
		}
		run(t, newTracedAgent(t, tp))
		if err := tp.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		if st := tp.Stats(); st.Exported != spansPerRun || st.TailSampling != (exporters.TailSamplingStats{}) {
			t.Fatalf("stats %+v", st)
		}
	})
}
