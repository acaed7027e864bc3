package push

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
)

// DefaultLangSmithEndpoint is LangSmith's API root when LANGSMITH_ENDPOINT
// is not set.
const DefaultLangSmithEndpoint = "https://api.smith.langchain.com"

// ErrNoAPIKey is returned for LangSmith without LANGSMITH_API_KEY.
var ErrNoAPIKey = errors.New("LANGSMITH_API_KEY is not set")

// Target says where spans go.
type Target struct {
	// URL is the full traces URL; empty leaves the choice to the OTLP
	// exporter's environment (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
	// OTEL_EXPORTER_OTLP_ENDPOINT, default http://localhost:4318/v1/traces).
	URL     string
	Headers map[string]string
	// Display is the URL as shown to the user.
	Display string
}

// Resolve chooses the target from the --endpoint flag, the --langsmith
// flag and the environment (getenv).
func Resolve(endpoint string, langsmith bool, getenv func(string) string) (Target, error) {
	if langsmith {
		key := getenv("LANGSMITH_API_KEY")
		if key == "" {
			return Target{}, ErrNoAPIKey
		}
		root := getenv("LANGSMITH_ENDPOINT")
		if endpoint != "" {
			root = endpoint
		}
		if root == "" {
			root = DefaultLangSmithEndpoint
		}
		h := map[string]string{"x-api-key": key}
		if p := getenv("LANGSMITH_PROJECT"); p != "" {
			h["Langsmith-Project"] = p
		}
		u := strings.TrimSuffix(root, "/") + "/otel/v1/traces"
		return Target{URL: u, Headers: h, Display: u}, checkURL(u)
	}
	if endpoint != "" {
		u, err := url.Parse(endpoint)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return Target{}, fmt.Errorf("invalid endpoint %q: want http(s)://host[:port][/path]", endpoint)
		}
		if u.Path == "" || u.Path == "/" {
			u.Path = "/v1/traces"
		}
		return Target{URL: u.String(), Display: u.String()}, nil
	}
	display := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if display == "" {
		if e := getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); e != "" {
			display = strings.TrimSuffix(e, "/") + "/v1/traces"
		} else {
			display = "http://localhost:4318/v1/traces"
		}
	}
	return Target{Display: display}, nil
}

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("invalid endpoint %q", s)
	}
	return nil
}

// Send uploads req's spans to t with otlptracehttp's client, retrying
// until timeout.
func Send(ctx context.Context, t Target, req *coltracepb.ExportTraceServiceRequest, timeout time.Duration) error {
	opts := []otlptracehttp.Option{
		otlptracehttp.WithTimeout(timeout),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{
			Enabled: true, InitialInterval: 200 * time.Millisecond, MaxInterval: 2 * time.Second, MaxElapsedTime: timeout,
		}),
	}
	if t.URL != "" {
		opts = append(opts, otlptracehttp.WithEndpointURL(t.URL))
	}
	if len(t.Headers) > 0 {
		opts = append(opts, otlptracehttp.WithHeaders(t.Headers))
	}
	c := otlptracehttp.NewClient(opts...)
	if err := c.Start(ctx); err != nil {
		return err
	}
	err := c.UploadTraces(ctx, req.GetResourceSpans())
	return errors.Join(err, c.Stop(context.WithoutCancel(ctx)))
}
