package push

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"regexp"
	"strings"
	"syscall"
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
	// URL is the full traces URL. An http:// URL is sent without TLS.
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
	// The endpoint is always set explicitly: left empty, the OTLP exporter
	// would fall back to localhost:4318 over TLS, not the plain HTTP that
	// is the documented default.
	u := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if u == "" {
		if e := getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); e != "" {
			u = strings.TrimSuffix(e, "/") + "/v1/traces"
		} else {
			u = DefaultEndpoint
		}
	}
	return Target{URL: u, Display: u}, checkURL(u)
}

// DefaultEndpoint is where spans go without --endpoint and without the
// OTLP environment variables.
const DefaultEndpoint = "http://localhost:4318/v1/traces"

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("invalid endpoint %q", s)
	}
	return nil
}

// Backoff bounds the waits between two attempts of [Send]: the first
// wait is Initial (default 100ms), and each next one doubles up to Max
// (default 2s). The zero value means the defaults.
type Backoff struct {
	Initial, Max time.Duration
}

// GiveUpError is returned when the upload still failed at the deadline.
type GiveUpError struct {
	Attempts int
	Elapsed  time.Duration
	Err      error // the last attempt's error
}

func (e *GiveUpError) Error() string {
	return fmt.Sprintf("gave up after %d attempts in %s: %v", e.Attempts, e.Elapsed.Round(10*time.Millisecond), e.Err)
}

func (e *GiveUpError) Unwrap() error { return e.Err }

// Send uploads req's spans to t with otlptracehttp's client. A refused or
// reset connection, a timeout and a 5xx or 429 answer are retried with
// backoff b until timeout has passed (or ctx is done); other failures
// return at once. onRetry, if not nil, is called after each failed
// attempt that will be retried, with the attempt's number and error.
func Send(ctx context.Context, t Target, req *coltracepb.ExportTraceServiceRequest, timeout time.Duration, b Backoff, onRetry func(attempt int, err error)) error {
	if b.Initial <= 0 {
		b.Initial = 100 * time.Millisecond
	}
	if b.Max <= 0 {
		b.Max = 2 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	opts := []otlptracehttp.Option{
		otlptracehttp.WithEndpointURL(t.URL),
		otlptracehttp.WithTimeout(timeout),
		// The exporter retries 429, 502, 503 and 504 itself (honouring
		// Retry-After); Send retries what it does not.
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{
			Enabled: true, InitialInterval: b.Initial, MaxInterval: b.Max, MaxElapsedTime: timeout,
		}),
	}
	if len(t.Headers) > 0 {
		opts = append(opts, otlptracehttp.WithHeaders(t.Headers))
	}
	c := otlptracehttp.NewClient(opts...)
	if err := c.Start(ctx); err != nil {
		return err
	}
	defer c.Stop(context.WithoutCancel(ctx))
	start := time.Now()
	wait := b.Initial
	var last error // the last retryable failure
	for attempt := 1; ; attempt++ {
		err := c.UploadTraces(ctx, req.GetResourceSpans())
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil && last != nil:
			// The deadline cut this attempt short: report why the
			// earlier ones failed.
			return &GiveUpError{Attempts: attempt - 1, Elapsed: time.Since(start), Err: last}
		case !retryable(err):
			return err
		}
		last = err
		if deadline, ok := ctx.Deadline(); ok {
			wait = min(wait, time.Until(deadline))
		}
		if wait <= 0 {
			return &GiveUpError{Attempts: attempt, Elapsed: time.Since(start), Err: err}
		}
		if onRetry != nil {
			onRetry(attempt, err)
		}
		select {
		case <-ctx.Done():
			return &GiveUpError{Attempts: attempt, Elapsed: time.Since(start), Err: err}
		case <-time.After(wait):
		}
		wait = min(2*wait, b.Max)
	}
}

// status5xx finds the HTTP status in the exporter's error for an answer
// it does not retry ("failed to send to URL: 500 Internal Server Error").
var status5xx = regexp.MustCompile(`: (5\d\d|429) [A-Za-z]`)

func retryable(err error) bool {
	var ne net.Error
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return true
	case errors.As(err, &ne) && ne.Timeout():
		return true
	}
	return status5xx.MatchString(err.Error()) || strings.Contains(err.Error(), "retry-able request failure")
}

// Cause is a short reason for a failed attempt, for people: "connection
// refused", "connection reset", "no answer", the HTTP status, or the
// error itself.
func Cause(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "connection reset"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "no answer"
	}
	if m := status5xx.FindStringSubmatch(err.Error()); m != nil {
		return "HTTP " + m[1]
	}
	return err.Error()
}
