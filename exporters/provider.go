package exporters

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"

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
	// Queued counts spans waiting for export.
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

// backend is one destination: a counting span processor in front of the
// SDK's batch span processor, whose exporter is wrapped to count results.
//
// Admission is bounded by inflight: spans handed to the batch processor and
// not yet through an export. It never exceeds max, and the batch
// processor's own queue is larger than max, so the SDK never drops a span
// behind our back: every loss is counted here.
//
// Every export runs under halted as well as the batch processor's context:
// Shutdown cancels halted when it returns, so an export (its retries
// included) never outlives Shutdown, and the batches the processor still
// drains after that are not sent.
type backend struct {
	Backend
	inner  sdktrace.SpanExporter
	bsp    sdktrace.SpanProcessor
	max    int64
	logger *slog.Logger

	halted context.Context
	halt   context.CancelFunc

	shutdownOnce sync.Once
	shutdownErr  error

	// mu orders the accounting of export results against abandon, so a
	// span is counted once, as exported, failed or dropped.
	mu   sync.Mutex
	gone bool // shut down: late export results are not counted

	inflight atomic.Int64
	exported atomic.Int64
	failed   atomic.Int64
	dropped  atomic.Int64
	reported atomic.Int64 // losses already returned in a LossError
	stopped  atomic.Bool
	lastErr  atomic.Pointer[errorBox]
	warnOnce sync.Once
}

type errorBox struct{ err error }

// errHalted is the cause of the cancellation of an export that Shutdown
// cut short.
var errHalted = errors.New("exporters: provider shut down")

// bspSlack is room in the batch processor's queue beyond max, for its
// flush markers.
const bspSlack = 64

func newBackend(s backendSpec, c *config) *backend {
	b := &backend{
		Backend: s.Backend,
		inner:   s.exporter,
		max:     int64(c.queueSize),
		logger:  c.logger,
	}
	b.halted, b.halt = context.WithCancel(context.Background())
	b.bsp = sdktrace.NewBatchSpanProcessor(countingExporter{b},
		sdktrace.WithMaxQueueSize(c.queueSize+bspSlack),
		sdktrace.WithMaxExportBatchSize(c.batchSize),
		sdktrace.WithBatchTimeout(c.batchTimeout),
		sdktrace.WithExportTimeout(c.exportTimeout),
	)
	return b
}

var _ sdktrace.SpanProcessor = (*backend)(nil)

// OnStart does nothing.
func (b *backend) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd queues s for export or drops it; it never blocks.
func (b *backend) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	if b.stopped.Load() {
		b.drop(1, "provider shut down")
		return
	}
	if b.inflight.Add(1) > b.max {
		b.inflight.Add(-1)
		b.drop(1, "queue full")
		return
	}
	b.bsp.OnEnd(s)
}

// ForceFlush flushes the batch processor.
func (b *backend) ForceFlush(ctx context.Context) error { return b.bsp.ForceFlush(ctx) }

// Shutdown stops admission and shuts the batch processor (and with it the
// exporter) down. It waits for the processor's last exports or until ctx
// is done, then cancels whatever export is still running, so that nothing
// sends after it returns. Later calls return the first call's result.
func (b *backend) Shutdown(ctx context.Context) error {
	b.shutdownOnce.Do(func() {
		b.stopped.Store(true)
		b.shutdownErr = b.bsp.Shutdown(ctx)
		b.halt()
	})
	return b.shutdownErr
}

// abandon counts the spans still queued after Shutdown as dropped.
func (b *backend) abandon() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.gone = true
	if n := b.inflight.Swap(0); n > 0 {
		b.drop(n, "still queued at shutdown")
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
	s := BackendStats{
		Backend:  b.Backend,
		Exported: b.exported.Load(),
		Failed:   b.failed.Load(),
		Dropped:  b.dropped.Load(),
		Queued:   max(b.inflight.Load(), 0),
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

// countingExporter counts the results of the wrapped exporter's exports.
// It returns nil for a failed export, so the SDK does not log every failed
// batch: the backend logs the first loss and counts the rest.
type countingExporter struct{ b *backend }

// An export that starts after the backend halted is not sent: its spans
// are still in flight, and abandon counts them as dropped.
func (e countingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	b := e.b
	if b.halted.Err() != nil {
		return nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(b.halted, func() { cancel(errHalted) })
	err := b.inner.ExportSpans(ctx, spans)
	stop()
	cancel(nil)

	n := int64(len(spans))
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.gone {
		return nil
	}
	b.inflight.Add(-n)
	if err != nil {
		b.failed.Add(n)
		b.lastErr.Store(&errorBox{err})
		b.warn("export failed", err)
		return nil
	}
	b.exported.Add(n)
	return nil
}

func (e countingExporter) Shutdown(ctx context.Context) error { return e.b.inner.Shutdown(ctx) }

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
