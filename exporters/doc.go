// Package exporters builds OpenTelemetry TracerProviders for harnessx:
// the SDK and backend side of tracing, which the tracing extension leaves
// to the application.
//
//   - [NewOTLP] sends OTLP/HTTP to Jaeger or an OpenTelemetry Collector
//     (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SERVICE_NAME);
//   - [NewLangSmith] sends OTLP/HTTP to LangSmith (LANGSMITH_API_KEY,
//     LANGSMITH_PROJECT, LANGSMITH_ENDPOINT);
//   - [NewFile] appends OTLP/JSON lines to a local file, the offline
//     default (HARNESSX_TRACES_FILE, default .harnessx/traces.jsonl);
//   - [NewStdout] prints spans;
//   - [FromEnv] sends to every backend the environment names, several at
//     once, and falls back to the file.
//
// Each returns a [*Provider]: a trace.TracerProvider to give to
// tracing.WithTracerProvider, with [Provider.Shutdown] to flush at exit:
//
//	tp, err := exporters.FromEnv(ctx)
//	if err != nil { ... }
//	defer tp.Shutdown(context.WithoutCancel(ctx))
//	agent, err := harness.New(..., harness.WithExtensions(tracing.New(tracing.WithTracerProvider(tp))))
//
// # Options: which builder takes which
//
// The builders share one [Option] type. Each option applies to the
// builders marked below (its doc says so too), and a builder given an
// option that does not apply to it returns an error that matches
// [ErrOptionNotApplicable] and names the option and the builders it
// applies to, rather than ignoring it. The span builders are [NewOTLP],
// [NewLangSmith], [NewFile], [NewStdout] and [FromEnv]; the meter
// builders [NewOTLPMeters], [NewFileMeters], [NewStdoutMeters] and
// [MetersFromEnv]. FromEnv and MetersFromEnv take the options of every
// backend they may build. [TracesFile] and [MetricsFile] read only the
// file options and ignore the rest.
//
//	                           spans                                     metrics
//	option                     OTLP  LangSmith  File  Stdout  FromEnv    OTLP  File  Stdout  FromEnv
//	WithServiceName            x     x          x     x       x          x     x     x       x
//	WithResource               x     x          x     x       x          x     x     x       x
//	WithLogger                 x     x          x     x       x          x     x     x       x
//	WithExportTimeout          x     x          x     x       x          x     x     x       x
//	WithQueueSize              x     x          x     x       x          -     -     -       -
//	WithBatchSize              x     x          x     x       x          -     -     -       -
//	WithBatchTimeout           x     x          x     x       x          -     -     -       -
//	WithSpanProcessor          x     x          x     x       x          -     -     -       -
//	WithIDGenerator            x     x          x     x       x          -     -     -       -
//	WithTracerProviderOptions  x     x          x     x       x          -     -     -       -
//	WithTailSampling           x     x          x     x       x          -     -     -       -
//	WithEndpointURL            x     -          -     -       x          -     -     -       -
//	WithHeaders                x     -          -     -       x          x     -     -       x
//	WithHTTPClient             x     x          -     -       x          x     -     -       x
//	WithLangSmithEndpoint      -     x          -     -       x          -     -     -       -
//	WithAPIKey                 -     x          -     -       x          -     -     -       -
//	WithProject                -     x          -     -       x          -     -     -       -
//	WithFile                   -     -          x     -       x          -     -     -       -
//	WithFileWriter             -     -          x     -       x          -     -     -       -
//	WithStdoutWriter           -     -          -     x       x          -     -     x       x
//	WithPrettyPrint            -     -          -     x       x          -     -     x       x
//	WithMetricsEndpointURL     -     -          -     -       -          x     -     -       x
//	WithMetricsFile            -     -          -     -       -          -     x     -       x
//	WithMetricsFileWriter      -     -          -     -       -          -     x     -       x
//	WithMetricInterval         -     -          -     -       -          x     x     x       x
//	WithMetricReader           -     -          -     -       -          x     x     x       x
//	WithMeterProviderOptions   -     -          -     -       -          x     x     x       x
//
// # Metrics
//
// The same backends take metrics: [NewOTLPMeters] (OTLP/HTTP to
// OTEL_EXPORTER_OTLP_METRICS_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT +
// "/v1/metrics"), [NewFileMeters] (OTLP/JSON lines in
// .harnessx/metrics.jsonl, or HARNESSX_METRICS_FILE), [NewStdoutMeters]
// and [MetersFromEnv] (OTEL_METRICS_EXPORTER chooses, as
// OTEL_TRACES_EXPORTER does for spans). Each returns a [*MeterProvider] to
// give to tracing.WithMeterProvider; shut it down at exit.
//
// # One run, one trace
//
// The providers derive a run's trace ID from its run ID ([RunTraceIDs], the
// default; [WithIDGenerator] replaces it): the root span a run starts —
// the tracing extension's invoke_agent span — gets the trace ID
// SHA-256("harnessx/run/" + run ID)[:16], so the trace of a run is found
// from its [harness.RunResult.RunID], and a run that a durable runtime
// executes again after a crash, under the same run ID, continues the same
// trace; its root span's ID is derived from the run ID and the attempt, so
// that the recovered run's span can link to the crashed attempt's (see the
// tracing extension). Only the TracerProvider can choose IDs, which is why
// this lives here and not in the extension. Spans with a parent, and root
// spans started outside a run, get random IDs.
//
// # A backend that is down
//
// Tracing must never slow an agent down. Every backend has a bounded queue
// (default 2048 spans) drained in batches by a goroutine of its own;
// ending a span only queues it. When a backend is unreachable or slow,
// its exports fail or its queue fills, and the spans are counted as
// failed or dropped — [Provider.Stats] reads the counts — and the first
// loss of each backend is logged once through log/slog, not once per span.
// With tail sampling, a full queue sheds the spans of traces kept only by
// the probabilistic share first (counted in Stats.Shed): an errored or
// slow trace's span takes the place of the newest such span queued, and
// is dropped only when none is left.
// [Provider.ForceFlush] and [Provider.Shutdown] return a [*LossError]
// (wrapping [ErrSpansLost]) for losses they have not reported yet, so a
// program can tell the user where its traces did not go. Shutdown honours
// its context's deadline: when it passes, the export in flight is
// cancelled, retries stop, queued batches are not sent, and no goroutine
// of the provider keeps talking to the backend.
//
// # Tail sampling
//
// [WithTailSampling] (or HARNESSX_TAIL_SAMPLING, a probability, with
// HARNESSX_TAIL_SAMPLING_LATENCY, a Go duration) puts a [TailSampler] in
// front of a provider's backends. It keeps a whole trace when a span has
// status Error, when its root lasted at least the latency threshold
// (default 30s), or when the trace ID falls in the probabilistic share
// (default 10%); otherwise it drops it. The share is decided from the 56
// low bits of the trace ID, the randomness of W3C Trace Context Level 2
// and of OpenTelemetry's consistent probability sampling (kept when they
// are at least (1-p)·2^56), so every process given the same probability
// keeps the same traces, and a trace kept at p is kept at any larger p.
// (The collector's tail_sampling processor hashes the trace ID its own
// way: it agrees with itself across collectors, not with this sampler.)
//
// An errored trace is kept whole, whichever span carries the error: the
// root, a tool span, a span that ends before its siblings. The sampler
// holds the ended spans of every open trace, and keeps the trace the
// moment an error span ends: the spans held go on, and the trace's later
// spans follow as they end. A trace is open until its local root ends:
// the first span of the trace started through the provider, normally the
// outermost invoke_agent span, or a span with a remote parent, or one
// under a span of another TracerProvider (the application's HTTP server
// span, say). Then it is decided on latency and share. Spans that end
// after the decision follow it (the last 10000 decisions are remembered,
// [WithMaxDecidedTraces]); an error among the late spans of a dropped
// trace keeps what is left of it.
//
// Memory is bounded by a span budget: at most 10000 spans of open traces
// held, 1000 of one trace, and 10000 open traces tracked, by default
// ([WithMaxSpans], [WithMaxSpansPerTrace], [WithMaxTraces]). When the
// budget is reached, the oldest open trace holding spans is evicted, one
// evicted before first, since it is no longer whole anyway. An evicted
// trace whose decision is known already (in the share, or open for at
// least the latency threshold) is kept then, whole; any other has its
// held spans dropped, and if an error or its latency keeps it later it
// goes downstream partial. [Provider.Stats] reports every decision and
// every span in Stats.TailSampling: PartialTraces counts the kept traces
// that miss spans, EvictedTraces and EvictedSpans the evictions; a kept
// trace not counted in PartialTraces went downstream whole.
//
// The sampler is a span processor that wraps the backends' processors,
// not an exporter: it sees each span as it ends, before any backend
// queues it, so a dropped trace never takes room in a backend's queue nor
// counts as exported, one buffer and one decision serve every backend,
// and a kept trace then goes through each backend's bounded queue and
// loss accounting as usual, ranked, so that a full queue sheds the traces
// kept only by the share before any span of an errored or slow trace (see
// above). Processors added with [WithSpanProcessor], such as the flight
// recorder's, are not behind it: they see every span.
//
// [Provider.ForceFlush] exports every kept span, with the held spans of
// open traces whose decision is known already (in the share, or open for
// at least the latency threshold); other open traces stay held, since
// their error or latency is not known yet. [Provider.Shutdown] decides the
// open traces on what they have, as an eviction does, and drops the rest
// (an errored one went on at its error).
//
// For several processes, sample in an OpenTelemetry Collector instead:
// deploy/otel-collector.yaml (docker-compose.otel.yml) has a tail-sampling
// pipeline, and deploy/jaeger-tailsampling.yaml runs the same policies in
// the Jaeger v2 binary alone.
//
// # The file format
//
// The file backend writes one OTLP ExportTraceServiceRequest per line in
// OTLP/JSON, produced from the SDK's own OTLP protobuf conversion by
// protojson (IDs in hex, enums as numbers, as OTLP/JSON requires). A line
// is a valid body for POST /v1/traces with Content-Type application/json,
// so a recorded file can be replayed into Jaeger or a collector later;
// the flightrec command shows it (flightrec runs, flightrec ui).
package exporters
