package exporters

import (
	"io"
	"log/slog"
	"net/http"
	"time"

	sdkresource "go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Option configures the builders ([NewOTLP], [NewLangSmith], [NewFile],
// [NewStdout], [FromEnv]). An option that does not concern a builder's
// backends is ignored by it. Options override the environment.
type Option func(*config)

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

func newConfig(opts []Option) config {
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
func WithServiceName(name string) Option { return func(c *config) { c.serviceName = name } }

// WithResource replaces the resource the spans carry; WithServiceName and
// the OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES variables are then
// ignored.
func WithResource(r *sdkresource.Resource) Option { return func(c *config) { c.resource = r } }

// WithEndpointURL sets the full URL the OTLP/HTTP backend posts spans to,
// path included (for Jaeger or a collector: http://host:4318/v1/traces).
// An http URL sends in clear text, an https URL over TLS.
func WithEndpointURL(u string) Option { return func(c *config) { c.endpoint = u } }

// WithHeaders sets HTTP headers the OTLP/HTTP backend sends with each
// export, instead of OTEL_EXPORTER_OTLP_HEADERS.
func WithHeaders(h map[string]string) Option {
	return func(c *config) {
		c.headers = make(map[string]string, len(h))
		for k, v := range h {
			c.headers[k] = v
		}
	}
}

// WithLangSmithEndpoint sets LangSmith's base URL, over LANGSMITH_ENDPOINT;
// spans go to base + "/otel/v1/traces".
func WithLangSmithEndpoint(base string) Option { return func(c *config) { c.lsEndpoint = base } }

// WithAPIKey sets the LangSmith API key, over LANGSMITH_API_KEY. It is
// sent in the x-api-key header.
func WithAPIKey(key string) Option { return func(c *config) { c.lsAPIKey = key } }

// WithProject sets the LangSmith project, over LANGSMITH_PROJECT. It is
// sent in the Langsmith-Project header; without one LangSmith uses its
// default project.
func WithProject(name string) Option { return func(c *config) { c.lsProject = name } }

// WithFile sets the path of the OTLP JSON-lines file, over
// HARNESSX_TRACES_FILE. Missing directories are created.
func WithFile(path string) Option { return func(c *config) { c.filePath = path } }

// WithFileWriter makes the file backend write its JSON lines to w instead
// of a file. The provider does not close w.
func WithFileWriter(w io.Writer) Option { return func(c *config) { c.fileWriter = w } }

// WithStdoutWriter makes the stdout backend write to w instead of os.Stdout.
func WithStdoutWriter(w io.Writer) Option { return func(c *config) { c.stdoutWriter = w } }

// WithPrettyPrint indents the stdout backend's JSON.
func WithPrettyPrint() Option { return func(c *config) { c.prettyPrint = true } }

// WithLogger sets the logger that reports lost spans. Default:
// slog.Default() when the builder is called.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithQueueSize bounds the spans each backend holds before export. Spans
// that end while the queue is full are dropped and counted, never waited
// for; with tail sampling, spans of traces kept only by the probabilistic
// share are shed first (see [Stats].Shed). Default 2048.
func WithQueueSize(n int) Option { return func(c *config) { c.queueSize = n } }

// WithBatchSize sets the largest batch sent in one export. Default 512,
// at most the queue size.
func WithBatchSize(n int) Option { return func(c *config) { c.batchSize = n } }

// WithBatchTimeout sets how long a span may wait for its batch to fill
// before it is sent. Default 2s.
func WithBatchTimeout(d time.Duration) Option { return func(c *config) { c.batchTimeout = d } }

// WithExportTimeout bounds one export, retries included. Default 10s.
func WithExportTimeout(d time.Duration) Option { return func(c *config) { c.exportTimeout = d } }

// WithHTTPClient sets the HTTP client of the OTLP and LangSmith backends.
func WithHTTPClient(hc *http.Client) Option { return func(c *config) { c.httpClient = hc } }

// WithSpanProcessor adds a span processor to the provider, after the
// backends' own; the flight recorder's processor is one.
func WithSpanProcessor(sp sdktrace.SpanProcessor) Option {
	return func(c *config) { c.processors = append(c.processors, sp) }
}

// WithIDGenerator sets the provider's ID generator. Default: [RunTraceIDs],
// which derives a run's trace ID from its run ID. nil gives the SDK's own
// generator: random IDs for every span. An ID generator given with
// [WithTracerProviderOptions] takes precedence.
func WithIDGenerator(g sdktrace.IDGenerator) Option {
	return func(c *config) { c.idGen, c.idGenSet = g, true }
}

// WithTracerProviderOptions passes options to sdktrace.NewTracerProvider,
// such as a sampler or an ID generator. They apply after the provider's
// own resource and processors.
func WithTracerProviderOptions(opts ...sdktrace.TracerProviderOption) Option {
	return func(c *config) { c.tpOptions = append(c.tpOptions, opts...) }
}

// WithTailSampling puts a [TailSampler] with opts in front of the
// provider's backends: one buffer and one decision per trace, shared by
// every backend, which keeps an errored trace whole whichever span errs,
// within a span budget (see [TailSampler]). Processors added with
// [WithSpanProcessor] (the flight recorder's) still see every span. [Provider.Stats] reports the
// sampler's counts in Stats.TailSampling. It overrides the
// HARNESSX_TAIL_SAMPLING variables; a bad option makes the builder return
// an error wrapping [ErrInvalidTailSampling].
func WithTailSampling(opts ...TailOption) Option {
	return func(c *config) { c.tailOpts, c.tailSet = append([]TailOption(nil), opts...), true }
}
