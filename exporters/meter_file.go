package exporters

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// MetricsFile returns the path the file meter backend would use with
// opts: the [WithMetricsFile] path, else HARNESSX_METRICS_FILE, else
// .harnessx/metrics.jsonl.
func MetricsFile(opts ...Option) string {
	c := settings(opts)
	return metricsFile(&c)
}

func metricsFile(c *config) string {
	if c.meter.filePath != "" {
		return c.meter.filePath
	}
	if v := strings.TrimSpace(os.Getenv("HARNESSX_METRICS_FILE")); v != "" {
		return v
	}
	return defaultMetricsFile
}

// fileMeterBackend builds the file backend: the OTLP/HTTP metric exporter
// (so that the conversion to OTLP is the library's own) over an HTTP
// transport that writes each request to the file as an OTLP/JSON line
// instead of sending it.
func fileMeterBackend(ctx context.Context, c *config) (meterSpec, error) {
	t := &metricsFileTransport{w: c.meter.writer}
	target := "writer"
	if t.w == nil {
		path := metricsFile(c)
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return meterSpec{}, fmt.Errorf("exporters: metrics file: %w", err)
		}
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return meterSpec{}, fmt.Errorf("exporters: metrics file: %w", err)
		}
		t.w, t.closer, target = f, f, path
	}
	exp, err := otlpmetrichttp.New(ctx,
		otlpmetrichttp.WithEndpointURL(fileMetricsURL),
		otlpmetrichttp.WithHTTPClient(&http.Client{Transport: t}),
		otlpmetrichttp.WithCompression(otlpmetrichttp.NoCompression),
		otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: false}),
	)
	if err != nil {
		_ = t.close()
		return meterSpec{}, fmt.Errorf("exporters: metrics file: %w", err)
	}
	return meterSpec{Backend{Name: "file", Target: target}, &fileMetricExporter{exp, t}}, nil
}

// fileMetricExporter closes the file after the exporter shuts down.
type fileMetricExporter struct {
	sdkmetric.Exporter
	t *metricsFileTransport
}

func (e *fileMetricExporter) Shutdown(ctx context.Context) error {
	err := e.Exporter.Shutdown(ctx)
	if cerr := e.t.close(); err == nil {
		err = cerr
	}
	return err
}

// metricsFileTransport is an http.RoundTripper that decodes each OTLP
// protobuf metrics request and writes it as one OTLP/JSON line, answering
// as a collector would. Each line is written with one Write call.
type metricsFileTransport struct {
	mu     sync.Mutex
	w      io.Writer
	closer io.Closer // nil when the writer is the caller's
	closed bool
}

func (t *metricsFileTransport) close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	t.closed = true
	if t.closer != nil {
		return t.closer.Close()
	}
	return nil
}

func (t *metricsFileTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	defer req.Body.Close()
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			return nil, fmt.Errorf("exporters: metrics file: %w", err)
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		return nil, fmt.Errorf("exporters: metrics file: %w", err)
	}
	var m colmetricpb.ExportMetricsServiceRequest
	if err := proto.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("exporters: metrics file: decoding the exporter's request: %w", err)
	}
	line, err := marshalMetricsJSON(&m)
	if err != nil {
		return nil, err
	}
	line = append(line, '\n')
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, errNoMetricsWriter
	}
	_, err = t.w.Write(line)
	t.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("exporters: metrics file: %w", err)
	}
	out, _ := proto.Marshal(&colmetricpb.ExportMetricsServiceResponse{})
	return &http.Response{
		StatusCode:    http.StatusOK,
		Status:        "200 OK",
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": []string{"application/x-protobuf"}},
		Body:          io.NopCloser(bytes.NewReader(out)),
		ContentLength: int64(len(out)),
		Request:       req,
	}, nil
}

// marshalMetricsJSON encodes m in OTLP/JSON: compact, enums as numbers,
// and the trace and span IDs of exemplars as hex (protojson writes bytes
// as base64).
func marshalMetricsJSON(m *colmetricpb.ExportMetricsServiceRequest) ([]byte, error) {
	raw, err := protojson.MarshalOptions{UseEnumNumbers: true}.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("exporters: metrics file: %w", err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, fmt.Errorf("exporters: metrics file: %w", err)
	}
	if !hasExemplarIDs(m) {
		return buf.Bytes(), nil
	}
	// Rewrite the IDs in a generic decoding; numbers stay as written.
	dec := json.NewDecoder(&buf)
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("exporters: metrics file: %w", err)
	}
	if err := hexExemplarIDs(v, false); err != nil {
		return nil, fmt.Errorf("exporters: metrics file: %w", err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("exporters: metrics file: %w", err)
	}
	return out, nil
}

func hasExemplarIDs(m *colmetricpb.ExportMetricsServiceRequest) bool {
	has := func(exs []*metricpb.Exemplar) bool {
		for _, ex := range exs {
			if len(ex.TraceId) > 0 || len(ex.SpanId) > 0 {
				return true
			}
		}
		return false
	}
	for _, rm := range m.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			for _, mt := range sm.Metrics {
				for _, dp := range mt.GetHistogram().GetDataPoints() {
					if has(dp.Exemplars) {
						return true
					}
				}
				for _, dp := range mt.GetExponentialHistogram().GetDataPoints() {
					if has(dp.Exemplars) {
						return true
					}
				}
				for _, dp := range mt.GetSum().GetDataPoints() {
					if has(dp.Exemplars) {
						return true
					}
				}
				for _, dp := range mt.GetGauge().GetDataPoints() {
					if has(dp.Exemplars) {
						return true
					}
				}
			}
		}
	}
	return false
}

// hexExemplarIDs rewrites, in the objects of "exemplars" arrays, the
// base64 traceId and spanId values as hex.
func hexExemplarIDs(v any, inExemplar bool) error {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if inExemplar && (k == "traceId" || k == "spanId") {
				s, ok := x.(string)
				if !ok {
					continue
				}
				id, err := base64.StdEncoding.DecodeString(s)
				if err != nil {
					return fmt.Errorf("exemplar %s: %w", k, err)
				}
				t[k] = hex.EncodeToString(id)
				continue
			}
			if err := hexExemplarIDs(x, k == "exemplars"); err != nil {
				return err
			}
		}
	case []any:
		for _, x := range t {
			if err := hexExemplarIDs(x, inExemplar); err != nil {
				return err
			}
		}
	}
	return nil
}
