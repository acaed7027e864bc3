package tracing

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/internal/redact"
	"github.com/harnessx/harnessx/pricing"
)

// ExtensionName is the name the extension installs under.
const ExtensionName = "tracing"

// ScopeName is the instrumentation scope of the tracer the extension uses.
const ScopeName = "github.com/harnessx/harnessx/extensions/tracing"

// DefaultMaxAttributeBytes is the default cap on one captured value.
const DefaultMaxAttributeBytes = 64 << 10

// Priority is the extension's install priority: it installs before the
// extensions of default priority, so its interceptors run outside theirs
// and their work (and their hooks' contexts) sees its spans.
const Priority = 10

// CaptureContentEnv is the environment variable that turns content capture
// off ("false", "0" or "no", any case) when [WithCaptureContent] is not
// given.
const CaptureContentEnv = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

// Sentinel errors. Match them with [errors.Is].
var (
	// ErrInvalidConfig is wrapped by the [*ConfigError] that Install
	// returns for an invalid option.
	ErrInvalidConfig = errors.New("tracing: invalid configuration")
	// ErrAlreadyInstalled is returned by Install when the extension is
	// already installed on an agent: use a fresh extension for each agent.
	ErrAlreadyInstalled = errors.New("tracing: extension already installed; use a fresh one for each agent")
)

// ConfigError reports an invalid option. It wraps [ErrInvalidConfig].
type ConfigError struct {
	Option string // the option's function name
	Reason string
}

// Error describes the invalid option.
func (e *ConfigError) Error() string {
	return fmt.Sprintf("tracing: %s: %s", e.Option, e.Reason)
}

// Unwrap returns ErrInvalidConfig.
func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

// Option configures an [Extension].
type Option func(*config)

// config holds the extension's settings. Defaults:
//   - tracer provider: otel.GetTracerProvider() at Install time;
//   - content capture on, unless CaptureContentEnv says otherwise;
//   - the built-in secret rules on (internal/redact, the rules the flight
//     recorder applies), no redactor function;
//   - max attribute bytes DefaultMaxAttributeBytes (64 KiB);
//   - media parts by reference, without their bytes; with
//     WithCaptureMediaBytes, bytes up to DefaultMaxMediaBytes (32 KiB) a
//     part; no part uploader;
//   - provider name from the provider (harness.ProviderNamer), else
//     learnt from the responses ("unknown" until then);
//   - LangSmith's mirror attributes (langsmith.*): on, unless the tracer
//     provider says whether spans go to LangSmith ([LangSmithReporter],
//     which exporters.Provider implements);
//   - no gen_ai.prompt / gen_ai.completion copies;
//   - no metrics (no MeterProvider);
//   - prices: pricing.FromEnv() at Install (the built-in table, which
//     HARNESSX_PRICES may extend or turn off).
type config struct {
	tp           trace.TracerProvider
	tpSet        bool
	mp           metric.MeterProvider
	mpSet        bool
	prices       *pricing.Table
	pricesSet    bool
	capture      bool
	captureSet   bool
	redact       func(key, value string) string
	noBuiltin    bool
	maxBytes     int
	providerName string
	promptKeys   bool
	mirror       bool
	mirrorSet    bool
	// media parts
	mediaBytes    bool
	maxMediaBytes int
	uploader      PartUploader
}

// WithTracerProvider sets the TracerProvider the spans are created with.
// Default: otel.GetTracerProvider() when the extension is installed. The
// extension never sets the global provider.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tp, c.tpSet = tp, true }
}

// WithMeterProvider makes the extension record the GenAI metrics too,
// with instruments from mp (see the package documentation, Metrics).
// Default: no metrics, at no cost; the extension never uses the global
// MeterProvider. exporters.NewMeterProvider and exporters.MetersFromEnv
// build one.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.mp, c.mpSet = mp, true }
}

// WithCaptureContent turns the recording of prompts, messages, tool
// definitions, arguments and results on or off. Default on, unless the
// environment variable OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT is
// "false", "0" or "no"; this option, when given, wins over the variable.
// Off, the spans keep their structure, usage, statuses and prefix keys, and
// tool definitions keep only their names.
func WithCaptureContent(on bool) Option {
	return func(c *config) { c.capture, c.captureSet = on, true }
}

// WithRedactor sets a function that every captured string value passes
// through, after the built-in secret rules ([WithBuiltinRedaction]), before
// it is set on a span; key is the attribute key (error
// messages used as span status descriptions pass with the key
// "otel.status_description"). It must be safe for concurrent use (tool
// calls run in parallel), fast and deterministic: the encoded system
// prompt and tool definitions are reused while they do not change. Values
// it changes are counted in [Stats].Redacted.
func WithRedactor(r func(key, value string) string) Option {
	return func(c *config) { c.redact = r }
}

// WithBuiltinRedaction turns the built-in secret rules on or off. Default
// on: every captured value (system instructions, input and output
// messages, tool definitions, tool call arguments and results, error
// messages) has its secrets replaced by markers such as
// [REDACTED:anthropic-key] before it is set, by the rules the flight
// recorder applies (see the package documentation). A [WithRedactor]
// function runs after them either way. Values they change are counted in
// [Stats].Redacted.
func WithBuiltinRedaction(on bool) Option {
	return func(c *config) { c.noBuiltin = !on }
}

// WithMaxAttributeBytes caps each captured value at n bytes (after the
// redactor). A longer value is cut at a UTF-8 boundary and ends with a
// marker giving its full length and SHA-256; the result fits in n bytes
// when n leaves room for the marker (about 110 bytes). Default 64 KiB; n
// must be positive.
func WithMaxAttributeBytes(n int) Option {
	return func(c *config) { c.maxBytes = n }
}

// WithCaptureMediaBytes makes captured messages and tool results carry
// the bytes of their inline media parts (images, documents, audio) as
// blob parts, base64 as the GenAI conventions say, up to
// [WithMaxMediaBytes] a part. Default off: an inline part is recorded as
// a uri part whose uri is its artifact reference (or the
// [WithPartUploader] URI), with its size and SHA-256. A part over the cap
// is recorded that way too, marked "truncated": true, and counts its
// value as truncated. It has no effect with content capture off. The
// bytes count towards [WithMaxAttributeBytes]: a value cut there is cut
// JSON, so raise that cap with this option.
func WithCaptureMediaBytes(on bool) Option {
	return func(c *config) { c.mediaBytes = on }
}

// WithMaxMediaBytes caps the bytes of one media part that
// [WithCaptureMediaBytes] records inline at n. Default
// [DefaultMaxMediaBytes] (32 KiB); n must be positive.
func WithMaxMediaBytes(n int) Option {
	return func(c *config) { c.maxMediaBytes = n }
}

// WithPartUploader sets a function that stores the bytes of an inline
// media part and returns a URI for them, which the span records in place
// of the part's artifact reference (artifact:sha256:<hex>), as
// OpenTelemetry's GenAI utilities upload content through a hook and keep
// a reference. It is called for each inline part whose bytes a captured
// value does not carry (all of them by default; with
// [WithCaptureMediaBytes], those over the cap), once per distinct bytes:
// the extension remembers the URIs by SHA-256 (up to 1024, then it starts
// afresh). It runs on the goroutine that ends the span, so it may hold up
// the run: it should be quick or bound its own time. ctx is the span's
// context without its cancellation. It must be safe for concurrent use.
// An error or a panic is counted ([Stats].UploadErrors) and logged at
// Warn, and the span records the artifact reference: the run never fails
// for it, and the part is tried again the next time it is recorded. An
// empty URI without an error declines the part, which keeps its
// reference. The URI passes through the built-in secret rules and the
// [WithRedactor] function like the rest of the value. It is not called
// with content capture off, nor for spans that are not recorded (not
// sampled).
func WithPartUploader(up PartUploader) Option {
	return func(c *config) { c.uploader = up }
}

// WithProviderName sets gen_ai.provider.name and ls_provider for requests
// whose provider does not name itself (harness.ProviderNamer, which the
// harnessx providers implement) and whose response names none, failed
// requests above all. Without it the extension uses the name the last
// response reported.
func WithProviderName(name string) Option {
	return func(c *config) { c.providerName = name }
}

// WithLangSmithPromptKeys also sets the captured inputs and outputs under
// gen_ai.prompt and gen_ai.completion (messages on chat and agent spans,
// arguments and result on tool spans), the keys that LangSmith's OTel
// ingestion documents for a run's inputs and outputs. The values are the
// same strings as gen_ai.input.messages and the others, so it costs no
// copy in the process, but it doubles the content in the exported data.
// Default off. It has no effect with content capture off.
func WithLangSmithPromptKeys(on bool) Option {
	return func(c *config) { c.promptKeys = on }
}

// WithLangSmithMirror turns on or off the attributes that repeat, for
// LangSmith, what the OpenTelemetry GenAI keys already say: on every span
// langsmith.span.kind, langsmith.trace.name and
// langsmith.metadata.session_id, and on chat spans
// langsmith.metadata.ls_model_name, ls_provider, prefix_key and
// langsmith.usage_metadata. LangSmith needs them (it maps neither
// invoke_agent nor execute_tool spans by itself, and prices from
// usage_metadata); other backends do not. Off, each span carries 3 fewer
// attributes and each chat span 7 fewer, which the SDK, the exporters and
// the backend all save.
//
// Without this option the tracer provider decides when it is a
// [LangSmithReporter] (an exporters.Provider is: mirrors on exactly when
// one of its backends is LangSmith); any other provider gets them, because
// the extension cannot see where its spans go. Give the option to forward
// spans to LangSmith through a collector, or to drop the mirrors from
// spans a provider of your own sends elsewhere.
func WithLangSmithMirror(on bool) Option {
	return func(c *config) { c.mirror, c.mirrorSet = on, true }
}

// LangSmithReporter is implemented by a TracerProvider that knows whether
// its spans go to LangSmith. exporters.Provider implements it. Unless
// [WithLangSmithMirror] is given, the extension sets LangSmith's mirror
// attributes exactly when its provider's SendsToLangSmith returns true.
type LangSmithReporter interface {
	SendsToLangSmith() bool
}

// Mirrors reports whether the installed extension sets LangSmith's mirror
// attributes ([WithLangSmithMirror]); before Install, what the options
// alone say.
func (e *Extension) Mirrors() bool { return e.cfg.mirror }

// Extension is the tracing extension. Build it with [New] and install it on
// one agent with harness.WithExtensions. Its methods are safe for
// concurrent use.
type Extension struct {
	cfg    config
	tracer trace.Tracer
	tp     trace.TracerProvider // set at Install
	m      *meters              // set at Install; nil without metrics
	// prices is the price table, set at Install; nil without costs.
	prices     *pricing.Table
	pricesAsOf attribute.KeyValue
	unpriced   nameSet // the models logged as having no price
	logger     *slog.Logger
	ec         *harness.ExtensionContext
	installed  atomic.Bool

	// provider is the last provider name a response reported.
	provider atomic.Pointer[string]
	// cache holds encodings that rarely change between requests.
	cache encCache
	names nameCache
	// red applies the built-in secret rules; nil when they are off.
	red *redact.Redactor
	// history keeps the encoding of the conversation so far: each model
	// request encodes (and redacts) only the messages added since the
	// previous one.
	history historyCache
	// uploads remembers the part uploader's URIs by SHA-256.
	uploads uploadCache
	bufs    sync.Pool // *[]byte
	kvs     sync.Pool // *[]attribute.KeyValue

	kindInternal, kindClient trace.SpanStartOption
	finishKVs                map[string]attribute.KeyValue // read-only after New

	stats counters
}

var (
	_ harness.Extension   = (*Extension)(nil)
	_ harness.Prioritizer = (*Extension)(nil)
)

// New returns a tracing extension configured by opts.
func New(opts ...Option) *Extension {
	e := &Extension{cfg: config{capture: true, mirror: true, maxBytes: DefaultMaxAttributeBytes, maxMediaBytes: DefaultMaxMediaBytes}}
	for _, o := range opts {
		o(&e.cfg)
	}
	if !e.cfg.noBuiltin {
		e.red = redact.Builtin()
		e.history.red = e.red
	}
	e.bufs.New = func() any { b := make([]byte, 0, 1024); return &b }
	e.kvs.New = func() any { kv := make([]attribute.KeyValue, 0, 48); return &kv }
	e.kindInternal = trace.WithSpanKind(trace.SpanKindInternal)
	e.kindClient = trace.WithSpanKind(trace.SpanKindClient)
	e.finishKVs = make(map[string]attribute.KeyValue, 4)
	for _, r := range []string{"stop", "length", "tool_call", "content_filter"} {
		e.finishKVs[r] = semconv.GenAIResponseFinishReasons(r)
	}
	return e
}

// TracerProvider returns the provider the extension's spans come from:
// the one given with [WithTracerProvider], else the global provider it
// found at Install; nil before Install. Other extensions find it through
// this method (the flight recorder registers its span processor on it
// when it is an OpenTelemetry SDK provider).
func (e *Extension) TracerProvider() trace.TracerProvider { return e.tp }

// Name returns "tracing".
func (e *Extension) Name() string { return ExtensionName }

// Priority returns [Priority].
func (e *Extension) Priority() int { return Priority }

// Install resolves the tracer provider and the content-capture setting and
// registers the extension's run, model and tool interceptors. It fails with
// a [*ConfigError] for an invalid option and with [ErrAlreadyInstalled] on
// a second install.
func (e *Extension) Install(ec *harness.ExtensionContext) error {
	c := &e.cfg
	if c.tpSet && c.tp == nil {
		return &ConfigError{Option: "WithTracerProvider", Reason: "nil TracerProvider"}
	}
	if c.mpSet && c.mp == nil {
		return &ConfigError{Option: "WithMeterProvider", Reason: "nil MeterProvider"}
	}
	if c.maxBytes <= 0 {
		return &ConfigError{Option: "WithMaxAttributeBytes", Reason: fmt.Sprintf("%d is not positive", c.maxBytes)}
	}
	if c.maxMediaBytes <= 0 {
		return &ConfigError{Option: "WithMaxMediaBytes", Reason: fmt.Sprintf("%d is not positive", c.maxMediaBytes)}
	}
	if !e.installed.CompareAndSwap(false, true) {
		return ErrAlreadyInstalled
	}
	tp := c.tp
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if r, ok := tp.(LangSmithReporter); ok && !c.mirrorSet {
		c.mirror = r.SendsToLangSmith()
	}
	if !c.captureSet {
		c.capture = captureFromEnv(os.Getenv(CaptureContentEnv))
	}
	prices := c.prices
	if !c.pricesSet {
		var err error
		if prices, err = pricing.FromEnv(); err != nil {
			e.installed.Store(false)
			return &ConfigError{Option: "WithPricing (default from " + pricing.EnvPrices + ")", Reason: err.Error()}
		}
	} else if prices != nil {
		if err := prices.Err(); err != nil {
			e.installed.Store(false)
			return &ConfigError{Option: "WithPricing", Reason: err.Error()}
		}
	}
	if prices != nil {
		e.prices, e.pricesAsOf = prices, KeyCostPricesAsOf.String(prices.AsOf())
	}
	e.logger = ec.Logger()
	if c.mp != nil {
		m, err := newMeters(c.mp)
		if err != nil {
			e.installed.Store(false)
			return fmt.Errorf("tracing: creating instruments: %w", err)
		}
		e.m = m
	}
	e.tp = tp
	e.tracer = tp.Tracer(ScopeName, trace.WithSchemaURL(semconv.SchemaURL))
	e.ec = ec
	if _, err := ec.AddMiddleware(interceptors{e}); err != nil {
		e.installed.Store(false)
		return err
	}
	if ec.Supports(harness.FeatureToolUpdates) {
		if _, err := ec.OnHook(harness.EventToolUpdate, e.toolUpdate); err != nil {
			e.installed.Store(false)
			return err
		}
	}
	return nil
}

// captureFromEnv reads CaptureContentEnv: only an explicit false turns
// capture off.
func captureFromEnv(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "false", "0", "no", "off":
		return false
	}
	return true
}

// CaptureContent reports whether the extension records content. Before
// Install it reports the option's value, or the default.
func (e *Extension) CaptureContent() bool { return e.cfg.capture }

// Stats counts what the extension recorded. All counts are since New.
type Stats struct {
	// Runs, ModelRequests and ToolCalls count the invoke_agent, chat and
	// execute_tool spans started.
	Runs, ModelRequests, ToolCalls int64
	// Errors counts spans ended with status Error.
	Errors int64
	// Redacted counts captured values that the built-in secret rules or
	// the redactor function changed.
	Redacted int64
	// Truncated counts captured values cut at the attribute cap or
	// holding a media part over the byte cap of [WithCaptureMediaBytes],
	// and TruncatedBytes the bytes cut from them and the sizes of those
	// parts.
	Truncated, TruncatedBytes int64
	// UploadErrors counts the calls of the [WithPartUploader] function
	// that failed (an error or a panic).
	UploadErrors int64
}

type counters struct {
	runs, model, tools, errors, redacted, truncated, truncatedBytes, uploadErrors atomic.Int64
}

// Stats returns the counts so far.
func (e *Extension) Stats() Stats {
	s := &e.stats
	return Stats{
		Runs:           s.runs.Load(),
		ModelRequests:  s.model.Load(),
		ToolCalls:      s.tools.Load(),
		Errors:         s.errors.Load(),
		Redacted:       s.redacted.Load(),
		Truncated:      s.truncated.Load(),
		TruncatedBytes: s.truncatedBytes.Load(),
		UploadErrors:   s.uploadErrors.Load(),
	}
}
