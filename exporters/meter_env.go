package exporters

import (
	"context"
	"log/slog"
	"os"
	"strings"
)

// MetersFromEnv returns a meter provider that sends metrics to every
// backend the environment (or the options) names, several at once, as
// [FromEnv] does for spans:
//
//   - OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT or
//     OTEL_EXPORTER_OTLP_METRICS_ENDPOINT is set, or
//     [WithMetricsEndpointURL] is given (see [NewOTLPMeters]);
//   - the JSON-lines file when HARNESSX_METRICS_FILE is set, or
//     [WithMetricsFile] or [WithMetricsFileWriter] is given (see
//     [NewFileMeters]);
//   - stdout when [WithStdoutWriter] is given (see [NewStdoutMeters]).
//
// When none is named, metrics go to the file .harnessx/metrics.jsonl (the
// offline default).
//
// OTEL_METRICS_EXPORTER, when set, chooses instead: a comma-separated list
// of "otlp", "file", "console" (or "stdout") and "none" (no backend:
// nothing is exported, though readers given with [WithMetricReader] still
// read). "prometheus" and other names are [ErrUnknownExporter]: for
// Prometheus, send OTLP to the collector of docker-compose.otel.yml, which
// serves the metrics for Prometheus to scrape.
//
// It logs one line per backend at Info level through the [WithLogger]
// logger (default slog.Default()) saying where the metrics go.
// OTEL_METRIC_EXPORT_INTERVAL and OTEL_METRIC_EXPORT_TIMEOUT are honoured
// by the SDK's periodic readers ([WithMetricInterval] wins over the
// first; the timeout is [WithExportTimeout], default 10s).
func MetersFromEnv(ctx context.Context, opts ...Option) (*MeterProvider, error) {
	c, err := newConfig(bMetersFromEnv, opts)
	if err != nil {
		return nil, err
	}
	names, err := selectMeterBackends(&c)
	if err != nil {
		return nil, err
	}
	specs, err := buildAll(names, func(name string) (meterSpec, error) {
		switch name {
		case "otlp":
			return otlpMeterBackend(ctx, &c)
		case "file":
			return fileMeterBackend(ctx, &c)
		default:
			return stdoutMeterBackend(&c)
		}
	}, func(s meterSpec) error { return s.exporter.Shutdown(ctx) })
	if err != nil {
		return nil, err
	}
	p, err := newMeterProvider(ctx, &c, specs)
	if err != nil {
		return nil, err
	}
	announceMeters(c.logger, p.Backends())
	return p, nil
}

func announceMeters(l *slog.Logger, backends []Backend) {
	if len(backends) == 0 {
		l.Info("exporters: metrics are not exported (OTEL_METRICS_EXPORTER=none)")
		return
	}
	for _, b := range backends {
		switch b.Name {
		case "file":
			l.Info("exporters: metrics go to a local file (OTLP/JSON lines)", "file", b.Target)
		case "otlp":
			l.Info("exporters: metrics go to an OTLP/HTTP endpoint", "url", b.Target)
		default:
			l.Info("exporters: metrics go to "+b.Name, "target", b.Target)
		}
	}
}

// selectMeterBackends returns the backends MetersFromEnv builds, in a
// fixed order.
func selectMeterBackends(c *config) ([]string, error) {
	if v := strings.TrimSpace(os.Getenv("OTEL_METRICS_EXPORTER")); v != "" {
		return exporterList("OTEL_METRICS_EXPORTER", v, "otlp", "file", "stdout")
	}
	var names []string
	if c.meter.endpoint != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") != "" {
		names = append(names, "otlp")
	}
	if c.meter.filePath != "" || c.meter.writer != nil || strings.TrimSpace(os.Getenv("HARNESSX_METRICS_FILE")) != "" {
		names = append(names, "file")
	}
	if c.stdoutWriter != nil {
		names = append(names, "stdout")
	}
	if len(names) == 0 {
		names = append(names, "file")
	}
	return names, nil
}
