package exporters

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// ErrInvalidTailSampling is returned by [NewTailSampler] (and by the
// builders given [WithTailSampling] or the HARNESSX_TAIL_SAMPLING*
// variables) for a setting out of range.
var ErrInvalidTailSampling = errors.New("exporters: invalid tail sampling setting")

// TailOption configures a [TailSampler].
type TailOption func(*tailConfig)

// tailConfig holds a TailSampler's settings. Defaults:
//   - probability of keeping a trace that is neither errored nor slow: 0.1;
//   - latency threshold: 30s (a run at least that long is kept);
//   - at most 1000 traces, 1000 spans per trace and 10000 spans buffered.
type tailConfig struct {
	probability    float64
	probabilitySet bool
	latency        time.Duration
	latencySet     bool
	maxTraces      int
	maxPerTrace    int
	maxSpans       int
	now            func() time.Time
}

const (
	defaultTailProbability = 0.1
	defaultTailLatency     = 30 * time.Second
	defaultTailMaxTraces   = 1000
	defaultTailMaxPerTrace = 1000
	defaultTailMaxSpans    = 10000
)

// WithKeepProbability sets the share, in [0, 1], of the traces that have
// no error and are not slow that a [TailSampler] keeps. Default 0.1.
func WithKeepProbability(p float64) TailOption {
	return func(c *tailConfig) { c.probability, c.probabilitySet = p, true }
}

// WithLatencyThreshold keeps every trace whose root span lasted at least
// d. Zero turns the latency rule off. Default 30s.
func WithLatencyThreshold(d time.Duration) TailOption {
	return func(c *tailConfig) { c.latency, c.latencySet = d, true }
}

// WithMaxTraces bounds the traces a [TailSampler] buffers at once.
// Default 1000.
func WithMaxTraces(n int) TailOption { return func(c *tailConfig) { c.maxTraces = n } }

// WithMaxSpansPerTrace bounds the spans buffered for one trace; later
// spans of that trace (its root excepted) are dropped and counted in
// [TailSamplingStats].OverflowSpans. Default 1000, at most the total
// bound.
func WithMaxSpansPerTrace(n int) TailOption { return func(c *tailConfig) { c.maxPerTrace = n } }

// WithMaxSpans bounds the spans a [TailSampler] buffers across all traces.
// Default 10000.
func WithMaxSpans(n int) TailOption { return func(c *tailConfig) { c.maxSpans = n } }

func newTailConfig(opts []TailOption) (tailConfig, error) {
	c := tailConfig{
		probability: defaultTailProbability,
		latency:     defaultTailLatency,
		maxTraces:   defaultTailMaxTraces,
		maxPerTrace: defaultTailMaxPerTrace,
		maxSpans:    defaultTailMaxSpans,
		now:         time.Now,
	}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	var errs []error
	if math.IsNaN(c.probability) || c.probability < 0 || c.probability > 1 {
		errs = append(errs, fmt.Errorf("%w: keep probability %v is not in [0, 1]", ErrInvalidTailSampling, c.probability))
	}
	if c.latency < 0 {
		errs = append(errs, fmt.Errorf("%w: latency threshold %v is negative", ErrInvalidTailSampling, c.latency))
	}
	if c.maxTraces <= 0 {
		errs = append(errs, fmt.Errorf("%w: max traces %d is not positive", ErrInvalidTailSampling, c.maxTraces))
	}
	if c.maxPerTrace <= 0 {
		errs = append(errs, fmt.Errorf("%w: max spans per trace %d is not positive", ErrInvalidTailSampling, c.maxPerTrace))
	}
	if c.maxSpans <= 0 {
		errs = append(errs, fmt.Errorf("%w: max spans %d is not positive", ErrInvalidTailSampling, c.maxSpans))
	}
	if err := errors.Join(errs...); err != nil {
		return c, err
	}
	c.maxPerTrace = min(c.maxPerTrace, c.maxSpans)
	return c, nil
}

// TailSamplingStats counts what a [TailSampler] did with the spans it
// was given. Every span that ended (and was sampled by the head sampler)
// is, at any moment, in exactly one of KeptSpans, DroppedSpans,
// OverflowSpans, AfterShutdownSpans and BufferedSpans.
type TailSamplingStats struct {
	// KeptTraces counts decisions to keep: the trace's buffered spans
	// went downstream. A trace decided in parts (see [TailSampler]) counts
	// once per part.
	KeptTraces int64
	// KeptError, KeptSlow and KeptSampled split KeptTraces by the first
	// rule that kept them: a span with status Error, a root at or over
	// the latency threshold, the probabilistic share.
	KeptError, KeptSlow, KeptSampled int64
	// DroppedTraces counts decisions to drop.
	DroppedTraces int64
	// KeptSpans counts spans passed downstream, including late spans of
	// traces already kept.
	KeptSpans int64
	// DroppedSpans counts spans of dropped traces.
	DroppedSpans int64
	// OverflowSpans counts spans dropped because their trace already held
	// the maximum spans per trace.
	OverflowSpans int64
	// EvictedTraces counts incomplete traces decided early because the
	// trace or span bound was reached (their spans are in KeptSpans or
	// DroppedSpans).
	EvictedTraces int64
	// UnfinishedTraces counts incomplete traces decided at Shutdown.
	UnfinishedTraces int64
	// AfterShutdownSpans counts spans that ended after Shutdown, dropped.
	AfterShutdownSpans int64
	// BufferedTraces and BufferedSpans are what waits for a decision now.
	BufferedTraces, BufferedSpans int64
}

// agentSpanPrefix names the tracing extension's run spans.
const agentSpanPrefix = "invoke_agent"

// TailSampler is a span processor that decides, once a trace is complete,
// whether its spans go on to the processor it wraps. It keeps every trace
// that has a span with status Error, every trace whose root lasted at
// least the latency threshold, and a share of the rest chosen from the
// trace ID alone, so that every process agrees on it.
//
// A trace's ended spans are buffered until its decision point: the end of
// its local root (a span with no parent or a remote parent), or the end
// of an invoke_agent span with no other invoke_agent span of the trace
// still open (the outermost run, whose subagents' runs nest inside it).
// A trace kept once stays kept: later spans of it go straight through.
// Spans of a trace dropped before are buffered anew, so that a second run
// under the same enclosing span gets its own decision; the probabilistic
// share, decided from the trace ID, is the same for every part.
//
// Memory is bounded by the trace, span and per-trace limits. When a new
// trace or span would pass the trace or span bound, the oldest incomplete
// trace (the one buffered first) is decided early on what it has: kept if
// it has an error span, if it started at least the latency threshold ago,
// or if its trace ID falls in the probabilistic share; dropped otherwise.
// It is counted in [TailSamplingStats].EvictedTraces. Spans past the
// per-trace bound are dropped and counted (their status still counts).
//
// Spans the head sampler did not sample pass through untouched.
//
// Its methods are safe for concurrent use and never block on the
// downstream processor while holding the buffer.
type TailSampler struct {
	next sdktrace.SpanProcessor
	cfg  tailConfig
	// threshold is the smallest 56-bit trace randomness kept by the
	// probabilistic rule; 1<<56 keeps none.
	threshold uint64

	shutdownOnce sync.Once
	shutdownErr  error

	// free holds *tailTrace for reuse, spans slice included.
	free sync.Pool

	mu      sync.Mutex
	stopped bool
	traces  map[trace.TraceID]*tailTrace
	oldest  *tailTrace // head of the list in buffering order
	newest  *tailTrace
	nspans  int
	kept    map[trace.TraceID]struct{}
	keptLog []trace.TraceID // ring of kept IDs, oldest forgotten first
	keptPos int
	stats   TailSamplingStats
}

// tailTrace is one buffered trace.
type tailTrace struct {
	id         trace.TraceID
	spans      []sdktrace.ReadOnlySpan
	errored    bool
	openAgents int
	first      time.Time // earliest start seen
	prev, next *tailTrace
}

var _ sdktrace.SpanProcessor = (*TailSampler)(nil)

// NewTailSampler returns a tail sampler in front of next: next receives
// the kept spans' OnEnd (and every span's OnStart). It returns an error
// wrapping [ErrInvalidTailSampling] for an option out of range.
func NewTailSampler(next sdktrace.SpanProcessor, opts ...TailOption) (*TailSampler, error) {
	if next == nil {
		return nil, fmt.Errorf("%w: no downstream span processor", ErrInvalidTailSampling)
	}
	c, err := newTailConfig(opts)
	if err != nil {
		return nil, err
	}
	return &TailSampler{
		next:      next,
		cfg:       c,
		threshold: randomnessThreshold(c.probability),
		traces:    make(map[trace.TraceID]*tailTrace),
		kept:      make(map[trace.TraceID]struct{}),
		keptLog:   make([]trace.TraceID, c.maxTraces),
	}, nil
}

// randomnessThreshold is the OpenTelemetry consistent-probability
// threshold for p: a trace is kept when the 56 low bits of its ID are at
// least (1-p)·2^56, so a trace kept at p is kept at every larger p.
func randomnessThreshold(p float64) uint64 {
	const full = uint64(1) << 56
	if p >= 1 {
		return 0
	}
	if p <= 0 {
		return full
	}
	return full - uint64(math.Round(p*float64(full)))
}

// traceRandomness returns the 56 low bits of id, the trace randomness of
// W3C Trace Context Level 2.
func traceRandomness(id trace.TraceID) uint64 {
	return binary.BigEndian.Uint64(id[8:]) & (1<<56 - 1)
}

// Sampled reports whether id falls in the probabilistic share. It depends
// on id and the keep probability alone.
func (t *TailSampler) Sampled(id trace.TraceID) bool {
	return traceRandomness(id) >= t.threshold
}

// OnStart notes the start of an invoke_agent span, so that a subagent's
// run nested in a run does not end the trace, and passes s to the
// downstream processor. It does not block.
func (t *TailSampler) OnStart(ctx context.Context, s sdktrace.ReadWriteSpan) {
	if s.SpanContext().IsSampled() && strings.HasPrefix(s.Name(), agentSpanPrefix) {
		var out []sdktrace.ReadOnlySpan
		t.mu.Lock()
		if !t.stopped {
			if _, kept := t.kept[s.SpanContext().TraceID()]; !kept {
				tr := t.traces[s.SpanContext().TraceID()]
				if tr == nil {
					tr, out = t.add(s.SpanContext().TraceID(), s.StartTime(), out)
				}
				tr.openAgents++
			}
		}
		t.mu.Unlock()
		t.forward(out)
	}
	t.next.OnStart(ctx, s)
}

// OnEnd buffers s, or decides its trace when s is the trace's decision
// point and passes the kept spans downstream. It does not block on the
// buffer's bounds: it evicts instead.
func (t *TailSampler) OnEnd(s sdktrace.ReadOnlySpan) {
	sc := s.SpanContext()
	if !sc.IsSampled() {
		t.next.OnEnd(s)
		return
	}
	id := sc.TraceID()
	isAgent := strings.HasPrefix(s.Name(), agentSpanPrefix)
	parent := s.Parent()
	decide := !parent.IsValid() || parent.IsRemote()
	errored := s.Status().Code == codes.Error

	var out []sdktrace.ReadOnlySpan
	t.mu.Lock()
	if t.stopped {
		t.stats.AfterShutdownSpans++
		t.mu.Unlock()
		return
	}
	if _, kept := t.kept[id]; kept {
		t.stats.KeptSpans++
		t.mu.Unlock()
		t.next.OnEnd(s)
		return
	}
	tr := t.traces[id]
	if isAgent {
		if tr == nil || tr.openAgents <= 1 {
			decide = true
		}
		if tr != nil {
			tr.openAgents--
		}
	}
	if decide {
		var spans []sdktrace.ReadOnlySpan
		errored = errored || (tr != nil && tr.errored)
		if tr != nil {
			t.remove(tr)
			spans = tr.spans
		}
		keep := t.judge(id, errored, s.EndTime().Sub(s.StartTime()), len(spans)+1)
		t.mu.Unlock()
		if keep {
			t.forward(spans)
			t.next.OnEnd(s)
		}
		if tr != nil {
			t.recycle(tr)
		}
		return
	}
	if tr != nil && len(tr.spans) >= t.cfg.maxPerTrace {
		tr.errored = tr.errored || errored
		t.stats.OverflowSpans++
		t.mu.Unlock()
		return
	}
	for t.nspans >= t.cfg.maxSpans {
		if t.oldest == tr {
			tr = nil
		}
		out = t.evict(out)
	}
	if tr == nil {
		tr, out = t.add(id, s.StartTime(), out)
	}
	tr.spans = append(tr.spans, s)
	tr.errored = tr.errored || errored
	if s.StartTime().Before(tr.first) {
		tr.first = s.StartTime()
	}
	t.nspans++
	t.mu.Unlock()
	t.forward(out)
}

// add buffers a new trace, evicting the oldest when the trace bound is
// reached; the evicted trace's kept spans are appended to out. t.mu is
// held.
func (t *TailSampler) add(id trace.TraceID, start time.Time, out []sdktrace.ReadOnlySpan) (*tailTrace, []sdktrace.ReadOnlySpan) {
	for len(t.traces) >= t.cfg.maxTraces {
		out = t.evict(out)
	}
	tr, _ := t.free.Get().(*tailTrace)
	if tr == nil {
		tr = &tailTrace{spans: make([]sdktrace.ReadOnlySpan, 0, 16)}
	}
	tr.id, tr.first, tr.prev = id, start, t.newest
	if t.newest != nil {
		t.newest.next = tr
	} else {
		t.oldest = tr
	}
	t.newest = tr
	t.traces[id] = tr
	return tr, out
}

// remove unlinks tr from the buffer. t.mu is held.
func (t *TailSampler) remove(tr *tailTrace) {
	delete(t.traces, tr.id)
	if tr.prev != nil {
		tr.prev.next = tr.next
	} else {
		t.oldest = tr.next
	}
	if tr.next != nil {
		tr.next.prev = tr.prev
	} else {
		t.newest = tr.prev
	}
	tr.prev, tr.next = nil, nil
	t.nspans -= len(tr.spans)
}

// evict decides the oldest buffered trace early and appends its spans to
// out when kept. t.mu is held and the buffer is not empty.
func (t *TailSampler) evict(out []sdktrace.ReadOnlySpan) []sdktrace.ReadOnlySpan {
	tr := t.oldest
	t.stats.EvictedTraces++
	return t.decideEarly(tr, out)
}

// decideEarly removes an incomplete trace and judges it on what it has:
// its elapsed time is measured from its first span's start to now.
func (t *TailSampler) decideEarly(tr *tailTrace, out []sdktrace.ReadOnlySpan) []sdktrace.ReadOnlySpan {
	t.remove(tr)
	if t.judge(tr.id, tr.errored, t.cfg.now().Sub(tr.first), len(tr.spans)) {
		out = append(out, tr.spans...)
	}
	t.recycle(tr)
	return out
}

// recycle clears a removed trace (so that it holds no span) and keeps it
// for reuse. Buffers grown past maxRecycled spans are left to the GC.
func (t *TailSampler) recycle(tr *tailTrace) {
	const maxRecycled = 256
	if cap(tr.spans) > maxRecycled {
		return
	}
	clear(tr.spans)
	*tr = tailTrace{spans: tr.spans[:0]}
	t.free.Put(tr)
}

// judge decides a trace (or part of one) of n spans, counts the decision
// and remembers a kept trace. t.mu is held.
func (t *TailSampler) judge(id trace.TraceID, errored bool, latency time.Duration, n int) bool {
	switch {
	case errored:
		t.stats.KeptError++
	case t.cfg.latency > 0 && latency >= t.cfg.latency:
		t.stats.KeptSlow++
	case t.Sampled(id):
		t.stats.KeptSampled++
	default:
		t.stats.DroppedTraces++
		t.stats.DroppedSpans += int64(n)
		return false
	}
	t.stats.KeptTraces++
	t.stats.KeptSpans += int64(n)
	if old := t.keptLog[t.keptPos]; old.IsValid() {
		delete(t.kept, old)
	}
	t.keptLog[t.keptPos] = id
	t.keptPos = (t.keptPos + 1) % len(t.keptLog)
	t.kept[id] = struct{}{}
	return true
}

func (t *TailSampler) forward(spans []sdktrace.ReadOnlySpan) {
	for _, s := range spans {
		t.next.OnEnd(s)
	}
}

// Stats returns the counts so far. It does not block on the downstream
// processor.
func (t *TailSampler) Stats() TailSamplingStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.stats
	s.BufferedTraces = int64(len(t.traces))
	s.BufferedSpans = int64(t.nspans)
	return s
}

// ForceFlush flushes the downstream processor: the spans of traces
// already decided are exported. Traces still incomplete stay buffered —
// deciding them now would judge a running trace before its error or its
// latency is known; Shutdown decides them. It honours ctx as the
// downstream processor does.
func (t *TailSampler) ForceFlush(ctx context.Context) error {
	return t.next.ForceFlush(ctx)
}

// Shutdown decides every buffered, incomplete trace on what it has (as an
// eviction does: an error span, a start at least the latency threshold
// ago, or the probabilistic share keep it; each counts in
// [TailSamplingStats].UnfinishedTraces), passes the kept spans on, and
// shuts the downstream processor down with ctx. Spans that end later are
// dropped and counted. Later calls return the first call's result.
func (t *TailSampler) Shutdown(ctx context.Context) error {
	t.shutdownOnce.Do(func() {
		var out []sdktrace.ReadOnlySpan
		t.mu.Lock()
		t.stopped = true
		for t.oldest != nil {
			t.stats.UnfinishedTraces++
			out = t.decideEarly(t.oldest, out)
		}
		t.mu.Unlock()
		t.forward(out)
		t.shutdownErr = t.next.Shutdown(ctx)
	})
	return t.shutdownErr
}
