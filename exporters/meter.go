package exporters

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/embedded"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// MeterProvider is a metric.MeterProvider that sends metrics to one or
// more backends. Pass it to the tracing extension
// (tracing.WithMeterProvider); it never becomes the global provider unless
// you make it so.
//
// Each backend has its own periodic reader: measurements are aggregated in
// memory and exported in the background every [WithMetricInterval]
// (default: OTEL_METRIC_EXPORT_INTERVAL, else 60s), so recording never
// waits for the network. A failed export is reported through the
// OpenTelemetry error handler (otel.Handle) and returned by
// [MeterProvider.ForceFlush] and [MeterProvider.Shutdown].
//
// Its methods are safe for concurrent use.
type MeterProvider struct {
	embedded.MeterProvider

	mp       *sdkmetric.MeterProvider
	backends []Backend

	shutdownOnce sync.Once
	shutdownErr  error
}

var _ metric.MeterProvider = (*MeterProvider)(nil)

// meterSettings are the options that concern only the meter builders.
type meterSettings struct {
	endpoint string
	filePath string
	writer   io.Writer
	interval time.Duration
	readers  []sdkmetric.Reader
	options  []sdkmetric.Option
}

const (
	defaultMetricsFile = ".harnessx/metrics.jsonl"
	// fileMetricsURL is the URL the file backend's OTLP exporter posts to;
	// its HTTP transport writes the request to the file and never dials.
	fileMetricsURL = "http://harnessx-metrics-file.invalid/v1/metrics"
)

// WithMetricsEndpointURL sets the full URL the OTLP/HTTP meter backend
// posts metrics to, path included (http://host:4318/v1/metrics). Default:
// OTEL_EXPORTER_OTLP_METRICS_ENDPOINT as is, else
// OTEL_EXPORTER_OTLP_ENDPOINT + "/v1/metrics", else
// http://localhost:4318/v1/metrics.
// Applies to: [NewOTLPMeters], [MetersFromEnv].
func WithMetricsEndpointURL(u string) Option {
	return option("WithMetricsEndpointURL", bOTLPMeters|bMetersFromEnv, func(c *config) { c.meter.endpoint = u })
}

// WithMetricsFile sets the path of the metrics JSON-lines file, over
// HARNESSX_METRICS_FILE. Default .harnessx/metrics.jsonl.
// Applies to: [NewFileMeters], [MetersFromEnv].
func WithMetricsFile(path string) Option {
	return option("WithMetricsFile", bFileMeters|bMetersFromEnv, func(c *config) { c.meter.filePath = path })
}

// WithMetricsFileWriter makes the file meter backend write its JSON lines
// to w instead of a file. The provider does not close w.
// Applies to: [NewFileMeters], [MetersFromEnv].
func WithMetricsFileWriter(w io.Writer) Option {
	return option("WithMetricsFileWriter", bFileMeters|bMetersFromEnv, func(c *config) { c.meter.writer = w })
}

// WithMetricInterval sets how often each meter backend exports. Default:
// OTEL_METRIC_EXPORT_INTERVAL (milliseconds), else 60s.
// Applies to: the meter builders ([NewOTLPMeters], [NewFileMeters], [NewStdoutMeters], [MetersFromEnv]).
func WithMetricInterval(d time.Duration) Option {
	return option("WithMetricInterval", bMeters, func(c *config) { c.meter.interval = d })
}

// WithMetricReader adds a reader to the meter providers the builders
// make, after the backends' own: an sdkmetric.ManualReader in a test, a
// Prometheus exporter in a server.
// Applies to: the meter builders.
func WithMetricReader(r sdkmetric.Reader) Option {
	return option("WithMetricReader", bMeters, func(c *config) { c.meter.readers = append(c.meter.readers, r) })
}

// WithMeterProviderOptions passes options to sdkmetric.NewMeterProvider,
// such as views. They apply after the provider's own resource and readers.
// Applies to: the meter builders.
func WithMeterProviderOptions(opts ...sdkmetric.Option) Option {
	return option("WithMeterProviderOptions", bMeters, func(c *config) { c.meter.options = append(c.meter.options, opts...) })
}

// NewOTLPMeters returns a meter provider that sends metrics over OTLP/HTTP
// (protobuf) to an OpenTelemetry Collector or any OTLP backend that takes
// metrics (Jaeger does not). The URL comes from [WithMetricsEndpointURL],
// else OTEL_EXPORTER_OTLP_METRICS_ENDPOINT (as is), else
// OTEL_EXPORTER_OTLP_ENDPOINT with "/v1/metrics" appended, else
// http://localhost:4318/v1/metrics. [WithHeaders], [WithHTTPClient] and
// [WithExportTimeout] apply; the other OTEL_EXPORTER_OTLP_* variables
// (headers, compression, certificates, temporality preference) are
// honoured as the otlpmetrichttp package documents. It does not connect.
func NewOTLPMeters(ctx context.Context, opts ...Option) (*MeterProvider, error) {
	c, err := newConfig(bOTLPMeters, opts)
	if err != nil {
		return nil, err
	}
	spec, err := otlpMeterBackend(ctx, &c)
	if err != nil {
		return nil, err
	}
	return newMeterProvider(ctx, &c, []meterSpec{spec})
}

// NewFileMeters returns a meter provider that appends metrics to a local
// file, one OTLP/JSON ExportMetricsServiceRequest per line, the offline
// default: the path comes from [WithMetricsFile], else
// HARNESSX_METRICS_FILE, else .harnessx/metrics.jsonl (directories are
// created with mode 0700, the file with 0600); [WithMetricsFileWriter]
// writes to a writer instead. A line is a valid body for POST /v1/metrics
// with Content-Type application/json, so a file can be replayed into a
// collector. The lines are the OTLP exporter's own protobuf encoding,
// turned into OTLP/JSON (enums as numbers, exemplar trace and span IDs in
// hex).
func NewFileMeters(ctx context.Context, opts ...Option) (*MeterProvider, error) {
	c, err := newConfig(bFileMeters, opts)
	if err != nil {
		return nil, err
	}
	spec, err := fileMeterBackend(ctx, &c)
	if err != nil {
		return nil, err
	}
	return newMeterProvider(ctx, &c, []meterSpec{spec})
}

// NewStdoutMeters returns a meter provider that prints metrics as JSON to
// standard output (or the [WithStdoutWriter] writer) with the stdoutmetric
// exporter; [WithPrettyPrint] indents them.
func NewStdoutMeters(ctx context.Context, opts ...Option) (*MeterProvider, error) {
	c, err := newConfig(bStdoutMeters, opts)
	if err != nil {
		return nil, err
	}
	spec, err := stdoutMeterBackend(&c)
	if err != nil {
		return nil, err
	}
	return newMeterProvider(ctx, &c, []meterSpec{spec})
}

// meterSpec is a meter backend to build: its exporter and where it sends.
type meterSpec struct {
	Backend
	exporter sdkmetric.Exporter
}

func newMeterProvider(ctx context.Context, c *config, specs []meterSpec) (*MeterProvider, error) {
	res, err := buildResource(ctx, c)
	if err != nil {
		for _, s := range specs {
			_ = s.exporter.Shutdown(ctx)
		}
		return nil, err
	}
	p := &MeterProvider{}
	opts := []sdkmetric.Option{sdkmetric.WithResource(res)}
	for _, s := range specs {
		var ropts []sdkmetric.PeriodicReaderOption
		if c.meter.interval > 0 {
			ropts = append(ropts, sdkmetric.WithInterval(c.meter.interval))
		}
		ropts = append(ropts, sdkmetric.WithTimeout(c.exportTimeout))
		opts = append(opts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(s.exporter, ropts...)))
		p.backends = append(p.backends, s.Backend)
	}
	for _, r := range c.meter.readers {
		opts = append(opts, sdkmetric.WithReader(r))
	}
	opts = append(opts, c.meter.options...)
	p.mp = sdkmetric.NewMeterProvider(opts...)
	return p, nil
}

// Meter returns a meter of the underlying SDK provider.
func (p *MeterProvider) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	return p.mp.Meter(name, opts...)
}

// SDK returns the underlying SDK provider.
func (p *MeterProvider) SDK() *sdkmetric.MeterProvider { return p.mp }

// Backends lists the provider's backends, in order.
func (p *MeterProvider) Backends() []Backend { return append([]Backend(nil), p.backends...) }

// ForceFlush collects the metrics now and exports them to every backend,
// waiting for the exports or until ctx is done. It returns the export
// errors.
func (p *MeterProvider) ForceFlush(ctx context.Context) error {
	if err := p.mp.ForceFlush(ctx); err != nil {
		return fmt.Errorf("exporters: metrics: %w", err)
	}
	return nil
}

// Shutdown exports the metrics a last time, stops the readers and
// releases the exporters (the file backend closes its file), waiting for
// the exports or until ctx is done. It is safe to call more than once:
// later calls return the first call's result. After Shutdown recordings
// are dropped.
func (p *MeterProvider) Shutdown(ctx context.Context) error {
	p.shutdownOnce.Do(func() {
		if err := p.mp.Shutdown(ctx); err != nil {
			p.shutdownErr = fmt.Errorf("exporters: metrics: %w", err)
		}
	})
	return p.shutdownErr
}

// otlpMetricsEndpoint resolves the OTLP metrics URL.
func otlpMetricsEndpoint(c *config) string {
	if c.meter.endpoint != "" {
		return c.meter.endpoint
	}
	if v := strings.TrimSpace(os.Getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")); v != "" {
		return v
	}
	base := strings.TrimSpace(os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
	if base == "" {
		base = defaultOTLPEndpoint
	}
	return strings.TrimRight(base, "/") + "/v1/metrics"
}

func otlpMeterBackend(ctx context.Context, c *config) (meterSpec, error) {
	u := otlpMetricsEndpoint(c)
	if err := checkURL(u); err != nil {
		return meterSpec{}, err
	}
	opts := []otlpmetrichttp.Option{
		otlpmetrichttp.WithEndpointURL(u),
		otlpmetrichttp.WithTimeout(c.exportTimeout),
		otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{
			Enabled:         true,
			InitialInterval: 250 * time.Millisecond,
			MaxInterval:     2 * time.Second,
			MaxElapsedTime:  c.exportTimeout,
		}),
	}
	if c.httpClient != nil {
		opts = append(opts, otlpmetrichttp.WithHTTPClient(c.httpClient))
	}
	if c.headers != nil {
		opts = append(opts, otlpmetrichttp.WithHeaders(c.headers))
	}
	exp, err := otlpmetrichttp.New(ctx, opts...)
	if err != nil {
		return meterSpec{}, fmt.Errorf("exporters: otlp metrics: %w", err)
	}
	return meterSpec{Backend{Name: "otlp", Target: u}, exp}, nil
}

func stdoutMeterBackend(c *config) (meterSpec, error) {
	var opts []stdoutmetric.Option
	if c.stdoutWriter != nil {
		opts = append(opts, stdoutmetric.WithWriter(c.stdoutWriter))
	}
	if c.prettyPrint {
		opts = append(opts, stdoutmetric.WithPrettyPrint())
	}
	exp, err := stdoutmetric.New(opts...)
	if err != nil {
		return meterSpec{}, fmt.Errorf("exporters: stdout metrics: %w", err)
	}
	return meterSpec{Backend{Name: "stdout", Target: "stdout"}, exp}, nil
}

// errNoMetricsWriter guards the file transport against a request it
// cannot have been sent (it is the file backend's own client).
var errNoMetricsWriter = errors.New("exporters: metrics file closed")
