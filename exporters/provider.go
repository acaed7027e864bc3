package exporters

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkresource "go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
)

// Provider is a TracerProvider that sends spans to one or more backends.
// Pass it to the tracing extension (tracing.WithTracerProvider); it never
// becomes the global provider unless you make it so.
//
// Each backend has a bounded queue drained by a background exporter, so
// ending a span never waits for the network: when a backend is down or
// slow its spans are dropped or fail, are counted (see [Provider.Stats]),
// and the first loss of each backend is logged once through log/slog.
//
// Its methods are safe for concurrent use.
type Provider struct {
	embedded.TracerProvider

	tp       *sdktrace.TracerProvider
	backends []*backend
	tail     *TailSampler // nil without tail sampling
	logger   *slog.Logger

	shutdownOnce sync.Once
	shutdownErr  error
}

var _ trace.TracerProvider = (*Provider)(nil)

// Backend describes one destination of a [Provider].
type Backend struct {
	// Name is "otlp", "langsmith", "file" or "stdout".
	Name string
	// Target is where spans go: a URL, a file path, or "stdout".
	Target string
}

// Stats counts what happened to the spans of a [Provider]'s backends.
// Queued spans are neither exported nor lost yet.
type Stats struct {
	// Exported counts spans the backends accepted.
	Exported int64
	// Failed counts spans in exports that failed (backend down, refused,
	// timed out).
	Failed int64
	// Dropped counts spans dropped before export because a queue was full
	// or the provider was shut down.
	Dropped int64
	// Shed counts the part of Dropped that the queues shed first: spans
	// of traces the tail sampler kept only by its probabilistic share,
	// dropped to make room for an errored or slow trace's span or refused
	// by a full queue. Dropped - Shed spans of errored or slow traces (or,
	// without tail sampling, any spans) were lost.
	Shed int64
	// Backends holds the counts of each backend, in order.
	Backends []BackendStats
	// TailSampling holds the tail sampler's counts; zero without tail
	// sampling ([WithTailSampling]). Spans it drops by decision are not
	// lost: they are not in Dropped.
	TailSampling TailSamplingStats
}

// Lost returns Failed + Dropped.
func (s Stats) Lost() int64 { return s.Failed + s.Dropped }

// BackendStats counts the spans of one backend.
type BackendStats struct {
	Backend
	Exported int64
	Failed   int64
	Dropped  int64
	// Shed is the part of Dropped shed first from a full queue (see
	// [Stats].Shed).
	Shed int64
	// Queued counts spans waiting for export or in the export in flight.
	Queued int64
	// LastError is the last export error; nil when there was none.
	LastError error
}

// backendSpec is a backend to build: its exporter and where it sends.
type backendSpec struct {
	Backend
	exporter sdktrace.SpanExporter
}

// newProvider builds a provider over the given backends. On error it shuts
// the exporters down.
func newProvider(ctx context.Context, c *config, specs []backendSpec) (*Provider, error) {
	res, err := buildResource(ctx, c)
	if err != nil {
		for _, s := range specs {
			_ = s.exporter.Shutdown(ctx)
		}
		return nil, err
	}
	tailOpts, tailOn, err := tailSettings(c)
	if err == nil && tailOn {
		_, err = newTailConfig(tailOpts)
	}
	if err != nil {
		for _, s := range specs {
			_ = s.exporter.Shutdown(ctx)
		}
		return nil, err
	}
	p := &Provider{logger: c.logger}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	var down fanout
	for _, s := range specs {
		b := newBackend(s, c)
		p.backends = append(p.backends, b)
		down = append(down, b)
	}
	switch {
	case tailOn && len(down) > 0:
		var next sdktrace.SpanProcessor = down
		if len(down) == 1 {
			next = down[0]
		}
		// Validated above, so it cannot fail.
		p.tail, _ = NewTailSampler(next, tailOpts...)
		opts = append(opts, sdktrace.WithSpanProcessor(p.tail))
	default:
		for _, b := range down {
			opts = append(opts, sdktrace.WithSpanProcessor(b))
		}
	}
	for _, sp := range c.processors {
		opts = append(opts, sdktrace.WithSpanProcessor(sp))
	}
	switch {
	case !c.idGenSet:
		opts = append(opts, sdktrace.WithIDGenerator(RunTraceIDs()))
	case c.idGen != nil:
		opts = append(opts, sdktrace.WithIDGenerator(c.idGen))
	}
	opts = append(opts, c.tpOptions...)
	p.tp = sdktrace.NewTracerProvider(opts...)
	return p, nil
}

func buildResource(ctx context.Context, c *config) (*sdkresource.Resource, error) {
	if c.resource != nil {
		return c.resource, nil
	}
	name := c.serviceName
	if name == "" {
		name = os.Getenv("OTEL_SERVICE_NAME")
	}
	if name == "" {
		name = defaultServiceName
	}
	// Later options win: OTEL_RESOURCE_ATTRIBUTES may add attributes, but
	// the service name chosen above stays.
	r, err := sdkresource.New(ctx,
		sdkresource.WithTelemetrySDK(),
		sdkresource.WithFromEnv(),
		sdkresource.WithAttributes(attribute.String("service.name", name)),
	)
	if err != nil && r != nil {
		// A malformed OTEL_RESOURCE_ATTRIBUTES must not cost the traces.
		c.logger.Warn("exporters: resource partly detected", "error", err)
		err = nil
	}
	return r, err
}

// Tracer returns a tracer of the underlying SDK provider.
func (p *Provider) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return p.tp.Tracer(name, opts...)
}

// SDK returns the underlying SDK provider, for registering more
// processors. Shut down the [Provider], not it, so that losses are counted.
func (p *Provider) SDK() *sdktrace.TracerProvider { return p.tp }

// RegisterSpanProcessor adds sp to the underlying SDK provider, as
// sdktrace.TracerProvider.RegisterSpanProcessor does: the flight
// recorder's span processor, for instance. It is safe for concurrent use.
func (p *Provider) RegisterSpanProcessor(sp sdktrace.SpanProcessor) { p.tp.RegisterSpanProcessor(sp) }

// UnregisterSpanProcessor removes sp from the underlying SDK provider.
func (p *Provider) UnregisterSpanProcessor(sp sdktrace.SpanProcessor) {
	p.tp.UnregisterSpanProcessor(sp)
}

// SendsToLangSmith reports whether one of the provider's backends is
// LangSmith. The tracing extension reads it (tracing.LangSmithReporter)
// to set LangSmith's mirror attributes only on spans that go there.
func (p *Provider) SendsToLangSmith() bool {
	for _, b := range p.backends {
		if b.Name == "langsmith" {
			return true
		}
	}
	return false
}

// Backends lists the provider's backends, in order.
func (p *Provider) Backends() []Backend {
	out := make([]Backend, len(p.backends))
	for i, b := range p.backends {
		out[i] = b.Backend
	}
	return out
}

// Stats returns the span counts so far. It does not block.
func (p *Provider) Stats() Stats {
	var s Stats
	for _, b := range p.backends {
		bs := b.stats()
		s.Exported += bs.Exported
		s.Failed += bs.Failed
		s.Dropped += bs.Dropped
		s.Shed += bs.Shed
		s.Backends = append(s.Backends, bs)
	}
	if p.tail != nil {
		s.TailSampling = p.tail.Stats()
	}
	return s
}

// ForceFlush exports every ended span now and waits for the exports, or
// until ctx is done. Besides ctx's error, it returns a [*LossError] for each
// backend that lost spans since the last ForceFlush or Shutdown reported
// it; such an error wraps [ErrSpansLost].
func (p *Provider) ForceFlush(ctx context.Context) error {
	err := p.tp.ForceFlush(ctx)
	return errors.Join(err, p.newLosses())
}

// Shutdown flushes every backend, stops the exporters and releases their
// resources (the file backend closes its file). It waits for the exports
// or until ctx is done; spans still queued then count as dropped. When ctx
// is done first, Shutdown returns at once and nothing keeps running after
// it: the export in flight is cancelled, its retries stop, the batches
// still queued are not sent, and the exporters' goroutines exit. Like
// ForceFlush, it reports unreported losses as [*LossError]s. It is safe to
// call more than once: later calls return the first call's result. After
// Shutdown the SDK discards new spans.
func (p *Provider) Shutdown(ctx context.Context) error {
	p.shutdownOnce.Do(func() {
		err := p.tp.Shutdown(ctx)
		if p.tail != nil {
			// As for the backends below: the SDK may have skipped it.
			_ = p.tail.Shutdown(ctx)
		}
		for _, b := range p.backends {
			// The SDK skips the processors left when ctx ends during
			// another's shutdown; each backend must still stop, or its
			// export goroutine would live on.
			_ = b.Shutdown(ctx)
			b.abandon()
		}
		p.shutdownErr = errors.Join(err, p.newLosses())
	})
	return p.shutdownErr
}

// newLosses returns a LossError per backend with losses not yet reported
// to a caller, and marks them reported.
func (p *Provider) newLosses() error {
	var errs []error
	for _, b := range p.backends {
		if e := b.takeLoss(); e != nil {
			errs = append(errs, e)
		}
	}
	return errors.Join(errs...)
}

// backend is one destination: a bounded queue of ended spans and a
// goroutine that exports them in batches through the wrapped exporter,
// counting every result.
//
// The queue holds two classes of spans. Spans of traces the tail sampler
// kept only by its probabilistic share are "sampled"; every other span
// (an errored or slow trace's, or any span without tail sampling) is
// "must". Admission is bounded by inflight: spans queued or in the export
// in flight, never more than max. A must span that finds the queue full
// takes the place of the newest sampled span queued, which is shed; a
// sampled span that finds it full is shed itself. So a must span is
// dropped only when the queue holds no sampled span, and batches take
// must spans first. Every loss is counted here.
//
// Every export runs under halted: Shutdown cancels it when it returns, so
// an export (its retries included) never outlives Shutdown, and the loop
// sends nothing after that.
type backend struct {
	Backend
	inner         sdktrace.SpanExporter
	max           int
	batchSize     int
	batchTimeout  time.Duration
	exportTimeout time.Duration
	logger        *slog.Logger

	halted context.Context
	halt   context.CancelCauseFunc

	kick     chan struct{}      // a full batch is queued (capacity 1)
	flushes  chan chan struct{} // ForceFlush requests, closed when done
	stopping chan struct{}      // closed by Shutdown
	exited   chan struct{}      // closed when the export loop returns

	shutdownOnce sync.Once
	shutdownErr  error

	// mu guards the queue, and orders the accounting of export results
	// against abandon, so a span is counted once, as exported, failed or
	// dropped.
	mu       sync.Mutex
	must     spanDeque
	sampled  spanDeque
	inflight int  // queued or in the export in flight
	stopped  bool // no more admissions
	gone     bool // abandoned: late export results are not counted

	exported atomic.Int64
	failed   atomic.Int64
	dropped  atomic.Int64
	shed     atomic.Int64
	reported atomic.Int64 // losses already returned in a LossError
	lastErr  atomic.Pointer[errorBox]
	warnOnce sync.Once
}

type errorBox struct{ err error }

// errHalted is the cause of the cancellation of an export that Shutdown
// cut short.
var errHalted = errors.New("exporters: provider shut down")

func newBackend(s backendSpec, c *config) *backend {
	b := &backend{
		Backend:       s.Backend,
		inner:         s.exporter,
		max:           c.queueSize,
		batchSize:     c.batchSize,
		batchTimeout:  c.batchTimeout,
		exportTimeout: c.exportTimeout,
		logger:        c.logger,
		kick:          make(chan struct{}, 1),
		flushes:       make(chan chan struct{}),
		stopping:      make(chan struct{}),
		exited:        make(chan struct{}),
	}
	b.halted, b.halt = context.WithCancelCause(context.Background())
	go b.run()
	return b
}

var (
	_ sdktrace.SpanProcessor = (*backend)(nil)
	_ rankedProcessor        = (*backend)(nil)
)

// OnStart does nothing.
func (b *backend) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd queues s as a must span, or drops it; it never blocks.
func (b *backend) OnEnd(s sdktrace.ReadOnlySpan) { b.onEndRanked(s, false) }

// onEndRanked queues s in its class, shedding a sampled span for a must
// one when the queue is full, or drops it; it never blocks.
func (b *backend) onEndRanked(s sdktrace.ReadOnlySpan, sampled bool) {
	if !s.SpanContext().IsSampled() {
		return
	}
	b.mu.Lock()
	switch {
	case b.stopped:
		b.mu.Unlock()
		b.drop(1, "provider shut down")
		return
	case b.inflight >= b.max && (sampled || b.sampled.len() == 0):
		b.mu.Unlock()
		if sampled {
			b.shed.Add(1)
		}
		b.drop(1, "queue full")
		return
	case b.inflight >= b.max:
		// Make room: the newest sampled span goes.
		b.sampled.popBack()
		b.inflight--
		b.shed.Add(1)
		b.dropped.Add(1)
		defer b.warn("queue full", nil)
	}
	if sampled {
		b.sampled.pushBack(s)
	} else {
		b.must.pushBack(s)
	}
	b.inflight++
	full := b.must.len()+b.sampled.len() >= b.batchSize
	b.mu.Unlock()
	if full {
		select {
		case b.kick <- struct{}{}:
		default:
		}
	}
}

// run is the export loop: it sends full batches as soon as they are
// queued, and whatever is queued when the batch timeout passes, at a
// ForceFlush and at Shutdown.
func (b *backend) run() {
	defer close(b.exited)
	timer := time.NewTimer(b.batchTimeout)
	defer timer.Stop()
	var batch []sdktrace.ReadOnlySpan
	for {
		var flushed chan struct{}
		all := true
		select {
		case <-b.kick:
			all = false
		case <-timer.C:
		case flushed = <-b.flushes:
		case <-b.stopping:
			b.send(batch, true)
			return
		}
		batch = b.send(batch, all)
		if flushed != nil {
			close(flushed)
		}
		timer.Reset(b.batchTimeout)
	}
}

// send exports queued spans in batches, must spans first: while a full
// batch is queued, or with all every span queued, and no more spans than
// were queued when it was called, so that the loop soon serves a
// ForceFlush or Shutdown again. It stops when the backend halts. It
// returns batch's buffer for reuse.
func (b *backend) send(batch []sdktrace.ReadOnlySpan, all bool) []sdktrace.ReadOnlySpan {
	b.mu.Lock()
	left := b.must.len() + b.sampled.len()
	b.mu.Unlock()
	for left > 0 && b.halted.Err() == nil {
		b.mu.Lock()
		n := b.must.len() + b.sampled.len()
		if n == 0 || (!all && n < b.batchSize) {
			b.mu.Unlock()
			break
		}
		batch = batch[:0]
		for len(batch) < b.batchSize && b.must.len() > 0 {
			batch = append(batch, b.must.popFront())
		}
		for len(batch) < b.batchSize && b.sampled.len() > 0 {
			batch = append(batch, b.sampled.popFront())
		}
		b.mu.Unlock()
		left -= len(batch)
		b.export(batch)
		clear(batch)
	}
	return batch
}

// export sends one batch and counts the result. An export that starts
// after the backend halted is not sent: its spans are still in flight,
// and abandon counts them as dropped.
func (b *backend) export(batch []sdktrace.ReadOnlySpan) {
	ctx, cancel := context.WithTimeout(b.halted, b.exportTimeout)
	err := b.inner.ExportSpans(ctx, batch)
	cancel()

	n := len(batch)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.gone {
		return
	}
	b.inflight -= n
	if err != nil {
		b.failed.Add(int64(n))
		b.lastErr.Store(&errorBox{err})
		b.warn("export failed", err)
		return
	}
	b.exported.Add(int64(n))
}

// ForceFlush exports every span queued and waits for it, or until ctx is
// done. After Shutdown it does nothing.
func (b *backend) ForceFlush(ctx context.Context) error {
	done := make(chan struct{})
	select {
	case b.flushes <- done:
	case <-b.exited:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-b.exited:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Shutdown stops admission, exports what is queued and shuts the exporter
// down. It waits for that or until ctx is done, then cancels whatever
// export is still running, so that nothing sends after it returns. Later
// calls return the first call's result.
func (b *backend) Shutdown(ctx context.Context) error {
	b.shutdownOnce.Do(func() {
		b.mu.Lock()
		b.stopped = true
		b.mu.Unlock()
		close(b.stopping)
		finished := make(chan error, 1)
		go func() {
			<-b.exited
			finished <- b.inner.Shutdown(ctx)
		}()
		select {
		case b.shutdownErr = <-finished:
		case <-ctx.Done():
			b.shutdownErr = ctx.Err()
		}
		b.halt(errHalted)
	})
	return b.shutdownErr
}

// abandon counts the spans still queued or in flight after Shutdown as
// dropped.
func (b *backend) abandon() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.gone = true
	b.must.reset()
	b.sampled.reset()
	if n := b.inflight; n > 0 {
		b.inflight = 0
		b.drop(int64(n), "still queued at shutdown")
	}
}

func (b *backend) drop(n int64, why string) {
	b.dropped.Add(n)
	b.warn(why, nil)
}

func (b *backend) warn(why string, err error) {
	b.warnOnce.Do(func() {
		attrs := []any{"backend", b.Name, "target", b.Target, "reason", why}
		if err != nil {
			attrs = append(attrs, "error", err)
		}
		b.logger.Warn("exporters: spans lost; later losses are only counted (see Provider.Stats)", attrs...)
	})
}

func (b *backend) stats() BackendStats {
	b.mu.Lock()
	queued := b.inflight
	b.mu.Unlock()
	s := BackendStats{
		Backend:  b.Backend,
		Exported: b.exported.Load(),
		Failed:   b.failed.Load(),
		Dropped:  b.dropped.Load(),
		Shed:     b.shed.Load(),
		Queued:   int64(queued),
	}
	if e := b.lastErr.Load(); e != nil {
		s.LastError = e.err
	}
	return s
}

// takeLoss returns a LossError for losses not yet reported, or nil.
func (b *backend) takeLoss() error {
	failed, dropped := b.failed.Load(), b.dropped.Load()
	total := failed + dropped
	prev := b.reported.Swap(total)
	if total <= prev {
		return nil
	}
	e := &LossError{Backend: b.Name, Failed: failed, Dropped: dropped}
	if last := b.lastErr.Load(); last != nil {
		e.Err = last.err
	}
	return e
}

// spanDeque is a growable ring of spans: pushed at the back, taken from
// either end.
type spanDeque struct {
	buf  []sdktrace.ReadOnlySpan
	head int
	n    int
}

func (d *spanDeque) len() int { return d.n }

func (d *spanDeque) pushBack(s sdktrace.ReadOnlySpan) {
	if d.n == len(d.buf) {
		grown := make([]sdktrace.ReadOnlySpan, max(64, 2*len(d.buf)))
		for i := range d.n {
			grown[i] = d.buf[(d.head+i)%len(d.buf)]
		}
		d.buf, d.head = grown, 0
	}
	d.buf[(d.head+d.n)%len(d.buf)] = s
	d.n++
}

func (d *spanDeque) popFront() sdktrace.ReadOnlySpan {
	s := d.buf[d.head]
	d.buf[d.head] = nil
	d.head = (d.head + 1) % len(d.buf)
	d.n--
	return s
}

func (d *spanDeque) popBack() sdktrace.ReadOnlySpan {
	i := (d.head + d.n - 1) % len(d.buf)
	s := d.buf[i]
	d.buf[i] = nil
	d.n--
	return s
}

func (d *spanDeque) reset() { *d = spanDeque{} }

// rankedProcessor is a span processor that takes the tail sampler's rank
// of a kept span: sampled when its trace was kept only by the
// probabilistic share, so that a full queue sheds it before the spans of
// errored and slow traces. The provider's backends and fanout implement
// it; the sampler calls OnEnd on any other processor.
type rankedProcessor interface {
	onEndRanked(s sdktrace.ReadOnlySpan, sampled bool)
}

// fanout passes every span to each of its processors, in order.
type fanout []sdktrace.SpanProcessor

func (f fanout) OnStart(ctx context.Context, s sdktrace.ReadWriteSpan) {
	for _, p := range f {
		p.OnStart(ctx, s)
	}
}

func (f fanout) OnEnd(s sdktrace.ReadOnlySpan) {
	for _, p := range f {
		p.OnEnd(s)
	}
}

func (f fanout) onEndRanked(s sdktrace.ReadOnlySpan, sampled bool) {
	for _, p := range f {
		if r, ok := p.(rankedProcessor); ok {
			r.onEndRanked(s, sampled)
		} else {
			p.OnEnd(s)
		}
	}
}

func (f fanout) ForceFlush(ctx context.Context) error {
	var errs []error
	for _, p := range f {
		errs = append(errs, p.ForceFlush(ctx))
	}
	return errors.Join(errs...)
}

func (f fanout) Shutdown(ctx context.Context) error {
	var errs []error
	for _, p := range f {
		errs = append(errs, p.Shutdown(ctx))
	}
	return errors.Join(errs...)
}
