package exporters

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
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
//   - span budget: 10000 spans of open traces held at once, at most 1000
//     of one trace;
//   - at most 10000 open traces tracked;
//   - 10000 decided traces remembered.
type tailConfig struct {
	probability    float64
	probabilitySet bool
	latency        time.Duration
	latencySet     bool
	maxTraces      int
	maxPerTrace    int
	maxSpans       int
	maxDecided     int
	now            func() time.Time
}

const (
	defaultTailProbability = 0.1
	defaultTailLatency     = 30 * time.Second
	defaultTailMaxTraces   = 10000
	defaultTailMaxPerTrace = 1000
	defaultTailMaxSpans    = 10000
	defaultTailMaxDecided  = 10000
)

// WithKeepProbability sets the share, in [0, 1], of the traces that have
// no error and are not slow that a [TailSampler] keeps. Default 0.1.
func WithKeepProbability(p float64) TailOption {
	return func(c *tailConfig) { c.probability, c.probabilitySet = p, true }
}

// WithLatencyThreshold keeps every trace whose local root span lasted at
// least d. Zero turns the latency rule off. Default 30s.
func WithLatencyThreshold(d time.Duration) TailOption {
	return func(c *tailConfig) { c.latency, c.latencySet = d, true }
}

// WithMaxSpans sets the span budget: how many spans of open (undecided)
// traces a [TailSampler] holds at once. When a span would pass it, the
// sampler evicts an open trace (see [TailSampler]). Default 10000.
func WithMaxSpans(n int) TailOption { return func(c *tailConfig) { c.maxSpans = n } }

// WithMaxSpansPerTrace bounds the spans held for one open trace; later
// spans of that trace are dropped and counted in
// [TailSamplingStats].OverflowSpans, unless one has status Error, which
// keeps the trace at once. Default 1000, at most the span budget.
func WithMaxSpansPerTrace(n int) TailOption { return func(c *tailConfig) { c.maxPerTrace = n } }

// WithMaxTraces bounds the open traces a [TailSampler] tracks, whether it
// holds spans of them or not. Default 10000.
func WithMaxTraces(n int) TailOption { return func(c *tailConfig) { c.maxTraces = n } }

// WithMaxDecidedTraces sets how many decided traces a [TailSampler]
// remembers, so that spans ending after their trace's decision follow it.
// Default 10000.
func WithMaxDecidedTraces(n int) TailOption { return func(c *tailConfig) { c.maxDecided = n } }

func newTailConfig(opts []TailOption) (tailConfig, error) {
	c := tailConfig{
		probability: defaultTailProbability,
		latency:     defaultTailLatency,
		maxTraces:   defaultTailMaxTraces,
		maxPerTrace: defaultTailMaxPerTrace,
		maxSpans:    defaultTailMaxSpans,
		maxDecided:  defaultTailMaxDecided,
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
	if c.maxDecided <= 0 {
		errs = append(errs, fmt.Errorf("%w: max decided traces %d is not positive", ErrInvalidTailSampling, c.maxDecided))
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
// OverflowSpans, EvictedSpans, AfterShutdownSpans and BufferedSpans.
type TailSamplingStats struct {
	// KeptTraces counts decisions to keep: the trace's held spans went
	// downstream, and its later spans follow them. A trace decided again
	// after a drop (a new part of it began, see [TailSampler]) counts
	// once per decision.
	KeptTraces int64
	// KeptError, KeptSlow and KeptSampled split KeptTraces by the rule
	// that kept them: a span with status Error, a local root at or over
	// the latency threshold (or an open trace already that old), the
	// probabilistic share. An error keeps a trace the moment its span
	// ends, so a trace kept by the share or by latency that errs later is
	// not counted again.
	KeptError, KeptSlow, KeptSampled int64
	// PartialTraces counts the kept traces that miss spans the sampler
	// dropped before it kept them: spans of an eviction (EvictedSpans),
	// spans past the per-trace bound (OverflowSpans), or an earlier part
	// of the trace that was dropped. Every other kept trace went
	// downstream whole.
	PartialTraces int64
	// DroppedTraces counts decisions to drop.
	DroppedTraces int64
	// KeptSpans counts spans passed downstream, including late spans of
	// traces already kept.
	KeptSpans int64
	// DroppedSpans counts spans of dropped traces, late ones included.
	DroppedSpans int64
	// OverflowSpans counts spans dropped because their open trace already
	// held the maximum spans per trace.
	OverflowSpans int64
	// EvictedTraces counts evictions: an open trace whose held spans were
	// given up because the span budget or the trace bound was reached.
	// A trace whose decision was already known (in the probabilistic
	// share, or open for at least the latency threshold) was kept then;
	// the others' spans were dropped and are in EvictedSpans.
	EvictedTraces int64
	// EvictedSpans counts the spans of open traces dropped by evictions.
	EvictedSpans int64
	// UnfinishedTraces counts the traces still open at Shutdown.
	UnfinishedTraces int64
	// AfterShutdownSpans counts spans that ended after Shutdown, dropped.
	AfterShutdownSpans int64
	// BufferedTraces and BufferedSpans are the open traces not decided yet
	// and the spans held for them now.
	BufferedTraces, BufferedSpans int64
}

// TailSampler is a span processor that decides, once a trace is complete,
// whether its spans go on to the processor it wraps. It keeps every trace
// that has a span with status Error, every trace whose root lasted at
// least the latency threshold, and a share of the rest chosen from the
// trace ID alone, so that every process agrees on it.
//
// An errored trace is kept whole, whichever span carries the error. The
// sampler holds the ended spans of each open trace; the moment a span with
// status Error ends, the trace is kept: the spans held go downstream with
// it, and the trace's later spans follow as they end. A trace is open
// until its local root ends: the first span of the trace started through
// this sampler, which is a span with no parent, a span whose parent is
// remote, or a span whose parent another TracerProvider started (an HTTP
// server span of the application's own provider, say). Then it is
// decided: kept if its root lasted at least the latency threshold or its
// trace ID falls in the probabilistic share, dropped otherwise. Spans that
// end after the decision follow it, as long as the sampler remembers it
// ([WithMaxDecidedTraces]): the spans of a kept trace go downstream, those
// of a dropped trace are dropped, unless one has status Error, which keeps
// it and what follows (a partial keep). A span started for a dropped
// trace after its decision (a run resumed under the same trace, a second
// request under a foreign parent) begins a new part with its own
// decision; kept, it counts as a partial keep.
//
// Memory is bounded by the span budget ([WithMaxSpans]): the spans held
// for open traces. When a span would pass it, the sampler evicts the
// oldest open trace holding spans, preferring one evicted before, whose
// completeness is already lost. An evicted trace whose decision is known
// already — its trace ID is in the probabilistic share, or it has been
// open for at least the latency threshold — is kept then, whole. Any other
// has its held spans dropped and counted ([TailSamplingStats].EvictedSpans)
// and goes on: if an error or its latency keeps it later, it goes
// downstream partial and counts in PartialTraces. The open traces tracked
// are bounded too ([WithMaxTraces]), and so are the spans held for one
// trace ([WithMaxSpansPerTrace]).
//
// Kept spans are ranked for the provider's backends: a trace kept only by
// the probabilistic share is shed first when a backend's queue is full,
// before any span of an errored or slow trace is dropped. A downstream
// processor other than the provider's backends gets every kept span
// through OnEnd.
//
// Spans the head sampler did not sample pass through untouched.
//
// Its methods are safe for concurrent use and never call the downstream
// processor while holding the sampler's lock.
type TailSampler struct {
	next   sdktrace.SpanProcessor
	ranked rankedProcessor // next, when it takes ranks
	cfg    tailConfig
	// threshold is the smallest 56-bit trace randomness kept by the
	// probabilistic rule; 1<<56 keeps none.
	threshold uint64

	shutdownOnce sync.Once
	shutdownErr  error

	// free holds *tailTrace for reuse, spans slice included.
	free sync.Pool

	mu      sync.Mutex
	stopped bool
	traces  map[trace.TraceID]*tailTrace // open traces
	holding traceList                    // undecided open traces holding spans; evicted from the front
	idle    traceList                    // the other open traces; forgotten from the front
	nspans  int                          // spans held
	nopen   int                          // open traces not decided yet
	decided map[trace.TraceID]verdict
	decLog  []trace.TraceID // ring of decided IDs, oldest forgotten first
	decPos  int
	stats   TailSamplingStats
}

// verdict is a trace's decision.
type verdict uint8

const (
	undecided   verdict = iota
	dropped             // decided: its spans are dropped
	keptMust            // kept for an error or its latency
	keptSampled         // kept by the probabilistic share only: shed first downstream
)

// tailTrace is one open trace.
type tailTrace struct {
	id      trace.TraceID
	root    trace.SpanID // the first span started here; zero when unknown
	verdict verdict      // undecided, keptMust or keptSampled
	partial bool         // spans of it were dropped before a keep
	first   time.Time    // earliest start seen
	spans   []sdktrace.ReadOnlySpan
	list    *traceList
	prev    *tailTrace
	next    *tailTrace
}

// traceList is an intrusive doubly linked list of open traces.
type traceList struct{ front, back *tailTrace }

func (l *traceList) pushBack(tr *tailTrace) {
	tr.list, tr.prev, tr.next = l, l.back, nil
	if l.back != nil {
		l.back.next = tr
	} else {
		l.front = tr
	}
	l.back = tr
}

func (l *traceList) pushFront(tr *tailTrace) {
	tr.list, tr.prev, tr.next = l, nil, l.front
	if l.front != nil {
		l.front.prev = tr
	} else {
		l.back = tr
	}
	l.front = tr
}

func (l *traceList) remove(tr *tailTrace) {
	if tr.prev != nil {
		tr.prev.next = tr.next
	} else {
		l.front = tr.next
	}
	if tr.next != nil {
		tr.next.prev = tr.prev
	} else {
		l.back = tr.prev
	}
	tr.list, tr.prev, tr.next = nil, nil, nil
}

// outbox collects spans to pass downstream once the lock is released.
type outbox struct{ must, sampled []sdktrace.ReadOnlySpan }

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
	t := &TailSampler{
		next:      next,
		cfg:       c,
		threshold: randomnessThreshold(c.probability),
		traces:    make(map[trace.TraceID]*tailTrace),
		decided:   make(map[trace.TraceID]verdict),
		decLog:    make([]trace.TraceID, c.maxDecided),
	}
	t.ranked, _ = next.(rankedProcessor)
	return t, nil
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

// OnStart opens a trace at its first span started here, its local root,
// unless the trace is kept already, and passes s to the downstream
// processor. It does not block.
func (t *TailSampler) OnStart(ctx context.Context, s sdktrace.ReadWriteSpan) {
	if sc := s.SpanContext(); sc.IsSampled() {
		var out outbox
		t.mu.Lock()
		if !t.stopped && t.traces[sc.TraceID()] == nil {
			switch v := t.decided[sc.TraceID()]; v {
			case undecided, dropped:
				t.open(sc.TraceID(), sc.SpanID(), s.StartTime(), v == dropped, &out)
			}
		}
		t.mu.Unlock()
		t.send(&out)
	}
	t.next.OnStart(ctx, s)
}

// OnEnd holds s, keeps its trace when s has status Error, or decides its
// trace when s is its local root, and passes the kept spans downstream.
// It does not block on the bounds: it evicts instead.
func (t *TailSampler) OnEnd(s sdktrace.ReadOnlySpan) {
	sc := s.SpanContext()
	if !sc.IsSampled() {
		t.next.OnEnd(s)
		return
	}
	id := sc.TraceID()
	errored := s.Status().Code == codes.Error

	var out outbox
	t.mu.Lock()
	if t.stopped {
		t.stats.AfterShutdownSpans++
		t.mu.Unlock()
		return
	}
	tr := t.traces[id]
	if tr == nil {
		switch v := t.decided[id]; v {
		case keptMust, keptSampled:
			if errored && v == keptSampled {
				t.decided[id] = keptMust
				v = keptMust
			}
			t.stats.KeptSpans++
			t.mu.Unlock()
			t.pass(s, v == keptSampled)
			return
		case dropped:
			if !errored {
				t.stats.DroppedSpans++
				t.mu.Unlock()
				return
			}
			// A late error in a dropped trace: keep what is left of it.
			t.decided[id] = keptMust
			t.stats.KeptTraces++
			t.stats.KeptError++
			t.stats.PartialTraces++
			t.stats.KeptSpans++
			t.mu.Unlock()
			t.pass(s, false)
			return
		}
		// A trace not seen starting here (its spans began before this
		// sampler saw them): its root is known by its parent only.
		tr = t.open(id, trace.SpanID{}, s.StartTime(), false, &out)
	}
	parent := s.Parent()
	isRoot := !parent.IsValid() || parent.IsRemote() || (tr.root.IsValid() && sc.SpanID() == tr.root)

	if tr.verdict == undecided && errored {
		t.keep(tr, keptMust, &t.stats.KeptError, &out)
	}
	if tr.verdict == undecided && isRoot {
		t.closeUndecided(tr, s)
		return // closeUndecided unlocks
	}
	if tr.verdict == undecided {
		t.hold(tr, s, &out)
		if tr.verdict == undecided {
			t.mu.Unlock()
			t.send(&out)
			return
		}
		// An eviction kept it: s passes on below.
	}
	// Kept and open.
	if errored && tr.verdict == keptSampled {
		tr.verdict = keptMust
	}
	sampled := tr.verdict == keptSampled
	t.stats.KeptSpans++
	if isRoot {
		t.record(id, tr.verdict)
		t.forget(tr)
	}
	t.mu.Unlock()
	t.send(&out)
	t.pass(s, sampled)
	if isRoot {
		t.recycle(tr)
	}
}

// closeUndecided decides an undecided trace when its local root s ends,
// passes the kept spans on and forgets it. t.mu is held; it unlocks it.
func (t *TailSampler) closeUndecided(tr *tailTrace, s sdktrace.ReadOnlySpan) {
	n := int64(len(tr.spans)) + 1
	v := dropped
	switch {
	case t.cfg.latency > 0 && s.EndTime().Sub(s.StartTime()) >= t.cfg.latency:
		v = keptMust
		t.stats.KeptSlow++
	case t.Sampled(tr.id):
		v = keptSampled
		t.stats.KeptSampled++
	}
	if v == dropped {
		t.stats.DroppedTraces++
		t.stats.DroppedSpans += n
	} else {
		t.stats.KeptTraces++
		t.stats.KeptSpans += n
		if tr.partial {
			t.stats.PartialTraces++
		}
	}
	t.record(tr.id, v)
	spans := tr.spans
	t.forget(tr)
	t.mu.Unlock()
	if v != dropped {
		sampled := v == keptSampled
		for _, h := range spans {
			t.pass(h, sampled)
		}
		t.pass(s, sampled)
	}
	t.recycle(tr)
}

// hold adds s to the spans held for the undecided trace tr, within the
// per-trace bound and the span budget, evicting as needed; an eviction
// may keep tr itself, and then s is not held. t.mu is held.
func (t *TailSampler) hold(tr *tailTrace, s sdktrace.ReadOnlySpan, out *outbox) {
	if len(tr.spans) >= t.cfg.maxPerTrace {
		t.stats.OverflowSpans++
		tr.partial = true
		return
	}
	for t.nspans >= t.cfg.maxSpans {
		t.evict(t.holding.front, out)
	}
	if tr.verdict != undecided {
		return
	}
	if len(tr.spans) == 0 {
		// It joins the holding list: at the front when it is partial
		// already, so that evictions take it before whole traces.
		t.idle.remove(tr)
		if tr.partial {
			t.holding.pushFront(tr)
		} else {
			t.holding.pushBack(tr)
		}
	}
	tr.spans = append(tr.spans, s)
	if s.StartTime().Before(tr.first) {
		tr.first = s.StartTime()
	}
	t.nspans++
}

// open tracks a new open trace, within the trace bound. t.mu is held.
func (t *TailSampler) open(id trace.TraceID, root trace.SpanID, start time.Time, partial bool, out *outbox) *tailTrace {
	for len(t.traces) >= t.cfg.maxTraces {
		t.shrink(out)
	}
	tr, _ := t.free.Get().(*tailTrace)
	if tr == nil {
		tr = &tailTrace{spans: make([]sdktrace.ReadOnlySpan, 0, 16)}
	}
	tr.id, tr.root, tr.first, tr.partial = id, root, start, partial
	t.nopen++
	t.idle.pushBack(tr)
	t.traces[id] = tr
	return tr
}

// shrink stops tracking one open trace, for the trace bound: the oldest
// that holds no span, else the oldest holding spans after an eviction.
// Its decision is remembered: kept, or dropped when it lost spans (so
// that a late error counts as a partial keep). t.mu is held.
func (t *TailSampler) shrink(out *outbox) {
	tr := t.idle.front
	if tr == nil {
		tr = t.holding.front
		t.evict(tr, out)
	}
	switch {
	case tr.verdict != undecided:
		t.record(tr.id, tr.verdict)
	case tr.partial:
		t.record(tr.id, dropped)
	}
	t.forget(tr)
	t.recycle(tr)
}

// evict gives up the spans held for the undecided trace tr: it keeps
// them when the trace's decision is known already (in the share, or open
// for at least the latency threshold), and drops them otherwise, marking
// the trace partial. Either way tr moves to the idle list. t.mu is held.
func (t *TailSampler) evict(tr *tailTrace, out *outbox) {
	t.stats.EvictedTraces++
	if t.keepEarly(tr, out) {
		return
	}
	n := len(tr.spans)
	t.stats.EvictedSpans += int64(n)
	t.nspans -= n
	clear(tr.spans)
	tr.spans = tr.spans[:0]
	tr.partial = true
	t.holding.remove(tr)
	t.idle.pushBack(tr)
}

// keepEarly keeps the undecided open trace tr if its decision is known
// before its root ends: it has been open for at least the latency
// threshold, or its ID is in the probabilistic share. t.mu is held.
func (t *TailSampler) keepEarly(tr *tailTrace, out *outbox) bool {
	switch {
	case t.cfg.latency > 0 && t.cfg.now().Sub(tr.first) >= t.cfg.latency:
		t.keep(tr, keptMust, &t.stats.KeptSlow, out)
	case t.Sampled(tr.id):
		t.keep(tr, keptSampled, &t.stats.KeptSampled, out)
	default:
		return false
	}
	return true
}

// keep decides the open trace tr kept with v, counting it in why, and
// moves its held spans to out. t.mu is held.
func (t *TailSampler) keep(tr *tailTrace, v verdict, why *int64, out *outbox) {
	*why++
	t.stats.KeptTraces++
	if tr.partial {
		t.stats.PartialTraces++
	}
	n := len(tr.spans)
	t.stats.KeptSpans += int64(n)
	t.nspans -= n
	if v == keptSampled {
		out.sampled = append(out.sampled, tr.spans...)
	} else {
		out.must = append(out.must, tr.spans...)
	}
	clear(tr.spans)
	tr.spans = tr.spans[:0]
	tr.verdict = v
	t.nopen--
	if tr.list == &t.holding {
		t.holding.remove(tr)
		t.idle.pushBack(tr)
	}
}

// forget stops tracking tr, and releases its held spans from the budget
// (its caller passes or drops them). t.mu is held.
func (t *TailSampler) forget(tr *tailTrace) {
	delete(t.traces, tr.id)
	tr.list.remove(tr)
	t.nspans -= len(tr.spans)
	if tr.verdict == undecided {
		t.nopen--
	}
}

// record remembers id's decision, forgetting the oldest beyond the
// bound. t.mu is held.
func (t *TailSampler) record(id trace.TraceID, v verdict) {
	if _, ok := t.decided[id]; ok {
		t.decided[id] = v
		return
	}
	if old := t.decLog[t.decPos]; old.IsValid() {
		delete(t.decided, old)
	}
	t.decLog[t.decPos] = id
	t.decPos = (t.decPos + 1) % len(t.decLog)
	t.decided[id] = v
}

// recycle clears a forgotten trace (so that it holds no span) and keeps
// it for reuse. Buffers grown past maxRecycled spans are left to the GC.
func (t *TailSampler) recycle(tr *tailTrace) {
	const maxRecycled = 256
	if cap(tr.spans) > maxRecycled {
		return
	}
	clear(tr.spans)
	*tr = tailTrace{spans: tr.spans[:0]}
	t.free.Put(tr)
}

// pass hands one kept span downstream with its rank.
func (t *TailSampler) pass(s sdktrace.ReadOnlySpan, sampled bool) {
	if t.ranked != nil {
		t.ranked.onEndRanked(s, sampled)
		return
	}
	t.next.OnEnd(s)
}

// send hands out's spans downstream. t.mu is not held.
func (t *TailSampler) send(out *outbox) {
	for _, s := range out.must {
		t.pass(s, false)
	}
	for _, s := range out.sampled {
		t.pass(s, true)
	}
}

// Stats returns the counts so far. It does not block on the downstream
// processor.
func (t *TailSampler) Stats() TailSamplingStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.stats
	s.BufferedTraces = int64(t.nopen)
	s.BufferedSpans = int64(t.nspans)
	return s
}

// ForceFlush passes on the held spans whose decision is known already —
// those of open traces in the probabilistic share, or open for at least
// the latency threshold, which are kept now — and flushes the downstream
// processor, so that every kept span is exported. (An errored trace's
// spans went on when its error ended.) Other open traces stay held:
// deciding them now would judge a running trace before its error or its
// latency is known; Shutdown decides them. It honours ctx as the
// downstream processor does.
func (t *TailSampler) ForceFlush(ctx context.Context) error {
	var out outbox
	t.mu.Lock()
	for tr := t.holding.front; tr != nil; {
		next := tr.next
		t.keepEarly(tr, &out)
		tr = next
	}
	t.mu.Unlock()
	t.send(&out)
	return t.next.ForceFlush(ctx)
}

// Shutdown decides every open trace not decided yet on what it has (as
// an eviction does: open for at least the latency threshold, or in the
// probabilistic share, it is kept; otherwise dropped — an errored trace
// was kept when its error ended), counts every open trace in
// [TailSamplingStats].UnfinishedTraces, passes the kept spans on, and
// shuts the downstream processor down with ctx. Spans that end later are
// dropped and counted. Later calls return the first call's result.
func (t *TailSampler) Shutdown(ctx context.Context) error {
	t.shutdownOnce.Do(func() {
		var out outbox
		t.mu.Lock()
		t.stopped = true
		for _, l := range []*traceList{&t.holding, &t.idle} {
			for l.front != nil {
				tr := l.front
				t.stats.UnfinishedTraces++
				if tr.verdict == undecided && !t.keepEarly(tr, &out) {
					t.stats.DroppedTraces++
					t.stats.DroppedSpans += int64(len(tr.spans))
				}
				t.forget(tr)
				t.recycle(tr)
			}
		}
		t.mu.Unlock()
		t.send(&out)
		t.shutdownErr = t.next.Shutdown(ctx)
	})
	return t.shutdownErr
}
