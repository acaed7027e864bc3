package exporters

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
)

// NewOTLP returns a provider that sends spans over OTLP/HTTP (protobuf) to
// Jaeger, an OpenTelemetry Collector or any OTLP backend.
//
// The URL comes from [WithEndpointURL], else OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
// (used as is), else OTEL_EXPORTER_OTLP_ENDPOINT with "/v1/traces" appended,
// else http://localhost:4318/v1/traces (a local Jaeger). The other
// OTEL_EXPORTER_OTLP_* variables (headers, timeout, compression,
// certificates, protocol) are honoured as the otlptracehttp package
// documents. The service name comes from [WithServiceName], else
// OTEL_SERVICE_NAME, else "harnessx".
//
// NewOTLP does not connect: an unreachable backend shows as failed exports
// in [Provider.Stats], never as a slow run.
func NewOTLP(ctx context.Context, opts ...Option) (*Provider, error) {
	c, err := newConfig(bOTLP, opts)
	if err != nil {
		return nil, err
	}
	spec, err := otlpBackend(ctx, &c)
	if err != nil {
		return nil, err
	}
	return newProvider(ctx, &c, []backendSpec{spec})
}

// NewLangSmith returns a provider that sends spans to LangSmith over
// OTLP/HTTP: to {LANGSMITH_ENDPOINT}/otel/v1/traces (default endpoint
// https://api.smith.langchain.com), with the API key from [WithAPIKey] or
// LANGSMITH_API_KEY in the x-api-key header and the project from
// [WithProject] or LANGSMITH_PROJECT in the Langsmith-Project header. It
// returns [ErrNoAPIKey] without an API key.
//
// LangSmith reads the langsmith.* and gen_ai.* attributes the tracing
// extension sets: span kinds, model and provider, usage and prompts. The
// provider reports that it sends to LangSmith ([Provider.SendsToLangSmith]),
// so the extension sets the langsmith.* keys for it, and leaves them out
// for providers whose backends are all elsewhere.
func NewLangSmith(ctx context.Context, opts ...Option) (*Provider, error) {
	c, err := newConfig(bLangSmith, opts)
	if err != nil {
		return nil, err
	}
	spec, err := langSmithBackend(ctx, &c)
	if err != nil {
		return nil, err
	}
	return newProvider(ctx, &c, []backendSpec{spec})
}

// otlpEndpoint resolves the OTLP traces URL.
func otlpEndpoint(c *config) string {
	if c.endpoint != "" {
		return c.endpoint
	}
	if v := strings.TrimSpace(os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")); v != "" {
		return v
	}
	base := strings.TrimSpace(os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
	if base == "" {
		base = defaultOTLPEndpoint
	}
	return strings.TrimRight(base, "/") + "/v1/traces"
}

// langSmithEndpoint resolves the LangSmith traces URL.
func langSmithEndpoint(c *config) string {
	base := c.lsEndpoint
	if base == "" {
		base = strings.TrimSpace(os.Getenv("LANGSMITH_ENDPOINT"))
	}
	if base == "" {
		base = defaultLangSmith
	}
	return strings.TrimRight(base, "/") + "/otel/v1/traces"
}

func checkURL(u string) error {
	pu, err := url.Parse(u)
	if err != nil {
		return fmt.Errorf("%w: %q: %v", ErrInvalidEndpoint, u, err)
	}
	if (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
		return fmt.Errorf("%w: %q: want an http or https URL with a host", ErrInvalidEndpoint, u)
	}
	return nil
}

func otlpBackend(ctx context.Context, c *config) (backendSpec, error) {
	u := otlpEndpoint(c)
	if err := checkURL(u); err != nil {
		return backendSpec{}, err
	}
	opts := httpOptions(c, u)
	if c.headers != nil {
		opts = append(opts, otlptracehttp.WithHeaders(c.headers))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return backendSpec{}, fmt.Errorf("exporters: otlp: %w", err)
	}
	return backendSpec{Backend{Name: "otlp", Target: u}, exp}, nil
}

func langSmithBackend(ctx context.Context, c *config) (backendSpec, error) {
	key := c.lsAPIKey
	if key == "" {
		key = strings.TrimSpace(os.Getenv("LANGSMITH_API_KEY"))
	}
	if key == "" {
		return backendSpec{}, ErrNoAPIKey
	}
	project := c.lsProject
	if project == "" {
		project = strings.TrimSpace(os.Getenv("LANGSMITH_PROJECT"))
	}
	u := langSmithEndpoint(c)
	if err := checkURL(u); err != nil {
		return backendSpec{}, err
	}
	headers := map[string]string{"x-api-key": key}
	if project != "" {
		headers["Langsmith-Project"] = project
	}
	opts := append(httpOptions(c, u), otlptracehttp.WithHeaders(headers))
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return backendSpec{}, fmt.Errorf("exporters: langsmith: %w", err)
	}
	return backendSpec{Backend{Name: "langsmith", Target: u}, exp}, nil
}

// httpOptions are the otlptracehttp options both HTTP backends share. The
// retries fit inside one export's time budget, so a backend that answers
// "busy" is retried but a dead one costs one failed export per batch.
func httpOptions(c *config, u string) []otlptracehttp.Option {
	opts := []otlptracehttp.Option{
		otlptracehttp.WithEndpointURL(u),
		otlptracehttp.WithTimeout(c.exportTimeout),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{
			Enabled:         true,
			InitialInterval: 250 * time.Millisecond,
			MaxInterval:     2 * time.Second,
			MaxElapsedTime:  c.exportTimeout,
		}),
	}
	if c.httpClient != nil {
		opts = append(opts, otlptracehttp.WithHTTPClient(c.httpClient))
	}
	return opts
}
