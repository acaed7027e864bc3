package exporters

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	sdkresource "go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Option configures the builders: [NewOTLP], [NewLangSmith], [NewFile],
// [NewStdout] and [FromEnv] for spans, [NewOTLPMeters], [NewFileMeters],
// [NewStdoutMeters] and [MetersFromEnv] for metrics. Each option's doc
// says which builders it applies to (the package doc has the table); a
// builder given an option that does not apply to it returns an error
// wrapping [ErrOptionNotApplicable], naming the option and the builders
// it applies to. Options override the environment.
type Option func(*config)

// builder is a set of this package's builders, one bit each.
type builder uint16

const (
	bOTLP builder = 1 << iota
	bLangSmith
	bFile
	bStdout
	bFromEnv
	bOTLPMeters
	bFileMeters
	bStdoutMeters
	bMetersFromEnv

	bSpans  = bOTLP | bLangSmith | bFile | bStdout | bFromEnv
	bMeters = bOTLPMeters | bFileMeters | bStdoutMeters | bMetersFromEnv
	bAll    = bSpans | bMeters
)

// String names the builders of b, in the order of the package doc.
func (b builder) String() string {
	names := []string{"NewOTLP", "NewLangSmith", "NewFile", "NewStdout", "FromEnv",
		"NewOTLPMeters", "NewFileMeters", "NewStdoutMeters", "MetersFromEnv"}
	var out []string
	for i, n := range names {
		if b&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return strings.Join(out, ", ")
}

// given is an option a builder received: its name and the builders it
// applies to.
type given struct {
	name string
	to   builder
}

// option makes the Option name, which applies to the builders to and
// sets what set sets.
func option(name string, to builder, set func(*config)) Option {
	return func(c *config) {
		c.given = append(c.given, given{name, to})
		set(c)
	}
}

// optionError is an option given to a builder it does not apply to.
type optionError struct {
	builder builder
	given
}

func (e *optionError) Error() string {
	return fmt.Sprintf("exporters: %s: %s does not apply to it (it applies to %s)", e.builder, e.name, e.to)
}

func (e *optionError) Is(target error) bool { return target == ErrOptionNotApplicable }

// config holds the builders' settings. Defaults:
//   - service name: OTEL_SERVICE_NAME, else "harnessx" (OTEL_RESOURCE_ATTRIBUTES
//     is honoured too);
//   - OTLP endpoint: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as is, else
//     OTEL_EXPORTER_OTLP_ENDPOINT + "/v1/traces", else
//     http://localhost:4318/v1/traces;
//   - LangSmith: LANGSMITH_ENDPOINT (default https://api.smith.langchain.com),
//     LANGSMITH_API_KEY, LANGSMITH_PROJECT;
//   - file: HARNESSX_TRACES_FILE, else .harnessx/traces.jsonl;
//   - stdout writer: os.Stdout;
//   - queue: 2048 spans per backend, batches of up to 512 spans, sent at
//     least every 2s; one export may take 10s;
//   - logger: slog.Default() when the builder is called;
//   - tail sampling: off, unless HARNESSX_TAIL_SAMPLING is set (see
//     [WithTailSampling]);
//   - ID generator: [RunTraceIDs].
type config struct {
	given []given // the options, for the builder's check

	serviceName string
	resource    *sdkresource.Resource

	endpoint string
	headers  map[string]string

	lsEndpoint string
	lsAPIKey   string
	lsProject  string

	filePath   string
	fileWriter io.Writer

	stdoutWriter io.Writer
	prettyPrint  bool

	meter meterSettings // the meter builders' own (meter.go)

	logger        *slog.Logger
	queueSize     int
	batchSize     int
	batchTimeout  time.Duration
	exportTimeout time.Duration
	httpClient    *http.Client

	processors []sdktrace.SpanProcessor
	tpOptions  []sdktrace.TracerProviderOption
	tailOpts   []TailOption
	tailSet    bool
	idGen      sdktrace.IDGenerator
	idGenSet   bool
}

const (
	defaultServiceName   = "harnessx"
	defaultOTLPEndpoint  = "http://localhost:4318"
	defaultLangSmith     = "https://api.smith.langchain.com"
	defaultTracesFile    = ".harnessx/traces.jsonl"
	defaultQueueSize     = 2048
	defaultBatchSize     = 512
	defaultBatchTimeout  = 2 * time.Second
	defaultExportTimeout = 10 * time.Second
)

// newConfig applies opts for the builder b; it fails, naming them, when
// some of them do not apply to b.
func newConfig(b builder, opts []Option) (config, error) {
	c := settings(opts)
	var errs []error
	for _, g := range c.given {
		if g.to&b == 0 {
			errs = append(errs, &optionError{b, g})
		}
	}
	return c, errors.Join(errs...)
}

// settings applies opts, whatever builder they apply to.
func settings(opts []Option) config {
	var c config
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	if c.queueSize <= 0 {
		c.queueSize = defaultQueueSize
	}
	if c.batchSize <= 0 {
		c.batchSize = defaultBatchSize
	}
	if c.batchSize > c.queueSize {
		c.batchSize = c.queueSize
	}
	if c.batchTimeout <= 0 {
		c.batchTimeout = defaultBatchTimeout
	}
	if c.exportTimeout <= 0 {
		c.exportTimeout = defaultExportTimeout
	}
	return c
}

// WithServiceName sets the service.name resource attribute, over
// OTEL_SERVICE_NAME. Default: OTEL_SERVICE_NAME, else "harnessx".
// Applies to: every builder.
func WithServiceName(name string) Option {
	return option("WithServiceName", bAll, func(c *config) { c.serviceName = name })
}

// WithResource replaces the resource the spans carry; WithServiceName and
// the OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES variables are then
// ignored.
// Applies to: every builder.
func WithResource(r *sdkresource.Resource) Option {
	return option("WithResource", bAll, func(c *config) { c.resource = r })
}

// WithEndpointURL sets the full URL the OTLP/HTTP backend posts spans to,
// path included (for Jaeger or a collector: http://host:4318/v1/traces).
// An http URL sends in clear text, an https URL over TLS.
// Applies to: [NewOTLP], [FromEnv]; for metrics, [WithMetricsEndpointURL].
func WithEndpointURL(u string) Option {
	return option("WithEndpointURL", bOTLP|bFromEnv, func(c *config) { c.endpoint = u })
}

// WithHeaders sets HTTP headers the OTLP/HTTP backend sends with each
// export, instead of OTEL_EXPORTER_OTLP_HEADERS.
// Applies to: [NewOTLP], [FromEnv], [NewOTLPMeters], [MetersFromEnv].
func WithHeaders(h map[string]string) Option {
	return option("WithHeaders", bOTLP|bFromEnv|bOTLPMeters|bMetersFromEnv, func(c *config) {
		c.headers = make(map[string]string, len(h))
		for k, v := range h {
			c.headers[k] = v
		}
	})
}

// WithLangSmithEndpoint sets LangSmith's base URL, over LANGSMITH_ENDPOINT;
// spans go to base + "/otel/v1/traces".
// Applies to: [NewLangSmith], [FromEnv].
func WithLangSmithEndpoint(base string) Option {
	return option("WithLangSmithEndpoint", bLangSmith|bFromEnv, func(c *config) { c.lsEndpoint = base })
}

// WithAPIKey sets the LangSmith API key, over LANGSMITH_API_KEY. It is
// sent in the x-api-key header.
// Applies to: [NewLangSmith], [FromEnv].
func WithAPIKey(key string) Option {
	return option("WithAPIKey", bLangSmith|bFromEnv, func(c *config) { c.lsAPIKey = key })
}

// WithProject sets the LangSmith project, over LANGSMITH_PROJECT. It is
// sent in the Langsmith-Project header; without one LangSmith uses its
// default project.
// Applies to: [NewLangSmith], [FromEnv].
func WithProject(name string) Option {
	return option("WithProject", bLangSmith|bFromEnv, func(c *config) { c.lsProject = name })
}

// WithFile sets the path of the OTLP JSON-lines file, over
// HARNESSX_TRACES_FILE. Missing directories are created.
// Applies to: [NewFile], [FromEnv]; for metrics, [WithMetricsFile].
func WithFile(path string) Option {
	return option("WithFile", bFile|bFromEnv, func(c *config) { c.filePath = path })
}

// WithFileWriter makes the file backend write its JSON lines to w instead
// of a file. The provider does not close w.
// Applies to: [NewFile], [FromEnv]; for metrics, [WithMetricsFileWriter].
func WithFileWriter(w io.Writer) Option {
	return option("WithFileWriter", bFile|bFromEnv, func(c *config) { c.fileWriter = w })
}

// WithStdoutWriter makes the stdout backend write to w instead of os.Stdout.
// Applies to: [NewStdout], [FromEnv], [NewStdoutMeters], [MetersFromEnv].
func WithStdoutWriter(w io.Writer) Option {
	return option("WithStdoutWriter", bStdout|bFromEnv|bStdoutMeters|bMetersFromEnv, func(c *config) { c.stdoutWriter = w })
}

// WithPrettyPrint indents the stdout backend's JSON.
// Applies to: [NewStdout], [FromEnv], [NewStdoutMeters], [MetersFromEnv].
func WithPrettyPrint() Option {
	return option("WithPrettyPrint", bStdout|bFromEnv|bStdoutMeters|bMetersFromEnv, func(c *config) { c.prettyPrint = true })
}

// WithLogger sets the logger that reports lost spans. Default:
// slog.Default() when the builder is called.
// Applies to: every builder.
func WithLogger(l *slog.Logger) Option {
	return option("WithLogger", bAll, func(c *config) { c.logger = l })
}

// WithQueueSize bounds the spans each backend holds before export. Spans
// that end while the queue is full are dropped and counted, never waited
// for; with tail sampling, spans of traces kept only by the probabilistic
// share are shed first (see [Stats].Shed). Default 2048.
// Applies to: the span builders ([NewOTLP], [NewLangSmith], [NewFile], [NewStdout], [FromEnv]).
func WithQueueSize(n int) Option {
	return option("WithQueueSize", bSpans, func(c *config) { c.queueSize = n })
}

// WithBatchSize sets the largest batch sent in one export. Default 512,
// at most the queue size.
// Applies to: the span builders.
func WithBatchSize(n int) Option {
	return option("WithBatchSize", bSpans, func(c *config) { c.batchSize = n })
}

// WithBatchTimeout sets how long a span may wait for its batch to fill
// before it is sent. Default 2s.
// Applies to: the span builders.
func WithBatchTimeout(d time.Duration) Option {
	return option("WithBatchTimeout", bSpans, func(c *config) { c.batchTimeout = d })
}

// WithExportTimeout bounds one export, retries included. Default 10s.
// Applies to: every builder.
func WithExportTimeout(d time.Duration) Option {
	return option("WithExportTimeout", bAll, func(c *config) { c.exportTimeout = d })
}

// WithHTTPClient sets the HTTP client of the OTLP and LangSmith backends.
// Applies to: [NewOTLP], [NewLangSmith], [FromEnv], [NewOTLPMeters], [MetersFromEnv].
func WithHTTPClient(hc *http.Client) Option {
	return option("WithHTTPClient", bOTLP|bLangSmith|bFromEnv|bOTLPMeters|bMetersFromEnv, func(c *config) { c.httpClient = hc })
}

// WithSpanProcessor adds a span processor to the provider, after the
// backends' own; the flight recorder's processor is one.
// Applies to: the span builders.
func WithSpanProcessor(sp sdktrace.SpanProcessor) Option {
	return option("WithSpanProcessor", bSpans, func(c *config) { c.processors = append(c.processors, sp) })
}

// WithIDGenerator sets the provider's ID generator. Default: [RunTraceIDs],
// which derives a run's trace ID from its run ID. nil gives the SDK's own
// generator: random IDs for every span. An ID generator given with
// [WithTracerProviderOptions] takes precedence.
// Applies to: the span builders.
func WithIDGenerator(g sdktrace.IDGenerator) Option {
	return option("WithIDGenerator", bSpans, func(c *config) { c.idGen, c.idGenSet = g, true })
}

// WithTracerProviderOptions passes options to sdktrace.NewTracerProvider,
// such as a sampler or an ID generator. They apply after the provider's
// own resource and processors.
// Applies to: the span builders.
func WithTracerProviderOptions(opts ...sdktrace.TracerProviderOption) Option {
	return option("WithTracerProviderOptions", bSpans, func(c *config) { c.tpOptions = append(c.tpOptions, opts...) })
}

// WithTailSampling puts a [TailSampler] with opts in front of the
// provider's backends: one buffer and one decision per trace, shared by
// every backend, which keeps an errored trace whole whichever span errs,
// within a span budget (see [TailSampler]). Processors added with
// [WithSpanProcessor] (the flight recorder's) still see every span. [Provider.Stats] reports the
// sampler's counts in Stats.TailSampling. It overrides the
// HARNESSX_TAIL_SAMPLING variables; a bad option makes the builder return
// an error wrapping [ErrInvalidTailSampling].
// Applies to: the span builders.
func WithTailSampling(opts ...TailOption) Option {
	return option("WithTailSampling", bSpans, func(c *config) { c.tailOpts, c.tailSet = append([]TailOption(nil), opts...), true })
}
