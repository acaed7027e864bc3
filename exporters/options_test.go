package exporters_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdkresource "go.opentelemetry.io/otel/sdk/resource"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/harnessx/harnessx/exporters"
)

// TestOptionsApplyAsDocumented gives every option to every builder: a
// builder the package doc's table marks takes it; any other fails with an
// error that matches ErrOptionNotApplicable and names the builder, the
// option and the builders it applies to.
func TestOptionsApplyAsDocumented(t *testing.T) {
	clearEnv(t)
	for _, k := range []string{"OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "HARNESSX_METRICS_FILE", "HARNESSX_TAIL_SAMPLING"} {
		t.Setenv(k, "")
	}
	table := docTable(t)
	t.Chdir(t.TempDir()) // FromEnv and MetersFromEnv default to files under .harnessx
	dir := t.TempDir()
	quiet := slog.New(slog.DiscardHandler)
	options := map[string]func() exporters.Option{
		"WithServiceName":           func() exporters.Option { return exporters.WithServiceName("svc") },
		"WithResource":              func() exporters.Option { return exporters.WithResource(sdkresource.Empty()) },
		"WithLogger":                func() exporters.Option { return exporters.WithLogger(quiet) },
		"WithExportTimeout":         func() exporters.Option { return exporters.WithExportTimeout(time.Second) },
		"WithQueueSize":             func() exporters.Option { return exporters.WithQueueSize(16) },
		"WithBatchSize":             func() exporters.Option { return exporters.WithBatchSize(8) },
		"WithBatchTimeout":          func() exporters.Option { return exporters.WithBatchTimeout(time.Second) },
		"WithSpanProcessor":         func() exporters.Option { return exporters.WithSpanProcessor(tracetest.NewSpanRecorder()) },
		"WithIDGenerator":           func() exporters.Option { return exporters.WithIDGenerator(nil) },
		"WithTracerProviderOptions": func() exporters.Option { return exporters.WithTracerProviderOptions() },
		"WithTailSampling":          func() exporters.Option { return exporters.WithTailSampling() },
		"WithEndpointURL":           func() exporters.Option { return exporters.WithEndpointURL("http://127.0.0.1:1/v1/traces") },
		"WithHeaders":               func() exporters.Option { return exporters.WithHeaders(map[string]string{"x-k": "v"}) },
		"WithHTTPClient":            func() exporters.Option { return exporters.WithHTTPClient(&http.Client{}) },
		"WithLangSmithEndpoint":     func() exporters.Option { return exporters.WithLangSmithEndpoint("http://127.0.0.1:1") },
		"WithAPIKey":                func() exporters.Option { return exporters.WithAPIKey("lsv2_test") },
		"WithProject":               func() exporters.Option { return exporters.WithProject("p") },
		"WithFile":                  func() exporters.Option { return exporters.WithFile(filepath.Join(dir, "traces.jsonl")) },
		"WithFileWriter":            func() exporters.Option { return exporters.WithFileWriter(io.Discard) },
		"WithStdoutWriter":          func() exporters.Option { return exporters.WithStdoutWriter(io.Discard) },
		"WithPrettyPrint":           func() exporters.Option { return exporters.WithPrettyPrint() },
		"WithMetricsEndpointURL":    func() exporters.Option { return exporters.WithMetricsEndpointURL("http://127.0.0.1:1/v1/metrics") },
		"WithMetricsFile":           func() exporters.Option { return exporters.WithMetricsFile(filepath.Join(dir, "metrics.jsonl")) },
		"WithMetricsFileWriter":     func() exporters.Option { return exporters.WithMetricsFileWriter(io.Discard) },
		"WithMetricInterval":        func() exporters.Option { return exporters.WithMetricInterval(time.Minute) },
		"WithMetricReader":          func() exporters.Option { return exporters.WithMetricReader(sdkmetric.NewManualReader()) },
		"WithMeterProviderOptions":  func() exporters.Option { return exporters.WithMeterProviderOptions() },
	}
	type shutdowner interface{ Shutdown(context.Context) error }
	span := func(f func(context.Context, ...exporters.Option) (*exporters.Provider, error)) func(context.Context, ...exporters.Option) (shutdowner, error) {
		return func(ctx context.Context, o ...exporters.Option) (shutdowner, error) {
			p, err := f(ctx, o...)
			if p == nil {
				return nil, err
			}
			return p, err
		}
	}
	meter := func(f func(context.Context, ...exporters.Option) (*exporters.MeterProvider, error)) func(context.Context, ...exporters.Option) (shutdowner, error) {
		return func(ctx context.Context, o ...exporters.Option) (shutdowner, error) {
			p, err := f(ctx, o...)
			if p == nil {
				return nil, err
			}
			return p, err
		}
	}
	// In the order of the table's columns.
	builders := []struct {
		name  string
		build func(context.Context, ...exporters.Option) (shutdowner, error)
	}{
		{"NewOTLP", span(exporters.NewOTLP)}, {"NewLangSmith", span(exporters.NewLangSmith)}, {"NewFile", span(exporters.NewFile)},
		{"NewStdout", span(exporters.NewStdout)}, {"FromEnv", span(exporters.FromEnv)},
		{"NewOTLPMeters", meter(exporters.NewOTLPMeters)}, {"NewFileMeters", meter(exporters.NewFileMeters)},
		{"NewStdoutMeters", meter(exporters.NewStdoutMeters)}, {"MetersFromEnv", meter(exporters.MetersFromEnv)},
	}

	if len(table) != len(options) {
		t.Errorf("the doc's table has %d options, the test %d", len(table), len(options))
	}
	ctx := context.Background()
	for name, marks := range table {
		opt, ok := options[name]
		if !ok {
			t.Errorf("the doc's table lists %s, which the test does not know", name)
			continue
		}
		var appliesTo []string
		for i, m := range marks {
			if m == "x" {
				appliesTo = append(appliesTo, builders[i].name)
			}
		}
		for i, b := range builders {
			// LangSmith needs a key, given by an option of its own.
			opts := []exporters.Option{opt()}
			if b.name == "NewLangSmith" && name != "WithAPIKey" {
				opts = append(opts, exporters.WithAPIKey("lsv2_test"))
			}
			p, err := b.build(ctx, opts...)
			if p != nil {
				_ = p.Shutdown(ctx)
			}
			if marks[i] == "x" {
				if err != nil {
					t.Errorf("%s(%s): %v", b.name, name, err)
				}
				continue
			}
			want := "exporters: " + b.name + ": " + name + " does not apply to it (it applies to " + strings.Join(appliesTo, ", ") + ")"
			if !errors.Is(err, exporters.ErrOptionNotApplicable) || err.Error() != want {
				t.Errorf("%s(%s): err %v, want %q", b.name, name, err, want)
			}
		}
	}

	// Two mistakes at once are both named.
	_, err := exporters.NewOTLP(ctx, exporters.WithFile("x"), exporters.WithMetricInterval(time.Second))
	if err == nil || !strings.Contains(err.Error(), "WithFile") || !strings.Contains(err.Error(), "WithMetricInterval") {
		t.Errorf("two wrong options: %v", err)
	}
}

// docTable reads the options table of the package doc: option name to
// its nine marks, "x" or "-".
func docTable(t *testing.T) map[string][]string {
	t.Helper()
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	for _, l := range strings.Split(string(src), "\n") {
		f := strings.Fields(strings.TrimPrefix(l, "//\t"))
		if !strings.HasPrefix(l, "//\tWith") {
			continue
		}
		if len(f) != 10 {
			t.Fatalf("doc.go: bad table row %q", l)
		}
		rows[f[0]] = f[1:]
	}
	return rows
}
