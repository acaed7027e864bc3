package exporters_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/harnessx/harnessx/exporters"
	"github.com/harnessx/harnessx/extensions/tracing"
	"github.com/harnessx/harnessx/harness"
	"github.com/harnessx/harnessx/harness/harnesstest"
)

// clearMeterEnv clears the variables the meter builders read, besides
// those clearEnv clears.
func clearMeterEnv(t *testing.T) {
	clearEnv(t)
	for _, k := range []string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_METRICS_EXPORTER", "HARNESSX_METRICS_FILE",
		"OTEL_METRIC_EXPORT_INTERVAL", "OTEL_EXPORTER_OTLP_METRICS_HEADERS"} {
		t.Setenv(k, "")
	}
}

// metricsReceiver is a loopback OTLP/HTTP receiver of protobuf metrics.
type metricsReceiver struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []*colmetricpb.ExportMetricsServiceRequest
	hdrs []http.Header
}

func newMetricsReceiver(t *testing.T) *metricsReceiver {
	r := &metricsReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var m colmetricpb.ExportMetricsServiceRequest
		if req.URL.Path != "/v1/metrics" || proto.Unmarshal(body, &m) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.reqs = append(r.reqs, &m)
		r.hdrs = append(r.hdrs, req.Header.Clone())
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&colmetricpb.ExportMetricsServiceResponse{})
		_, _ = w.Write(out)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *metricsReceiver) names() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]string{} // metric name → service.name
	for _, req := range r.reqs {
		for _, rm := range req.ResourceMetrics {
			svc := ""
			for _, kv := range rm.Resource.GetAttributes() {
				if kv.Key == "service.name" {
					svc = kv.Value.GetStringValue()
				}
			}
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					out[m.Name] = svc
				}
			}
		}
	}
	return out
}

// runWithMetrics runs one scripted, traced run with metrics into mp.
func runWithMetrics(t *testing.T, mp metric.MeterProvider, tp *sdktrace.TracerProvider) {
	t.Helper()
	p := harnesstest.NewScriptedProvider(harnesstest.Response{Text: "hi",
		Usage: harness.Usage{InputTokens: 100, OutputTokens: 7, CacheReadInputTokens: 80}})
	opts := []tracing.Option{tracing.WithMeterProvider(mp)}
	if tp != nil {
		opts = append(opts, tracing.WithTracerProvider(tp))
	}
	a, err := harness.New(harness.WithProvider(p), harness.WithModel("m"), harness.WithExtensions(tracing.New(opts...)))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	if _, err := a.Run(context.Background(), "hello"); err != nil {
		t.Fatal(err)
	}
}

func TestNewOTLPMeters(t *testing.T) {
	clearMeterEnv(t)
	recv := newMetricsReceiver(t)
	ctx := context.Background()
	mp, err := exporters.NewOTLPMeters(ctx, exporters.WithMetricsEndpointURL(recv.srv.URL+"/v1/metrics"),
		exporters.WithServiceName("metrics-test"), exporters.WithHeaders(map[string]string{"X-Team": "agents"}))
	if err != nil {
		t.Fatal(err)
	}
	runWithMetrics(t, mp, nil)
	if err := mp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := mp.Shutdown(ctx); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}
	got := recv.names()
	for _, name := range []string{"gen_ai.client.token.usage", "gen_ai.client.operation.duration",
		tracing.MetricTokenDetail, tracing.MetricRunDuration} {
		if svc, ok := got[name]; !ok || svc != "metrics-test" {
			t.Errorf("metric %s: received %v with service.name %q; got %v", name, ok, svc, got)
		}
	}
	recv.mu.Lock()
	if len(recv.hdrs) == 0 || recv.hdrs[0].Get("X-Team") != "agents" {
		t.Errorf("headers not sent: %v", recv.hdrs)
	}
	recv.mu.Unlock()
}

// TestFileMeters writes metrics with exemplars of a sampled span to the
// file backend and checks that each line is an OTLP/JSON export request
// with the exemplars' trace and span IDs in hex.
func TestFileMeters(t *testing.T) {
	clearMeterEnv(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sub", "metrics.jsonl")
	mp, err := exporters.NewFileMeters(ctx, exporters.WithMetricsFile(path))
	if err != nil {
		t.Fatal(err)
	}
	if b := mp.Backends(); len(b) != 1 || b[0].Name != "file" || b[0].Target != path {
		t.Fatalf("backends %+v", b)
	}
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(ctx)
	runWithMetrics(t, mp, tp)
	if err := mp.ForceFlush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := mp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v, want 0600", fi.Mode().Perm())
	}
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) < 1 {
		t.Fatal("no lines")
	}
	sawExemplar := false
	for i, line := range lines {
		var v struct {
			ResourceMetrics []struct {
				ScopeMetrics []struct {
					Metrics []struct {
						Name      string
						Histogram *struct {
							DataPoints []struct {
								Exemplars []struct{ TraceID, SpanID string } `json:"exemplars"`
							} `json:"dataPoints"`
							AggregationTemporality int `json:"aggregationTemporality"`
						} `json:"histogram"`
					} `json:"metrics"`
				} `json:"scopeMetrics"`
			} `json:"resourceMetrics"`
		}
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		for _, rm := range v.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					if m.Histogram == nil {
						continue
					}
					if m.Histogram.AggregationTemporality != 2 {
						t.Errorf("%s: aggregationTemporality %d, want the enum number 2 (cumulative)", m.Name, m.Histogram.AggregationTemporality)
					}
					for _, dp := range m.Histogram.DataPoints {
						for _, ex := range dp.Exemplars {
							sawExemplar = true
							if b, err := hex.DecodeString(ex.TraceID); err != nil || len(b) != 16 {
								t.Errorf("%s: exemplar traceId %q is not 16 bytes of hex", m.Name, ex.TraceID)
							}
							if b, err := hex.DecodeString(ex.SpanID); err != nil || len(b) != 8 {
								t.Errorf("%s: exemplar spanId %q is not 8 bytes of hex", m.Name, ex.SpanID)
							}
						}
					}
				}
			}
		}
		// Apart from the hex IDs, the line is protojson's OTLP.
		var req colmetricpb.ExportMetricsServiceRequest
		if err := protojson.Unmarshal([]byte(line), &req); err != nil {
			t.Fatalf("line %d is not an ExportMetricsServiceRequest: %v", i+1, err)
		}
		if len(req.ResourceMetrics) == 0 {
			t.Errorf("line %d has no metrics", i+1)
		}
	}
	if !sawExemplar {
		t.Error("no exemplar written: the run's metrics were recorded under sampled spans")
	}
}

func TestFileMetersWriterAndStdout(t *testing.T) {
	clearMeterEnv(t)
	ctx := context.Background()
	var file, out bytes.Buffer
	mp, err := exporters.MetersFromEnv(ctx, exporters.WithMetricsFileWriter(&file), exporters.WithStdoutWriter(&out),
		exporters.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	runWithMetrics(t, mp, nil)
	if err := mp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	written := file.String()
	sc := bufio.NewScanner(strings.NewReader(written))
	n := 0
	for sc.Scan() {
		var req colmetricpb.ExportMetricsServiceRequest
		if err := protojson.Unmarshal(sc.Bytes(), &req); err != nil {
			t.Fatalf("file line: %v", err)
		}
		n++
	}
	if n == 0 || !strings.Contains(written, `"gen_ai.client.token.usage"`) {
		t.Errorf("file writer got %d lines: %.200s", n, written)
	}
	if !strings.Contains(out.String(), "gen_ai.client.token.usage") {
		t.Errorf("stdout writer got %.200s", out.String())
	}
}

func TestMetersFromEnvSelects(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    []exporters.Backend // "{DIR}" in a target is the working directory
		wantErr error
	}{
		{name: "nothing named: the default file",
			want: []exporters.Backend{{Name: "file", Target: "{DIR}/.harnessx/metrics.jsonl"}}},
		{name: "OTLP base endpoint",
			env:  map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318/"},
			want: []exporters.Backend{{Name: "otlp", Target: "http://127.0.0.1:4318/v1/metrics"}}},
		{name: "OTLP metrics endpoint wins and is used as is",
			env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318",
				"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://127.0.0.1:9999/m"},
			want: []exporters.Backend{{Name: "otlp", Target: "http://127.0.0.1:9999/m"}}},
		{name: "OTLP and a file",
			env: map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://127.0.0.1:9999/m",
				"HARNESSX_METRICS_FILE": "out/m.jsonl"},
			want: []exporters.Backend{{Name: "otlp", Target: "http://127.0.0.1:9999/m"}, {Name: "file", Target: "{DIR}/out/m.jsonl"}}},
		{name: "OTEL_METRICS_EXPORTER chooses",
			env:  map[string]string{"OTEL_METRICS_EXPORTER": "console, file", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"},
			want: []exporters.Backend{{Name: "stdout", Target: "stdout"}, {Name: "file", Target: "{DIR}/.harnessx/metrics.jsonl"}}},
		{name: "OTEL_METRICS_EXPORTER none",
			env:  map[string]string{"OTEL_METRICS_EXPORTER": "none"},
			want: []exporters.Backend{}},
		{name: "OTEL_METRICS_EXPORTER prometheus is not built in",
			env:     map[string]string{"OTEL_METRICS_EXPORTER": "prometheus"},
			wantErr: exporters.ErrUnknownExporter},
		{name: "bad endpoint",
			env:     map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "localhost:4318"},
			wantErr: exporters.ErrInvalidEndpoint},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearMeterEnv(t)
			t.Chdir(t.TempDir())
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			ctx := context.Background()
			mp, err := exporters.MetersFromEnv(ctx, exporters.WithLogger(slog.New(slog.DiscardHandler)))
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer mp.Shutdown(ctx)
			wd, _ := os.Getwd()
			got := mp.Backends()
			if len(got) != len(tt.want) {
				t.Fatalf("backends %+v, want %+v", got, tt.want)
			}
			for i, w := range tt.want {
				if w.Name == "file" {
					w.Target = filepath.Join(wd, w.Target[len("{DIR}/"):])
				}
				if got[i] != w {
					t.Errorf("backend %d = %+v, want %+v", i, got[i], w)
				}
			}
		})
	}
}
